/**
 * The `cancel` directive (README.md): a deadline for each query, `TIMEOUT` after it reaches the
 * plugin (5001 ms by default), in `q.deadline`; plugins that wait honour it (forward).
 */
import { performance } from 'node:perf_hooks';
import { directive, str } from '../../src/corefile/options.js';
import { nextOrFailure, type Handler, type PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { DurationError, parseGoDurationNs } from '../../src/util/duration.js';

export const CANCEL_OPTIONS = directive('cancel', { args: { args: [str('TIMEOUT')], min: 0 } });

class CancelHandler implements Handler {
  readonly name = 'cancel';
  constructor(
    private readonly timeoutMs: number,
    private readonly next: Handler | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    const d = performance.now() + this.timeoutMs;
    if (d < q.deadline) q.deadline = d;
    return nextOrFailure(this.name, this.next, q);
  }
}

export const cancel: PluginDef = {
  name: 'cancel',
  repeat: 'all',
  options: CANCEL_OPTIONS,
  setup(d) {
    let timeoutMs = 5001;
    // Every occurrence is read; the last one's timeout applies (as CoreDNS).
    while (d.next()) {
      const args = d.remainingArgs();
      if (args.length === 0) {
        timeoutMs = 5001;
      } else if (args.length === 1) {
        const a = args[0]!;
        let ns: number;
        try {
          ns = parseGoDurationNs(a);
        } catch (e) {
          if (e instanceof DurationError) throw d.err(`invalid duration: ${JSON.stringify(a)}`);
          throw e;
        }
        if (ns <= 0) throw d.err(`invalid negative duration: ${JSON.stringify(a)}`);
        timeoutMs = ns / 1e6;
      } else {
        throw d.argErr();
      }
    }
    return (next) => new CancelHandler(timeoutMs, next);
  },
};
