/**
 * shadow: compare clusterdns's replies with a reference server's (the cluster's CoreDNS) on a
 * sample of the real traffic, without touching the client's answer (plugins/shadow/README.md).
 */
import { qtypeName, Rcode } from '../../src/dns/constants.js';
import { differenceKinds, renderDiff } from '../../src/dnscompare/index.js';
import type { ParsedRequest } from '../../src/dns/wire.js';
import type { Logger } from '../../src/log.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import { comparePlan, compareShadow, type ComparePlan } from './compare.js';
import { ShadowClient, type ExchangeHooks, type FailReason, type ShadowResult } from './exchange.js';
import { Sampler, ShadowHandler } from './handler.js';
import { shadowMetrics } from './metrics.js';
import { parseShadow, SHADOW_OPTIONS, type Reference, type ShadowConfig } from './setup.js';

/** Longest log entry for one differing reply; the rest is cut (a reply of any size stays one bounded entry). */
const MAX_LOG_CHARS = 4000;

/** At most `count` lines per `windowMs`; the number left out is reported with the next line logged. */
export class LogLimiter {
  private windowStart = -Infinity;
  private used = 0;
  private suppressed = 0;

  constructor(
    private readonly count: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Returns the text to prepend (a note about suppressed lines, maybe empty), or null: do not log. */
  take(): string | null {
    if (this.count === 0) return null;
    const t = this.now();
    if (t - this.windowStart >= this.windowMs) {
      this.windowStart = t;
      this.used = 0;
    }
    if (this.used >= this.count) {
      this.suppressed++;
      return null;
    }
    this.used++;
    const note = this.suppressed > 0 ? `(${this.suppressed} more not logged) ` : '';
    this.suppressed = 0;
    return note;
  }
}

function clip(text: string): string {
  return text.length <= MAX_LOG_CHARS
    ? text
    : `${text.slice(0, MAX_LOG_CHARS)}\n  … (${text.length - MAX_LOG_CHARS} more characters)`;
}

/** What happens to each settled exchange: counters, and the rate-limited log. */
export function makeHooks(cfg: ShadowConfig, plan: () => ComparePlan, log: Logger): ExchangeHooks {
  const metrics = shadowMetrics();
  const mismatchLog = new LogLimiter(cfg.logCount, cfg.logWindowMs);
  const errorLog = new LogLimiter(cfg.logCount, cfg.logWindowMs);
  const fail = (reason: FailReason, label: string, what: string, detail: string): void => {
    metrics.referenceErrors.inc({ reason });
    if (reason === 'aborted') return; // a reload or shutdown, not the reference's doing: not logged
    const note = errorLog.take();
    if (note !== null) log.warning(`${note}reference ${label}: ${reason} for ${what}: ${clip(detail)}`);
  };
  // These run from socket and timer callbacks, where an exception would end the process: none
  // may escape (dnscompare never throws; this is the belt to its braces).
  const internalLog = new LogLimiter(1, 60_000);
  const guard =
    <A extends unknown[]>(fn: (...args: A) => void) =>
    (...args: A): void => {
      try {
        fn(...args);
      } catch (e) {
        const note = internalLog.take();
        if (note !== null) log.error(`${note}comparison failed: ${(e as Error)?.stack ?? String(e)}`);
      }
    };
  return {
    sent: () => metrics.queriesCell.inc(),
    unexpected: () => metrics.unexpected.inc(),
    failed: guard((reason: FailReason, ref: Reference, req: ParsedRequest, detail: string) =>
      fail(reason, ref.label, `${req.name} ${qtypeName(req.qtype)}`, detail),
    ),
    reply: guard((r: ShadowResult) => {
      const what = `${r.req.name} ${qtypeName(r.req.qtype)}`;
      const c = compareShadow(plan(), r.query, r.theirs, r.ours);
      // A reference reply that does not parse is the reference's fault, not a mismatch.
      const broken = c.differences.find((d) => d.kind === 'malformed' && d.side === 'reference');
      if (broken) {
        fail('malformed', r.reference.label, what, broken.detail);
        return;
      }
      metrics.comparedCell.inc();
      if (c.tolerated.length > 0) {
        const byKind = new Map<string, number>();
        for (const t of c.tolerated) byKind.set(t.difference.kind, (byKind.get(t.difference.kind) ?? 0) + 1);
        for (const [kind, n] of byKind) metrics.tolerated.inc({ kind }, n);
      }
      if (c.differences.length === 0) return;
      metrics.differing.inc();
      const kinds = differenceKinds(c);
      for (const k of kinds) metrics.mismatches.inc({ kind: k });
      const note = mismatchLog.take();
      if (note === null) return;
      const body = renderDiff(c)
        .split('\n')
        .map((l) => `  ${l}`)
        .join('\n');
      log.warning(
        clip(`${note}reply differs from reference ${r.reference.label} for ${what} (${kinds.join(', ')}):\n${body}`),
      );
    }),
  };
}

export const shadow: PluginDef = {
  name: 'shadow',
  repeat: 'error',
  options: SHADOW_OPTIONS,
  setup(d, ctx) {
    const cfg = parseShadow(d);
    if (cfg.fraction === 0) {
      // Nothing is sampled: stay out of the chain.
      return (next: Handler | null): Handler =>
        next ?? {
          name: 'shadow',
          serve: (q) => q.fail(new Error('plugin/shadow: no next plugin found'), Rcode.SERVFAIL),
        };
    }
    // The block's plugin list is complete only after every setup ran: the factory builds the plan,
    // before any query reaches the handler and so before any comparison needs it.
    let plan: ComparePlan | null = null;
    const builtPlan = (): ComparePlan => {
      if (plan === null) throw new Error('plugin/shadow: comparison before the chain was built');
      return plan;
    };
    const client = new ShadowClient(cfg, makeHooks(cfg, builtPlan, ctx.log));
    ctx.onStartup(() => client.start(ctx.log));
    ctx.onShutdown(() => client.stop());
    const errorLog = new LogLimiter(1, 60_000);
    const onCaptureError = (e: unknown): void => {
      const note = errorLog.take();
      if (note !== null)
        ctx.log.error(`${note}cannot copy a query for the reference: ${(e as Error)?.message ?? String(e)}`);
    };
    const sampler = new Sampler(cfg.fraction);
    return (next, block) => {
      plan = comparePlan(cfg.ignore, block.handlerPlugins);
      return new ShadowHandler(next, sampler, client, onCaptureError);
    };
  },
};
