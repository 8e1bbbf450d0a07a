import { describe, expect, it } from 'vitest';
import { configError, dispenserFor } from '../../test/helpers/setup.js';
import { parseReload, pickPeriod } from './setup.js';

describe('reload setup', () => {
  const ok: [string, number, number][] = [
    ['reload', 30_000, 15_000],
    ['reload 10s', 10_000, 5_000], // jitter reduced to interval/2
    ['reload 2s', 2_000, 1_000],
    ['reload 1m 10s', 60_000, 10_000],
    ['reload 10s 0', 10_000, 0],
    ['reload 10s 0s', 10_000, 0],
    ['reload 5s 1s', 5_000, 1_000],
    ['reload 10s 30s', 10_000, 5_000],
    ['reload 1m\nreload 2s', 60_000, 15_000], // only the first occurrence is read
  ];
  for (const [text, intervalMs, jitterMs] of ok) {
    it(`accepts ${JSON.stringify(text)}`, () => {
      expect(parseReload(dispenserFor(text, 'reload'))).toEqual({ intervalMs, jitterMs });
    });
  }
  const bad: [string, string][] = [
    ['reload 1s', 'interval value must be greater or equal to 2s'],
    ['reload 1999ms', 'interval value must be greater or equal to 2s'],
    ['reload 0', 'interval value must be greater or equal to 2s'],
    ['reload 10s 500ms', 'jitter value must be 0 or greater or equal to 1s'],
    ['reload 10s -1s', 'jitter value must be 0 or greater or equal to 1s'],
    ['reload 10', 'time: missing unit in duration "10"'],
    ['reload ten', 'time: invalid duration "ten"'],
    ['reload 10s 5q', 'time: unknown unit "q" in duration "5q"'],
    ['reload 10s 5s 1s', "Wrong argument count or unexpected line ending after '1s'"],
  ];
  for (const [text, message] of bad) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      const e = configError(() => parseReload(dispenserFor(text, 'reload')), text);
      expect(e.message).toBe(message);
      expect(e.plugin).toBe('reload');
    });
  }

  it('period is INTERVAL + U with U in [-JITTER/2, +JITTER/2)', () => {
    const cfg = { intervalMs: 30_000, jitterMs: 15_000 };
    expect(pickPeriod(cfg, () => 0)).toBe(22_500);
    expect(pickPeriod(cfg, () => 0.5)).toBe(30_000);
    expect(pickPeriod(cfg, () => 0.99999999)).toBe(37_499);
    expect(pickPeriod({ intervalMs: 10_000, jitterMs: 0 }, () => 0.7)).toBe(10_000);
  });
});
