/** Helpers of the template functions: Go's comparison (`eq`, `lt`…), index conversion and strconv.ParseUint. */
import { typeOf, type GoValue } from './values.js';

export function toInt(v: GoValue, fail: (m: string) => Error): number {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  throw fail(`cannot index slice/array with type ${typeOf(v)}`);
}

export function compare(a: GoValue, b: GoValue, fail: (m: string) => Error, eqOnly: boolean): number {
  const num = (x: GoValue): boolean => typeof x === 'bigint' || typeof x === 'number';
  if (num(a) && num(b)) {
    if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
    if (typeof a !== typeof b) throw fail('incompatible types for comparison');
    return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
  }
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean' && typeof b === 'boolean' && eqOnly) return a === b ? 0 : 1;
  if (a === undefined || b === undefined) throw fail('invalid type for comparison');
  if (a === null && b === null && eqOnly) return 0;
  throw fail(eqOnly ? 'incompatible types for comparison' : 'invalid type for comparison');
}

export function parseUint(s: string, base: number, bitSize: number, fail: (m: string) => Error): GoValue {
  const syntax = (): Error => fail(`strconv.ParseUint: parsing ${JSON.stringify(s)}: invalid syntax`);
  if (s === '') throw syntax();
  let str = s;
  let b = base;
  if (b === 0) {
    b = 10;
    if (str[0] === '0') {
      if (str.length >= 3 && /[bB]/.test(str[1]!)) {
        b = 2;
        str = str.slice(2);
      } else if (str.length >= 3 && /[oO]/.test(str[1]!)) {
        b = 8;
        str = str.slice(2);
      } else if (str.length >= 3 && /[xX]/.test(str[1]!)) {
        b = 16;
        str = str.slice(2);
      } else {
        b = 8;
        str = str.slice(1) || '0';
      }
    }
    str = str.replace(/_/g, '');
  } else if (b < 2 || b > 36) throw fail(`strconv.ParseUint: parsing ${JSON.stringify(s)}: invalid base ${base}`);
  const bits = bitSize === 0 ? 64 : bitSize;
  if (bits < 0 || bits > 64) throw fail(`strconv.ParseUint: parsing ${JSON.stringify(s)}: invalid bit size ${bitSize}`);
  let v = 0n;
  const max = (1n << BigInt(bits)) - 1n;
  for (const c of str.toLowerCase()) {
    const d = c >= '0' && c <= '9' ? c.charCodeAt(0) - 48 : c >= 'a' && c <= 'z' ? c.charCodeAt(0) - 87 : 99;
    if (d >= b) throw syntax();
    v = v * BigInt(b) + BigInt(d);
  }
  if (v > max) throw fail(`strconv.ParseUint: parsing ${JSON.stringify(s)}: value out of range`);
  return v;
}
