/**
 * The integer-limit blocks of the transport directives `https`, `https3` and `quic` (CoreDNS's
 * parseDOH / parseDOH3 / parseQuic): no arguments on the directive line, each option one integer
 * given at most once, worded as CoreDNS words its errors. One parser, since the three differ only
 * in their option names and bounds.
 */
import type { Dispenser } from './dispenser.js';

export interface LimitOption {
  readonly name: string;
  /** 0: `must be a non-negative integer`; 1: `must be a positive integer`. */
  readonly min: 0 | 1;
  /** Upper bound (`max_streams` of `https`: a uint32). */
  readonly max?: number;
}

/** Parse the first occurrence of the directive at `d` (later ones are ignored, as in CoreDNS). */
export function parseLimitBlock(d: Dispenser, options: readonly LimitOption[]): Map<string, number> {
  const out = new Map<string, number>();
  d.next();
  if (d.remainingArgs().length > 0) throw d.argErr();
  while (d.nextBlock()) {
    const name = d.val();
    const opt = options.find((o) => o.name === name);
    if (!opt) throw d.err(`unknown property '${name}'`);
    const args = d.remainingArgs();
    if (args.length !== 1) throw d.argErr();
    const arg = args[0]!;
    const v = Number(arg);
    if (!/^[+-]?\d+$/.test(arg) || !Number.isSafeInteger(v)) {
      const why = /^[+-]?\d+$/.test(arg) ? 'value out of range' : 'invalid syntax';
      throw d.err(`invalid ${name} value '${arg}': strconv.Atoi: parsing ${JSON.stringify(arg)}: ${why}`);
    }
    if (opt.min === 1 && v <= 0) throw d.err(`${name} must be a positive integer: ${v}`);
    if (opt.min === 0 && v < 0) throw d.err(`${name} must be a non-negative integer: ${v}`);
    if (opt.max !== undefined && v > opt.max) throw d.err(`${name} must not exceed ${opt.max}: ${v}`);
    if (out.has(name)) throw d.err(`${name} already defined for this server block`);
    out.set(name, v);
  }
  return out;
}
