import { describe, expect, it } from 'vitest';
import { fallsThrough, parseFallthrough } from './fallthrough.js';

describe('fallthrough', () => {
  it('no zones means every name; repeated zones are kept once', () => {
    expect(parseFallthrough([])).toEqual(['.']);
    expect(parseFallthrough(['in-addr.arpa.', 'ip6.arpa.', 'in-addr.arpa.'])).toEqual(['in-addr.arpa.', 'ip6.arpa.']);
  });

  it('a name falls through inside a listed zone only, never without fallthrough', () => {
    const ft = parseFallthrough(['in-addr.arpa.']);
    expect(fallsThrough(ft, '1.0.0.10.in-addr.arpa.')).toBe(true);
    expect(fallsThrough(ft, 'in-addr.arpa.')).toBe(true);
    expect(fallsThrough(ft, 'xin-addr.arpa.')).toBe(false);
    expect(fallsThrough(parseFallthrough([]), 'anything.example.')).toBe(true);
    expect(fallsThrough(null, 'anything.example.')).toBe(false);
  });
});
