/**
 * errors: logs the error returned by the rest of the chain as
 * `[ERROR] plugin/errors: <rcode> <qname> <qtype>: <error>`, optionally consolidating errors that
 * match a pattern into one line per period (docs/plugins.md, errors).
 */
import { qtypeName, Rcode } from '../../src/dns/constants.js';
import type { Level } from '../../src/log.js';
import type { Handler, PluginDef, SetupContext } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { formatGoDuration, parseGoDuration } from '../../src/util/duration.js';

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
  constructor(
    private readonly next: Handler | null,
    private readonly rules: ConsolidateRule[],
    private readonly ctx: SetupContext,
    private readonly stacktrace: boolean,
  ) {}

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
        if (rule.showFirst) this.ctx.log.raw(rule.level, `plugin/errors: ${line}`);
        rule.timer = setTimeout(() => this.flush(rule), rule.periodMs);
        rule.timer.unref();
      }
      return;
    }
    this.ctx.log.error(line);
  }

  flush(rule: ConsolidateRule): void {
    if (rule.timer) clearTimeout(rule.timer);
    rule.timer = null;
    const n = rule.count;
    rule.count = 0;
    if (n === 0 || (rule.showFirst && n <= 1)) return;
    this.ctx.log.raw(rule.level, `plugin/errors: ${n} errors like '${rule.source}' occurred in last ${formatGoDuration(rule.periodMs)}`);
  }
}

export const errors: PluginDef = {
  name: 'errors',
  repeat: 'error',
  setup(d, ctx) {
    const rules: ConsolidateRule[] = [];
    let stacktrace = false;
    while (d.next()) {
      const args = d.remainingArgs();
      if (args.length > 1) throw d.argErr();
      if (args.length === 1 && args[0] !== 'stdout') throw d.err(`invalid log file: ${args[0]}`);
      while (d.nextBlock()) {
        switch (d.val()) {
          case 'stacktrace':
            if (d.nextArg()) throw d.argErr();
            stacktrace = true;
            break;
          case 'consolidate': {
            const a = d.remainingArgs();
            if (a.length < 2 || a.length > 4) throw d.argErr();
            let periodMs: number;
            try {
              periodMs = parseGoDuration(a[0]!);
            } catch (e) {
              throw d.err((e as Error).message);
            }
            if (a[1]!.length > 10000) throw d.err(`regex length ${a[1]!.length} exceeds 10000`);
            let pattern: RegExp;
            try {
              pattern = new RegExp(a[1]!);
            } catch (e) {
              throw d.err((e as Error).message);
            }
            let level: Level = 'ERROR';
            let showFirst = false;
            // `[LEVEL] [show_first]`: at most one level, and it must come first.
            const extra = a.slice(2);
            if (extra[extra.length - 1] === 'show_first') {
              showFirst = true;
              extra.pop();
            }
            if (extra.length > 1) throw d.err(`expected 'show_first', got '${extra[1]}'`);
            if (extra.length === 1) {
              const l = LEVELS[extra[0]!];
              if (!l) throw d.err(`unknown log level argument in consolidate: ${extra[0]}`);
              level = l;
            }
            rules.push({ periodMs, pattern, source: a[1]!, level, showFirst, count: 0, timer: null });
            break;
          }
          default:
            throw d.err(`Unknown field ${d.val()}`);
        }
      }
    }
    let handler: ErrorsHandler | null = null;
    // Pending consolidated summaries are printed when the configuration is replaced or the process stops.
    ctx.onShutdown(() => {
      if (handler) for (const r of rules) handler.flush(r);
    });
    return (next) => (handler = new ErrorsHandler(next, rules, ctx, stacktrace));
  },
};
