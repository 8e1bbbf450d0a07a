import { describe, expect, it } from 'vitest';
import { compileRe2, Re2Error, requiredLiteral, subexpNames } from './re2.js';

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
    expect(compileRe2('^a\\0b\\012c\\101$').re.test('a\0b\ncA')).toBe(true);
    expect(compileRe2('^a{2}b{1,}c{0,1}{$').re.test('aabbc{')).toBe(true);
    expect(compileRe2('^x}]$').re.test('x}]')).toBe(true);
    expect(compileRe2('^\\pL{2}[{]$').re.test('éa{')).toBe(true);
  });

  it('(?U) swaps greedy and non-greedy repetitions', () => {
    expect(compileRe2('(?U)^(a+)(a*)').re.exec('aaa')?.slice(1)).toEqual(['a', '']);
    expect(compileRe2('(?U)^(a+?)(a*)').re.exec('aaa')?.slice(1)).toEqual(['aaa', '']);
    expect(compileRe2('^(a+?)(a{1,2}?)').re.exec('aaa')?.slice(1)).toEqual(['a', 'a']);
    expect(compileRe2('(?U)^(a{1,2})').re.exec('aaa')?.slice(1)).toEqual(['a']);
  });

  // Go's own texts (checked against go1.26 regexp.Compile, without its "error parsing regexp: ").
  const bad: [string, string | RegExp][] = [
    ['(?=x)', 'invalid or unsupported Perl syntax: `(?=`'],
    ['(?x)a', 'invalid or unsupported Perl syntax: `(?x`'],
    ['(?<!x)', 'invalid named capture: `(?<!x)`'],
    ['(?<=a)b', 'invalid named capture: `(?<=a)b`'],
    ['(a)\\1', 'invalid escape sequence: `\\1`'],
    ['\\8', 'invalid escape sequence: `\\8`'],
    ['\\y', 'invalid escape sequence: `\\y`'],
    ['\\Z', 'invalid escape sequence: `\\Z`'],
    ['\\C', 'invalid escape sequence: `\\C`'],
    ['[\\b]', 'invalid escape sequence: `\\b`'],
    ['(?P<x>', 'missing closing ): `(?P<x>`'],
    ['(a', 'missing closing ): `(a`'],
    ['a)', 'unexpected ): `a)`'],
    ['[a', 'missing closing ]: `[a`'],
    ['[[:foo:]]', 'invalid character class range: `[:foo:]`'],
    ['a**', 'invalid nested repetition operator: `**`'],
    ['x{2,1}', 'invalid repeat count: `{2,1}`'],
    ['a{1001}', 'invalid repeat count: `{1001}`'],
    ['(?i:x)', /inline flag group `\(\?i:` is not supported by clusterdns/],
    ['x(?i)y', /inline flag group `\(\?i\)` is not supported by clusterdns/],
    ['[[:^alpha:]]', /negated POSIX class/],
  ];
  for (const [p, re] of bad) {
    it(`rejects ${p}`, () => {
      expect(() => compileRe2(p)).toThrow(Re2Error);
      expect(() => compileRe2(p)).toThrow(typeof re === 'string' ? new Re2Error(re) : re);
    });
  }
});

describe('Go regular expressions as rewrite rules use them (names, no newline)', () => {
  it.each([
    ['(?P<svc>[a-z]+)\\.example', 'web.example', ['web.example', 'web']],
    ['(?i)^WEB\\.', 'web.example', ['web.']],
    ['\\Aa\\.b\\z', 'a.b', ['a.b']],
    ['[[:digit:]]+', 'x42', ['42']],
    ['\\Qa.b\\E', 'a.b', ['a.b']],
  ])('%s on %s', (re, input, groups) => {
    expect([...(compileRe2(re, { noNewline: true }).re.exec(input) ?? [])]).toEqual(groups);
  });

  it('a leading .* is anchored (same leftmost match, no quadratic retries); captures unchanged', () => {
    const re = compileRe2('(.*)\\.corp\\.example\\.com', { noNewline: true }).re;
    expect(re.source.startsWith('^')).toBe(true);
    expect([...re.exec('a.b.corp.example.com.')!]).toEqual(['a.b.corp.example.com', 'a.b']);
    expect(compileRe2('(.*)a|b', { noNewline: true }).re.source.startsWith('^')).toBe(false);
  });

  it.each([
    ['(.*)\\.corp\\.example\\.com', '.corp.example.com'],
    ['^(.*)-(us-west-1)\\.example\\.org', '.example.org'],
    ['(?i)^WEB\\.Example', 'web.example'],
    ['ab*c', 'a'],
    ['x{2}yz', 'yz'],
    ['[a-z]+\\.svc\\.local', '.svc.local'],
    ['a|bcd', ''],
    ['x(?i)CORP', ''],
    ['(a(b)c)d\\d+e', 'd'],
  ])('required literal of %s: %s', (re, lit) => {
    expect(requiredLiteral(re)).toBe(lit);
  });

  it.each(['(a', 'a)', '[a', '(?=a)', '(?<=a)b', '(a)\\1'])('%s is refused as Go refuses it', (re) => {
    expect(() => compileRe2(re, { noNewline: true }).re).toThrow(Re2Error);
  });
});
