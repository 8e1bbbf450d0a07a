import { describe, expect, it } from 'vitest';
import { compileRe2, Re2Error, subexpNames } from './re2.js';

describe('compileRe2 (Go RE2 syntax)', () => {
  it('translates named groups and reports Go SubexpNames', () => {
    const c = compileRe2('(^|[.])ip-(?P<a>[0-9]*)-(?P<b>[0-9]*)[.]example[.]$');
    const m = c.re.exec('x.ip-10-20.example.')!;
    expect(m.groups).toEqual({ a: '10', b: '20' });
    expect(subexpNames(c)).toEqual(['', '', 'a', 'b']);
    expect(subexpNames(compileRe2('(?:x)(y)[(](?<n>z)\\('))).toEqual(['', '', 'n']);
  });

  it('flags, anchors, escapes, POSIX classes, \\Q…\\E, unicode classes', () => {
    expect(compileRe2('(?i)^FOO\\.$').re.test('foo.')).toBe(true);
    expect(compileRe2('\\Afoo\\z').re.test('foo')).toBe(true);
    expect(compileRe2('\\Afoo\\z').re.test('xfoo')).toBe(false);
    expect(compileRe2('^[[:alpha:]]+[[:digit:]]$').re.test('abc1')).toBe(true);
    expect(compileRe2('^\\Qa.b\\E$').re.test('a.b')).toBe(true);
    expect(compileRe2('^\\Qa.b\\E$').re.test('axb')).toBe(false);
    expect(compileRe2('^[]a]+$').re.test(']a]')).toBe(true);
    expect(compileRe2('^\\pL+$').re.test('héllo')).toBe(true);
    expect(compileRe2('^\\x{41}\\-$').re.test('A-')).toBe(true);
  });

  const bad: [string, RegExp][] = [
    ['(?=x)', /invalid or unsupported Perl syntax: `\(\?=`/],
    ['(?<!x)', /invalid or unsupported Perl syntax: `\(\?<!`/],
    ['(a)\\1', /invalid escape sequence: `\\1`/],
    ['(?i:x)', /inline flag group `\(\?i:` is not supported by clusterdns/],
    ['(?U)x+', /`\(\?U\)` \(ungreedy\) is not supported by clusterdns/],
    ['[[:^alpha:]]', /negated POSIX class/],
    ['\\C', /not supported by clusterdns/],
    ['(?P<x>', /./],
    ['[a', /missing closing \]/],
  ];
  for (const [p, re] of bad) {
    it(`rejects ${p}`, () => {
      expect(() => compileRe2(p)).toThrow(Re2Error);
      expect(() => compileRe2(p)).toThrow(re);
    });
  }
});
