/**
 * errors: logs the error returned by the rest of the chain as
 * `[ERROR] plugin/errors: <rcode> <qname> <qtype>: <error>`, optionally consolidating errors that
 * match a pattern into one line per period (docs/plugins.md, errors).
 */
import { qtypeName, Rcode } from '../../src/dns/constants.js';
import { queryLog, type Level, type Logger } from '../../src/log.js';
import type { Handler, PluginDef, SetupContext } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import {
  directive,
  duration,
  option,
  parseOccurrence,
  str,
  type ParsedOccurrence,
  type ParsedOption,
} from '../../src/corefile/options.js';
import { formatGoDuration } from '../../src/util/duration.js';

interface ConsolidateRule {
  readonly periodMs: number;
  readonly pattern: RegExp;
  readonly source: string;
  readonly level: Level;
  readonly showFirst: boolean;
  count: number;
  timer: NodeJS.Timeout | null;
}

const LEVELS: Record<string, Level> = { warning: 'WARNING', error: 'ERROR', info: 'INFO', debug: 'DEBUG' };

class ErrorsHandler implements Handler {
  readonly name = 'errors';
  /** Its lines are about queries: a query thread writes them even while it reloads. */
  private readonly log: Logger;
  constructor(
    private readonly next: Handler | null,
    private readonly rules: ConsolidateRule[],
    ctx: SetupContext,
    private readonly stacktrace: boolean,
  ) {
    this.log = queryLog(ctx.log);
  }

  serve(q: Query): number | Promise<number> {
    if (!this.next) {
      this.report(q, Rcode.SERVFAIL, new Error('plugin/errors: no next plugin found'));
      return Rcode.SERVFAIL;
    }
    const r = this.next.serve(q);
    if (typeof r === 'number') {
      if (q.error) this.report(q, r, q.error);
      return r;
    }
    return r.then((rc) => {
      if (q.error) this.report(q, rc, q.error);
      return rc;
    });
  }

  private report(q: Query, rcode: number, err: Error): void {
    const line = `${rcode} ${q.lname} ${qtypeName(q.qtype)}: ${err.message}${this.stacktrace && err.stack ? `\n${err.stack}` : ''}`;
    for (const rule of this.rules) {
      if (!rule.pattern.test(err.message)) continue;
      rule.count++;
      if (rule.count === 1) {
        if (rule.showFirst) this.log.raw(rule.level, `plugin/errors: ${line}`);
        rule.timer = setTimeout(() => this.flush(rule), rule.periodMs);
        rule.timer.unref();
      }
      return;
    }
    this.log.error(line);
  }

  flush(rule: ConsolidateRule): void {
    if (rule.timer) clearTimeout(rule.timer);
    rule.timer = null;
    const n = rule.count;
    rule.count = 0;
    if (n === 0 || (rule.showFirst && n <= 1)) return;
    this.log.raw(
      rule.level,
      `plugin/errors: ${n} errors like '${rule.source}' occurred in last ${formatGoDuration(rule.periodMs)}`,
    );
  }
}

/** CoreDNS's errors plugin limit on a consolidate pattern. */
const MAX_REGEXP_LEN = 10_000;

function checkRegexp(v: string): string | null {
  if (v.length > MAX_REGEXP_LEN) return `regex pattern too long: ${v.length} > ${MAX_REGEXP_LEN}`;
  try {
    new RegExp(v);
  } catch (e) {
    return `error parsing regexp: ${(e as Error).message}: \`${v}\``;
  }
  return null;
}

export const ERRORS_OPTIONS = directive('errors', {
  args: { args: [str('stdout', (v) => (v === 'stdout' ? null : `invalid log file: ${v}`))], min: 0 },
  options: [
    option('stacktrace'),
    option('consolidate', {
      args: [duration(), str('REGEXP', checkRegexp)],
      rest: str('LEVEL|show_first'),
      max: 4,
      repeat: 'all',
    }),
  ],
  unknown: (name) => `Unknown field ${name}`,
});

/** `[LEVEL] [show_first]` after consolidate's REGEXP: at most one level, before show_first (CoreDNS's parseOptionalParams). */
function consolidateRule(occ: ParsedOccurrence, o: ParsedOption): ConsolidateRule {
  let level: Level | undefined;
  let showFirst = false;
  for (const arg of o.raw.slice(2)) {
    const l = LEVELS[arg];
    if (l && level) throw occ.error(o, 'multiple log levels specified in consolidate');
    if (l && showFirst) throw occ.error(o, 'log level must come before show_first in consolidate');
    if (l) level = l;
    else if (arg === 'show_first') showFirst = true;
    else throw occ.error(o, `unknown option in consolidate: ${arg}`);
  }
  return {
    periodMs: o.values[0] as number,
    pattern: new RegExp(o.raw[1]!),
    source: o.raw[1]!,
    level: level ?? 'ERROR',
    showFirst,
    count: 0,
    timer: null,
  };
}

export const errors: PluginDef = {
  name: 'errors',
  repeat: 'error',
  options: ERRORS_OPTIONS,
  setup(d, ctx) {
    d.next();
    const occ = parseOccurrence(d, ERRORS_OPTIONS);
    const stacktrace = occ.has('stacktrace');
    const rules = occ.all('consolidate').map((o) => consolidateRule(occ, o));
    let handler: ErrorsHandler | null = null;
    // Pending consolidated summaries are printed when the configuration is replaced or the process stops.
    ctx.onShutdown(() => {
      if (handler) for (const r of rules) handler.flush(r);
    });
    return (next) => (handler = new ErrorsHandler(next, rules, ctx, stacktrace));
  },
};
