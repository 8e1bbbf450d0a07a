/** The generic option parser: arity, types, repeat policies and CoreDNS's error wording with file:line. */
import { describe, expect, it } from 'vitest';
import { Dispenser } from './dispenser.js';
import { lex } from './lexer.js';
import { ConfigError, ConfigErrorList } from './types.js';
import {
  cidr,
  directive,
  duration,
  float,
  int,
  listenAddr,
  oneOf,
  option,
  parseOccurrence,
  parseOccurrences,
  percentage,
  readmeOptionNames,
  regex,
  str,
  zoneArg,
  type DirectiveDecl,
} from './options.js';

function disp(text: string): Dispenser {
  return new Dispenser(lex(text, 'Corefile'), 'demo');
}

const DEMO = directive('demo', {
  args: { rest: zoneArg() },
  options: [
    option('size', { args: [int({ min: 1, max: 10, range: (v) => `size must be 1..10: ${v}` })] }),
    option('every', { args: [duration()] }),
    option('mode', { args: [oneOf(['fast', 'slow'])] }),
    option('net', { args: [cidr()], rest: cidr(), repeat: 'all' }),
    option('match', { args: [regex()] }),
    option('once', { repeat: 'error' }),
    option('flag'),
  ],
});

function parse(text: string) {
  const d = disp(text);
  d.next();
  return parseOccurrence(d, DEMO);
}

function errorsOf(text: string): string[] {
  try {
    parse(text);
  } catch (e) {
    if (e instanceof ConfigErrorList) return e.errors.map((x) => x.describe());
    if (e instanceof ConfigError) return [e.describe()];
    throw e;
  }
  return [];
}

describe('parseOccurrence', () => {
  it('converts arguments and options', () => {
    const p = parse(
      'demo example.org 10.0.0.0/8 {\n size 5\n every 1m30s\n mode slow\n net 10.0.0.0/8 ::/0\n net 192.0.2.0/24\n flag\n}',
    );
    expect(p.directive.values).toEqual(['example.org.', '10.in-addr.arpa.']);
    expect(p.num('size', 0, 0)).toBe(5);
    expect(p.num('every', 0, 0)).toBe(90_000);
    expect(p.str('mode', 0, 'fast')).toBe('slow');
    expect(p.all('net').map((o) => o.values)).toEqual([['10.0.0.0/8', '::/0'], ['192.0.2.0/24']]);
    expect(p.has('flag')).toBe(true);
    expect(p.has('once')).toBe(false);
    expect(p.num('absent', 0, 7)).toBe(7);
  });

  it('keeps the last of a repeated `last` option', () => {
    expect(parse('demo {\n size 2\n size 3\n}').num('size', 0, 0)).toBe(3);
  });

  it('words errors as CoreDNS does, with the line of the offending token', () => {
    expect(errorsOf('demo {\n size x\n}')).toEqual([
      'plugin/demo: Corefile:2 - Error during parsing: strconv.Atoi: parsing "x": invalid syntax',
    ]);
    expect(errorsOf('demo {\n size 11\n}')).toEqual([
      'plugin/demo: Corefile:2 - Error during parsing: size must be 1..10: 11',
    ]);
    expect(errorsOf('demo {\n every 5 \n}')).toEqual([
      'plugin/demo: Corefile:2 - Error during parsing: time: missing unit in duration "5"',
    ]);
    expect(errorsOf('demo {\n size\n}')).toEqual([
      "plugin/demo: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'size'",
    ]);
    expect(errorsOf('demo {\n size 1 2\n}')).toEqual([
      "plugin/demo: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after '2'",
    ]);
    expect(errorsOf('demo {\n bogus 1\n}')).toEqual([
      "plugin/demo: Corefile:2 - Error during parsing: unknown property 'bogus'",
    ]);
    expect(errorsOf('demo {\n net 10.0.0.0/33\n}')).toEqual([
      'plugin/demo: Corefile:2 - Error during parsing: invalid CIDR address: 10.0.0.0/33',
    ]);
    expect(errorsOf('demo {\n once\n once\n}')).toEqual([
      "plugin/demo: Corefile:3 - Error during parsing: option 'once' already set",
    ]);
    expect(errorsOf('demo {\n match (\n}')[0]).toMatch(
      /^plugin\/demo: Corefile:2 - Error during parsing: error parsing regexp: /,
    );
  });

  it('collects every bad option of the occurrence', () => {
    expect(errorsOf('demo {\n size x\n mode medium\n unknown\n}')).toEqual([
      'plugin/demo: Corefile:2 - Error during parsing: strconv.Atoi: parsing "x": invalid syntax',
      "plugin/demo: Corefile:3 - Error during parsing: unknown value 'medium', expected 'fast', 'slow'",
      "plugin/demo: Corefile:4 - Error during parsing: unknown property 'unknown'",
    ]);
  });

  it('an unknown property does not swallow the lines after it', () => {
    expect(errorsOf('demo {\n unknown a {\n  nested x\n }\n size x\n}')).toEqual([
      "plugin/demo: Corefile:2 - Error during parsing: unknown property 'unknown'",
      'plugin/demo: Corefile:5 - Error during parsing: strconv.Atoi: parsing "x": invalid syntax',
    ]);
  });

  it('parses every occurrence in turn', () => {
    const d = disp('demo a.org {\n size 1\n}\ndemo b.org');
    const occ = parseOccurrences(d, DEMO);
    expect(occ.map((o) => o.directive.values)).toEqual([['a.org.'], ['b.org.']]);
    expect(occ[0]!.num('size', 0, 0)).toBe(1);
  });
});

describe('readmeOptionNames', () => {
  it('reads the first word of each line inside the Syntax blocks', () => {
    const readme =
      '# demo\n\n## Syntax\n\n~~~ txt\ndemo [ZONES...]\n~~~\n\ntext\n\n~~~ txt\ndemo [ZONES...] {\n    size N\n    every DURATION\n    flag\n}\n~~~\n\n## Examples\n\n~~~\ndemo {\n  notanoption\n}\n~~~\n';
    expect(readmeOptionNames(readme).sort()).toEqual(['every', 'flag', 'size']);
  });
});

describe('types and message hooks', () => {
  function errs(decl: DirectiveDecl, text: string): string[] {
    const d = disp(text);
    try {
      parseOccurrences(d, decl);
    } catch (e) {
      if (e instanceof ConfigErrorList) return e.errors.map((x) => `${x.line}: ${x.message}`);
      if (e instanceof ConfigError) return [`${e.line}: ${e.message}`];
      throw e;
    }
    return [];
  }

  const HOOKS = directive('demo', {
    args: { args: [listenAddr()], min: 0 },
    options: [
      option('share', {
        args: [
          float({
            min: 0,
            max: 1,
            invalid: (v, go) => `bad share ${v} (${go})`,
            range: (v) => `share out of range: ${v}`,
          }),
        ],
      }),
      option('pct', { args: [percentage({ min: 10, max: 90 })] }),
      option('wait', {
        args: [duration({ min: 0, invalid: (v) => `bad wait '${v}'`, range: (_, v) => `negative wait '${v}'` })],
        arity: (n) => (n === 0 ? 'wait needs a duration' : 'wait takes one duration'),
      }),
      option('count', { args: [int({ invalid: (v, go) => `count: ${go}` })] }),
      option('tls', { args: [str()], repeat: 'error', repeated: 'tls already given' }),
    ],
    unknown: (name) => `unknown option: ${name}`,
  });

  it('converts float, percentage and a listen address', () => {
    const [occ] = parseOccurrences(disp('demo [::1]:8080 {\n share .25\n pct 20%\n}'), HOOKS);
    expect(occ!.directive.values).toEqual(['[::1]:8080']);
    expect(occ!.num('share', 0, 0)).toBe(0.25);
    expect(occ!.num('pct', 0, 0)).toBe(20);
  });

  it("words errors through the declaration's hooks", () => {
    expect(
      errs(
        HOOKS,
        'demo 8080 {\n share x\n share 2\n pct 20\n pct 95%\n wait\n wait 1s 2s\n wait 5\n wait -1s\n count z\n tls a\n tls b\n what\n}',
      ),
    ).toEqual([
      '1: address 8080: missing port in address',
      '2: bad share x (strconv.ParseFloat: parsing "x": invalid syntax)',
      '3: share out of range: 2',
      "4: last character of percentage should be `%`, but is: '0'",
      '5: percentage must be between 10 and 90: 95',
      '6: wait needs a duration',
      '7: wait takes one duration',
      "8: bad wait '5'",
      "9: negative wait '-1s'",
      '10: count: strconv.Atoi: parsing "z": invalid syntax',
      '12: tls already given',
      '13: unknown option: what',
    ]);
  });

  it('collects the errors of every occurrence', () => {
    expect(errs(HOOKS, 'demo {\n count x\n}\ndemo {\n count y\n}')).toEqual([
      '2: count: strconv.Atoi: parsing "x": invalid syntax',
      '5: count: strconv.Atoi: parsing "y": invalid syntax',
    ]);
  });

  it("a directive without block options rejects a block as Caddy's ArgErr does", () => {
    expect(errs(directive('demo'), 'demo {\n foo\n}\n')).toEqual(["1: Unexpected token '{', expecting argument"]);
    expect(errs(directive('demo'), 'demo\n')).toEqual([]);
  });

  it('keeps free-form lines when asked', () => {
    const [occ] = parseOccurrences(
      disp('demo {\n 10.0.0.1 a.example b\n size 3\n}'),
      directive('demo', { options: [option('size', { args: [int()] })], other: 'keep' }),
    );
    expect(occ!.options.map((o) => [o.name, o.raw])).toEqual([
      ['*', ['10.0.0.1', 'a.example', 'b']],
      ['size', ['3']],
    ]);
  });
});
