/** The generic option parser: arity, types, repeat policies and CoreDNS's error wording with file:line. */
import { describe, expect, it } from 'vitest';
import { Dispenser } from './dispenser.js';
import { lex } from './lexer.js';
import { ConfigError, ConfigErrorList } from './types.js';
import { cidr, directive, duration, int, oneOf, option, parseOccurrence, parseOccurrences, readmeOptionNames, regex, zoneArg } from './options.js';

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
    const p = parse('demo example.org 10.0.0.0/8 {\n size 5\n every 1m30s\n mode slow\n net 10.0.0.0/8 ::/0\n net 192.0.2.0/24\n flag\n}');
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
    expect(errorsOf('demo {\n size x\n}')).toEqual(['plugin/demo: Corefile:2 - Error during parsing: strconv.Atoi: parsing "x": invalid syntax']);
    expect(errorsOf('demo {\n size 11\n}')).toEqual(['plugin/demo: Corefile:2 - Error during parsing: size must be 1..10: 11']);
    expect(errorsOf('demo {\n every 5 \n}')).toEqual(['plugin/demo: Corefile:2 - Error during parsing: time: missing unit in duration "5"']);
    expect(errorsOf('demo {\n size\n}')).toEqual(["plugin/demo: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'size'"]);
    expect(errorsOf('demo {\n size 1 2\n}')).toEqual(["plugin/demo: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after '2'"]);
    expect(errorsOf('demo {\n bogus 1\n}')).toEqual(["plugin/demo: Corefile:2 - Error during parsing: unknown property 'bogus'"]);
    expect(errorsOf('demo {\n net 10.0.0.0/33\n}')).toEqual(['plugin/demo: Corefile:2 - Error during parsing: invalid CIDR address: 10.0.0.0/33']);
    expect(errorsOf('demo {\n once\n once\n}')).toEqual(["plugin/demo: Corefile:3 - Error during parsing: option 'once' already set"]);
    expect(errorsOf('demo {\n match (\n}')[0]).toMatch(/^plugin\/demo: Corefile:2 - Error during parsing: error parsing regexp: /);
  });

  it('collects every bad option of the occurrence', () => {
    expect(errorsOf('demo {\n size x\n mode medium\n unknown\n}')).toEqual([
      'plugin/demo: Corefile:2 - Error during parsing: strconv.Atoi: parsing "x": invalid syntax',
      "plugin/demo: Corefile:3 - Error during parsing: unknown value 'medium', expected 'fast', 'slow'",
      "plugin/demo: Corefile:4 - Error during parsing: unknown property 'unknown'",
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
    const readme = '# demo\n\n## Syntax\n\n~~~ txt\ndemo [ZONES...]\n~~~\n\ntext\n\n~~~ txt\ndemo [ZONES...] {\n    size N\n    every DURATION\n    flag\n}\n~~~\n\n## Examples\n\n~~~\ndemo {\n  notanoption\n}\n~~~\n';
    expect(readmeOptionNames(readme).sort()).toEqual(['every', 'flag', 'size']);
  });
});
