/** normalize(): CoreDNS's plugin.Name(s).Normalize() for names written in a rewrite rule. */
import { describe, expect, it } from 'vitest';
import { lowerName } from '../../../src/dns/name.js';
import { normalize } from './rule.js';

describe('normalize', () => {
  it('lower-cases and makes the name absolute', () => {
    expect(normalize('A.Example.COM')).toBe('a.example.com.');
    expect(normalize('a.example.com.')).toBe('a.example.com.');
    expect(normalize('')).toBe('.');
    expect(normalize('.')).toBe('.');
  });

  it('keeps escapes as written: a rule name is text, not wire bytes', () => {
    expect(normalize('A\\.B.Example')).toBe('a\\.b.example.');
    expect(normalize('\\065.example')).toBe('\\065.example.');
  });

  it('lowers non-ASCII letters as Go strings.ToLower does, unlike lowerName', () => {
    expect(normalize('ÄB.Example')).toBe('äb.example.');
    expect(lowerName('ÄB.Example.')).toBe('Äb.example.');
  });
});
