/** The rcode rule's values: miekg/dns's StringToRcode names (BADSIG included) or a number up to 23. */
import { describe, expect, it } from 'vitest';
import { newRule } from './newrule.js';

function accepts(from: string, to: string): boolean {
  try {
    newRule(['stop', 'rcode', 'exact', 'a.example.', from, to]);
    return true;
  } catch {
    return false;
  }
}

describe('rcode rule values', () => {
  it.each([
    ['NOERROR', true],
    ['servfail', true],
    ['BADSIG', true],
    ['badsig', true],
    ['BADVERS', true],
    ['BADCOOKIE', true],
    ['0', true],
    ['23', true],
    ['24', false],
    ['99999999999', false],
    ['NOPE', false],
    ['16x', false],
  ])('%s → accepted %s', (value, ok) => {
    expect(accepts(value, 'NOERROR')).toBe(ok);
    expect(accepts('NOERROR', value)).toBe(ok);
  });
});
