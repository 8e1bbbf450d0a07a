import { describe, expect, it } from 'vitest';
import { ExprCompileError, ExprRunError } from './errors.js';
import { Expression } from './expression.js';
import type { ExprQuery, ExprValue } from './values.js';

const q: ExprQuery = {
  name: () => 'a.example.',
  type: () => 'A',
  class: () => 'IN',
  proto: () => 'udp',
  size: () => 40,
  clientIP: () => '10.1.2.3',
  port: () => '5353',
  id: () => 7,
  opcode: () => 0,
  do: () => false,
  bufsize: () => 512,
  serverIP: () => '127.0.0.1',
  serverPort: () => '53',
  metadata: (l) => (l === 'test/label' ? 'v' : ''),
  group: (k) => (({ 0: 'a.example.', 1: 'a', n: '42' }) as Record<string, string>)[k] ?? '',
};

function run(src: string, vars: Record<string, ExprValue> = {}): ExprValue {
  const e = Expression.compile(src, new Set(Object.keys(vars)));
  return e.run({ q, vars: new Map(Object.entries(vars)) });
}

describe('expression subset', () => {
  const cases: [string, ExprValue][] = [
    ["name() == 'a.example.'", true],
    ["type() == 'A' && class() == 'IN' && proto() == 'udp'", true],
    ['size() + id() + bufsize()', 559n],
    ["incidr(client_ip(), '10.0.0.0/8')", true],
    ["incidr('2001:db8::1', '2001:db8::/32') and not incidr('::ffff:10.0.0.1', '192.168.0.0/16')", true],
    ["int(group('n')) * 2 + 1", 85n],
    ["group(1) + group('nosuch') + group(9)", 'a'],
    ["metadata('test/label') + metadata('absent/label')", 'v'],
    ['7 / 2', 3.5],
    ['7 % 3', 1n],
    ['2 ** 10', 1024],
    ['1 + 2.5', 3.5],
    ["'x' + string(12)", 'x12'],
    ["replace('10-1-2-3', '-', '.')", '10.1.2.3'],
    ["upper('ab') + lower('CD') + trim('  e  ') + trimPrefix('xf', 'x') + trimSuffix('gy', 'y')", 'ABcdefg'],
    ["split('a.b.c', '.')", ['a', 'b', 'c']],
    ["join(['a', 'b'], '-')", 'a-b'],
    ["len('abc') + len([1, 2])", 5n],
    ["'b' in ['a', 'b'] && 3 not in [1, 2]", true],
    ["'abc' contains 'b' && 'abc' startsWith 'a' && 'abc' endsWith 'c' && 'abc' matches '^a.c$'", true],
    ["any(['10.0.0.0/8', '192.168.0.0/16'], incidr(client_ip(), #))", true],
    ['all([1, 2, 3], # > 0) && none([1, 2], # > 5) && one([1, 2], # == 2)', true],
    ['filter([1, 2, 3, 4], # % 2 == 0)', [2n, 4n]],
    ['map([1, 2], # * 10)', [10n, 20n]],
    ['count([1, 2, 3], # > 1)', 2n],
    ['1 < 2 ? "yes" : "no"', 'yes'],
    ['nil ?? "fallback"', 'fallback'],
    ['[1, 2, 3][-1]', 3n],
    ['max(3, 9, 4) + min([5, 2])', 11n],
    ['abs(-3) + int(2.9) + int(float("1.5"))', 6n],
    ['first([4, 5]) + last([4, 5])', 9n],
    ['x + 1', 42n],
    ['-x', -41n],
    ['!do()', true],
  ];
  for (const [src, want] of cases) it(src, () => expect(run(src, { x: 41n })).toEqual(want));

  const compileErrors: [string, RegExp][] = [
    ['nosuch', /unknown name nosuch/],
    ['nosuch()', /unknown func nosuch/],
    ['sortBy([1], #)', /the built-in sortBy\(\) is not supported by clusterdns/],
    ['1 +', /unexpected token EOF/],
    ['#', /# outside of a predicate/],
    ['let a = 1; a', /let is not supported/],
    ['{a: 1}', /map literals are not supported/],
    ['[1, 2][0:1]', /slices .* are not supported/],
    ['name().x', /member access is not supported/],
    ['1..3', /ranges .* are not supported/],
    ["name() matches '(?=x)'", /invalid or unsupported Perl syntax/],
    ['incidr(client_ip())', /not enough arguments to call incidr/],
    ["upper('a', 'b')", /invalid number of arguments for upper/],
    ["'unterminated", /literal not terminated/],
  ];
  for (const [src, re] of compileErrors) {
    it(`compile error: ${src}`, () => {
      expect(() => Expression.compile(src, new Set())).toThrow(ExprCompileError);
      expect(() => Expression.compile(src, new Set())).toThrow(re);
    });
  }

  const runErrors: [string, RegExp][] = [
    ["incidr('notanip', '10.0.0.0/8')", /first argument is not an IP address/],
    ["incidr('10.0.0.1', 'bad')", /invalid CIDR address/],
    ["int('x')", /strconv.Atoi: parsing "x": invalid syntax/],
    ["1 + 'a'", /invalid operation: int \+ string/],
    ['1 && true', /invalid operation/],
    ['[1][3]', /index out of range/],
    ['1 % 0', /integer divide by zero/],
  ];
  for (const [src, re] of runErrors) {
    it(`run error: ${src}`, () => {
      expect(() => run(src)).toThrow(ExprRunError);
      expect(() => run(src)).toThrow(re);
    });
  }
});
