import { describe, expect, it } from 'vitest';
import {
  addressAt,
  addressCount,
  AddressIndex,
  addressIs,
  addressList,
  formatIPv4,
  MultiIndex,
  packAddresses,
  parseIPv4,
} from './addresses.js';

describe('IPv4 numbers', () => {
  it('parses canonical dotted quads only', () => {
    expect(parseIPv4('0.0.0.0')).toBe(0);
    expect(parseIPv4('10.96.0.10')).toBe(0x0a60000a);
    expect(parseIPv4('255.255.255.255')).toBe(0xffffffff);
    for (const bad of [
      '',
      '1.2.3',
      '1.2.3.4.5',
      '1.2.3.256',
      '01.2.3.4',
      '1..3.4',
      '1.2.3.',
      'a.b.c.d',
      '::1',
      '1.2.3.4 ',
    ]) {
      expect(parseIPv4(bad), bad).toBe(-1);
    }
  });

  it('formats back', () => {
    for (const ip of ['0.0.0.0', '10.96.0.10', '255.255.255.255', '192.168.1.1'])
      expect(formatIPv4(parseIPv4(ip))).toBe(ip);
  });
});

describe('packed addresses', () => {
  it('packs IPv4 lists into 4 bytes an address and reads them back', () => {
    const ips = ['10.0.0.1', '0.0.0.0', '255.255.255.255', '172.16.0.200'];
    const p = packAddresses(ips);
    expect(typeof p).toBe('string');
    expect((p as string).length).toBe(8);
    expect(addressCount(p)).toBe(4);
    expect(addressList(p)).toEqual(ips);
    expect(addressAt(p, 3)).toBe('172.16.0.200');
    expect(addressIs(p, 2, '255.255.255.255')).toBe(true);
    expect(addressIs(p, 2, '255.255.255.254')).toBe(false);
    expect(addressIs(p, 0, 'fd00::1')).toBe(false);
  });

  it('keeps IPv6 (or mixed) lists as strings, and packs large lists', () => {
    expect(packAddresses(['fd00::1', 'fd00::2'])).toEqual(['fd00::1', 'fd00::2']);
    expect(addressIs(packAddresses(['fd00::1']), 0, 'fd00::1')).toBe(true);
    expect(packAddresses([])).toBe('');
    expect(addressCount('')).toBe(0);
    const many = Array.from({ length: 20_000 }, (_, i) => formatIPv4(0x0a000000 + i * 7919));
    expect(addressList(packAddresses(many))).toEqual(many);
  });
});

describe('AddressIndex', () => {
  it('behaves like a MultiIndex for IPv4 and IPv6 keys', () => {
    const ix = new AddressIndex();
    ix.add('10.0.0.1', 'a');
    ix.add('10.0.0.1', 'b');
    ix.add('10.0.0.1', 'b');
    ix.add('fd00::1', 'c');
    ix.add('0.0.0.0', 'z');
    expect(ix.size).toBe(3);
    expect([...ix.get('10.0.0.1')!].sort()).toEqual(['a', 'b']);
    expect([...ix.get('fd00::1')!]).toEqual(['c']);
    expect([...ix.get('0.0.0.0')!]).toEqual(['z']);
    expect(ix.get('10.0.0.2')).toBeUndefined();
    ix.delete('10.0.0.1', 'a');
    expect([...ix.get('10.0.0.1')!]).toEqual(['b']);
    ix.delete('10.0.0.1', 'x'); // not there: no change
    ix.delete('10.0.0.1', 'b');
    expect(ix.has('10.0.0.1')).toBe(false);
    ix.delete('fd00::1', 'c');
    expect(ix.size).toBe(1);
  });

  it('agrees with a Map through growth, shrinking and deletions in probe runs (seeded random walk)', () => {
    const ix = new AddressIndex();
    const ref = new MultiIndex();
    const live = new Map<string, Set<string>>();
    let seed = 12345;
    const rand = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    // A small key space forces collisions and long probe runs; the walk grows past 40k keys, then
    // deletes most of them to make the table shrink.
    const key = (space: number): string => formatIPv4(0x0a000000 + rand(space) * 4096);
    for (let step = 0; step < 200_000; step++) {
      const growing = step < 120_000;
      const k = key(growing ? 60_000 : 60_000);
      const v = `s${rand(3)}`;
      if (growing ? rand(4) !== 0 : rand(8) !== 0) {
        if (growing) {
          ix.add(k, v);
          ref.add(k, v);
          (live.get(k) ?? live.set(k, new Set()).get(k)!).add(v);
        } else {
          for (const x of live.get(k) ?? []) {
            ix.delete(k, x);
            ref.delete(k, x);
          }
          live.delete(k);
        }
      } else {
        ix.delete(k, v);
        ref.delete(k, v);
        live.get(k)?.delete(v);
        if (live.get(k)?.size === 0) live.delete(k);
      }
    }
    expect(ix.size).toBe(ref.size);
    expect(ix.size).toBe(live.size);
    for (const [k, vs] of live) expect([...ix.get(k)!].sort(), k).toEqual([...vs].sort());
    for (let i = 0; i < 60_000; i++) {
      const k = formatIPv4(0x0a000000 + i * 4096);
      expect(ix.has(k), k).toBe(live.has(k));
    }
  });
});
