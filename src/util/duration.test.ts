import { describe, expect, it } from 'vitest';
import { DurationError, formatGoDuration, formatGoDurationNs, parseGoDuration, parseGoDurationNs } from './duration.js';

describe('parseGoDuration', () => {
  const ok: [string, number][] = [
    ['0', 0],
    ['0s', 0],
    ['5s', 5000],
    ['500ms', 500],
    ['1.5h', 5_400_000],
    ['2h45m', 9_900_000],
    ['1m30s', 90_000],
    ['.5s', 500],
    ['1.s', 1000],
    ['+3s', 3000],
    ['-3s', -3000],
    ['100us', 0.1],
    ['100µs', 0.1],
    ['100μs', 0.1],
    ['1000000ns', 1],
    ['1h1m1s1ms', 3_661_001],
  ];
  for (const [text, ms] of ok) {
    it(`${text} = ${ms} ms`, () => expect(parseGoDuration(text)).toBe(ms));
  }
  it('keeps nanosecond precision', () => expect(parseGoDurationNs('1.000000001s')).toBe(1_000_000_001));
  const bad: [string, string][] = [
    ['', 'time: invalid duration ""'],
    ['5', 'time: missing unit in duration "5"'],
    ['1.5', 'time: missing unit in duration "1.5"'],
    ['5x', 'time: unknown unit "x" in duration "5x"'],
    ['5S', 'time: unknown unit "S" in duration "5S"'],
    ['abc', 'time: invalid duration "abc"'],
    ['.s', 'time: invalid duration ".s"'],
    ['-', 'time: invalid duration "-"'],
    ['5s ', 'time: unknown unit "s " in duration "5s "'],
    ['1s5', 'time: missing unit in duration "1s5"'],
  ];
  for (const [text, message] of bad) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      expect(() => parseGoDuration(text)).toThrow(DurationError);
      expect(() => parseGoDuration(text)).toThrow(message);
    });
  }
});

describe('formatGoDuration (Go Duration.String)', () => {
  const cases: [number, string][] = [
    [0, '0s'],
    [5000, '5s'],
    [500, '500ms'],
    [1500, '1.5s'],
    [90_000, '1m30s'],
    [3_600_000, '1h0m0s'],
    [9_900_000, '2h45m0s'],
    [0.0015, '1.5µs'],
    [1.25, '1.25ms'],
    [-5000, '-5s'],
  ];
  for (const [ms, text] of cases) {
    it(`${ms} ms → ${text}`, () => expect(formatGoDuration(ms)).toBe(text));
  }
  it('nanoseconds', () => {
    expect(formatGoDurationNs(999)).toBe('999ns');
    expect(formatGoDurationNs(1_000_000_001)).toBe('1.000000001s');
  });
  it('round-trips', () => {
    for (const t of ['5s', '1m30s', '2h45m0s', '250ms', '1.5s']) expect(formatGoDuration(parseGoDuration(t))).toBe(t);
  });
});
