/**
 * Go `time.Duration` syntax for Corefile DURATION arguments (docs/plugins.md, common conventions) and
 * Go's `Duration.String()` for log lines (`Going into lameduck mode for 5s`).
 *
 * `parseGoDuration` follows `time.ParseDuration` exactly, error texts included:
 * a sequence of decimal numbers (optional fraction) each with a unit `ns us µs μs ms s m h`,
 * optionally signed; `0` is the only number allowed without unit.
 * Values are returned in **milliseconds** (fractional below 1 ms).
 */

const UNIT_NS: ReadonlyMap<string, number> = new Map([
  ['ns', 1],
  ['us', 1e3],
  ['µs', 1e3], // U+00B5 micro sign
  ['μs', 1e3], // U+03BC Greek mu
  ['ms', 1e6],
  ['s', 1e9],
  ['m', 60e9],
  ['h', 3600e9],
]);

/** time.Duration is an int64 of nanoseconds. */
const MAX_DURATION_NS = 2 ** 63 - 1;

/** Go's `%q` for the ASCII strings found in Corefiles. */
function quote(s: string): string {
  return JSON.stringify(s);
}

/** Thrown with Go's `time:` error text. */
export class DurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DurationError';
  }
}

/** Nanoseconds of a Go duration string; throws DurationError with Go's message. */
export function parseGoDurationNs(text: string): number {
  const orig = text;
  let s = text;
  let neg = false;
  if (s !== '' && (s[0] === '-' || s[0] === '+')) {
    neg = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') throw new DurationError(`time: invalid duration ${quote(orig)}`);
  let total = 0;
  while (s !== '') {
    const c0 = s.charCodeAt(0);
    if (!(c0 === 46 || (c0 >= 48 && c0 <= 57))) throw new DurationError(`time: invalid duration ${quote(orig)}`);
    const m = /^(\d*)(?:\.(\d*))?/.exec(s)!;
    const intPart = m[1] ?? '';
    const fracPart = m[2];
    const pre = intPart !== '';
    const post = fracPart !== undefined && fracPart !== '';
    if (!pre && !post) throw new DurationError(`time: invalid duration ${quote(orig)}`);
    s = s.slice(m[0].length);
    let i = 0;
    while (i < s.length) {
      const c = s.charCodeAt(i);
      if (c === 46 || (c >= 48 && c <= 57)) break;
      i++;
    }
    if (i === 0) throw new DurationError(`time: missing unit in duration ${quote(orig)}`);
    const u = s.slice(0, i);
    s = s.slice(i);
    const unit = UNIT_NS.get(u);
    if (unit === undefined) throw new DurationError(`time: unknown unit ${quote(u)} in duration ${quote(orig)}`);
    const value = Number(pre ? intPart : '0') * unit + (post ? Number(`0.${fracPart}`) * unit : 0);
    total += value;
    if (!Number.isFinite(total) || total > MAX_DURATION_NS)
      throw new DurationError(`time: invalid duration ${quote(orig)}`);
  }
  total = Math.round(total);
  return neg ? -total : total;
}

/** Milliseconds of a Go duration string; throws DurationError with Go's message. */
export function parseGoDuration(text: string): number {
  return parseGoDurationNs(text) / 1e6;
}

/** Fractional digits of `v` at precision `prec`, trailing zeros dropped (Go's fmtFrac). */
function frac(v: number, prec: number): [string, number] {
  let digits = '';
  let print = false;
  for (let i = 0; i < prec; i++) {
    const digit = v % 10;
    print = print || digit !== 0;
    if (print) digits = String(digit) + digits;
    v = Math.floor(v / 10);
  }
  return [print ? `.${digits}` : '', v];
}

/** Go's `time.Duration.String()` for a value in nanoseconds: `0s`, `1.5µs`, `500ms`, `5s`, `1m30s`, `1h0m0s`. */
export function formatGoDurationNs(ns: number): string {
  let u = Math.round(Math.abs(ns));
  const sign = ns < 0 ? '-' : '';
  if (u === 0) return '0s';
  if (u < 1e9) {
    if (u < 1e3) return `${sign}${u}ns`;
    const [prec, unit] = u < 1e6 ? [3, 'µs'] : [6, 'ms'];
    const [f, whole] = frac(u, prec);
    return `${sign}${whole}${f}${unit}`;
  }
  const [f, secsTotal] = frac(u, 9);
  u = secsTotal;
  let out = `${u % 60}${f}s`;
  u = Math.floor(u / 60);
  if (u > 0) {
    out = `${u % 60}m${out}`;
    u = Math.floor(u / 60);
    if (u > 0) out = `${u}h${out}`;
  }
  return sign + out;
}

/** Go's `Duration.String()` for a value in milliseconds. */
export function formatGoDuration(ms: number): string {
  return formatGoDurationNs(ms * 1e6);
}

/** Milliseconds of a Go duration string, or undefined when it does not parse (for callers that word their own error). */
export function parseDuration(text: string): number | undefined {
  try {
    return parseGoDuration(text);
  } catch {
    return undefined;
  }
}
