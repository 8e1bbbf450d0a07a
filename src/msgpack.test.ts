/**
 * The MessagePack encoder against the spec's byte forms (each integer in its shortest form, as
 * tinylib/msgp writes it); plugins/trace/datadog.test.ts decodes its output with the Datadog
 * agent's own decoder.
 */
import { describe, expect, it } from 'vitest';
import { MsgpackWriter } from './msgpack.js';

const hex = (f: (w: MsgpackWriter) => void): string => {
  const w = new MsgpackWriter(1);
  f(w);
  return w.bytes().toString('hex');
};

describe('MsgpackWriter', () => {
  it('writes integers in their shortest form', () => {
    const cases: [number | bigint, string][] = [
      [0, '00'],
      [127, '7f'],
      [128, 'cc80'],
      [255, 'ccff'],
      [256, 'cd0100'],
      [65535, 'cdffff'],
      [65536, 'ce00010000'],
      [0xffffffff, 'ceffffffff'],
      [2 ** 32, 'cf0000000100000000'],
      [2n ** 64n - 1n, 'cfffffffffffffffff'],
      [-1, 'ff'],
      [-32, 'e0'],
      [-33, 'd0df'],
      [-128, 'd080'],
      [-129, 'd1ff7f'],
      [-32768, 'd18000'],
      [-32769, 'd2ffff7fff'],
      [-(2 ** 31) - 1, 'd3ffffffff7fffffff'],
      [-(2n ** 63n), 'd38000000000000000'],
    ];
    for (const [v, want] of cases)
      expect(
        hex((w) => w.int(v)),
        String(v),
      ).toBe(want);
    expect(() => hex((w) => w.int(2n ** 64n))).toThrow(RangeError);
    expect(() => hex((w) => w.int(0.5))).toThrow(RangeError);
  });

  it('writes strings, floats, booleans, nil and headers', () => {
    expect(hex((w) => w.str(''))).toBe('a0');
    expect(hex((w) => w.str('é'))).toBe('a2c3a9');
    expect(hex((w) => w.str('x'.repeat(31))).slice(0, 2)).toBe('bf');
    expect(hex((w) => w.str('x'.repeat(32))).slice(0, 4)).toBe('d920');
    expect(hex((w) => w.str('x'.repeat(256))).slice(0, 6)).toBe('da0100');
    expect(hex((w) => w.str('x'.repeat(65536))).slice(0, 10)).toBe('db00010000');
    expect(hex((w) => w.float64(1.5))).toBe('cb3ff8000000000000');
    expect(hex((w) => w.bool(true).bool(false).nil())).toBe('c3c2c0');
    expect(hex((w) => w.arrayHeader(15).arrayHeader(16).arrayHeader(65536))).toBe('9fdc0010dd00010000');
    expect(hex((w) => w.mapHeader(1).mapHeader(16).mapHeader(65536))).toBe('81de0010df00010000');
    expect(hex((w) => w.raw(Buffer.from([1, 2])))).toBe('0102');
  });
});
