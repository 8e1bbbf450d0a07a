/** Parsing `erratic { drop [AMOUNT]; truncate [AMOUNT]; delay [AMOUNT [DURATION]] }` as CoreDNS 1.15.0 does. */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, duration, int, option } from '../../src/corefile/options.js';
import { BareSetupError } from '../../src/corefile/types.js';
import { DurationError, parseGoDuration } from '../../src/util/duration.js';

export const ERRATIC_OPTIONS = directive('erratic', {
  args: { max: 0 },
  options: [
    option('drop', {
      args: [int({ meta: 'AMOUNT', min: 0 })],
      min: 0,
      summary: 'drop 1 per AMOUNT queries (default 2)',
    }),
    option('truncate', {
      args: [int({ meta: 'AMOUNT', min: 0 })],
      min: 0,
      summary: 'truncate 1 per AMOUNT queries (default 2)',
    }),
    option('delay', {
      args: [int({ meta: 'AMOUNT', min: 0 }), duration()],
      min: 0,
      summary: 'delay 1 per AMOUNT queries (default 2) for DURATION (default 100ms)',
    }),
  ],
});

export interface ErraticConfig {
  /** 1 per `drop` queries is dropped (0: none). */
  drop: number;
  delay: number;
  truncate: number;
  /** The delay, in milliseconds. */
  delayMs: number;
  /** CoreDNS's undocumented `large`: 30 A records per A answer (to test compression). */
  large: boolean;
}

/** Go's strconv.ParseInt(s, 10, 32), with its error text. */
function parseInt32(s: string): number {
  if (!/^[+-]?\d+$/.test(s)) throw new Error(`strconv.ParseInt: parsing ${JSON.stringify(s)}: invalid syntax`);
  const n = Number(s);
  if (n > 2 ** 31 - 1 || n < -(2 ** 31))
    throw new Error(`strconv.ParseInt: parsing ${JSON.stringify(s)}: value out of range`);
  return n;
}

/**
 * Every occurrence, token for token as CoreDNS's parseErratic. Its number and duration errors are
 * returned without a location (`plugin/erratic: strconv.ParseInt: …`, `illegal amount value
 * given "-1"`, `time: invalid duration "x"`); argument count and unknown properties have one.
 */
export function parseErratic(d: Dispenser): ErraticConfig {
  const e: ErraticConfig = { drop: 2, delay: 0, truncate: 0, delayMs: 0, large: false };
  let drop = false; // a `drop` line with an amount was seen
  const bare = (msg: string): BareSetupError => new BareSetupError(msg, d.file(), d.line(), 'erratic');
  const amount = (s: string): number => {
    let n: number;
    try {
      n = parseInt32(s);
    } catch (err) {
      throw bare((err as Error).message);
    }
    if (n < 0) throw bare(`illegal amount value given ${JSON.stringify(s)}`);
    return n;
  };
  while (d.next()) {
    while (d.nextBlock()) {
      const kw = d.val();
      switch (kw) {
        case 'drop': {
          const args = d.remainingArgs();
          if (args.length > 1) throw d.argErr();
          if (args.length === 0) continue;
          e.drop = amount(args[0]!);
          drop = true;
          break;
        }
        case 'delay': {
          const args = d.remainingArgs();
          if (args.length > 2) throw d.argErr();
          e.delay = 2;
          e.delayMs = 100;
          if (args.length === 0) continue;
          e.delay = amount(args[0]!);
          if (args.length > 1) {
            try {
              e.delayMs = parseGoDuration(args[1]!);
            } catch (err) {
              if (err instanceof DurationError) throw bare(err.message);
              throw err;
            }
          }
          break;
        }
        case 'truncate': {
          const args = d.remainingArgs();
          if (args.length > 1) throw d.argErr();
          e.truncate = 2;
          if (args.length === 0) continue;
          e.truncate = amount(args[0]!);
          break;
        }
        case 'large':
          e.large = true;
          break;
        default:
          throw d.err(`unknown property '${kw}'`);
      }
    }
  }
  // Delay or truncate without an explicit drop amount: no dropping (CoreDNS removes the default).
  if ((e.delay > 0 || e.truncate > 0) && !drop) e.drop = 0;
  return e;
}
