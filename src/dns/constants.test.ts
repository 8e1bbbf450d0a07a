/** Type and class mnemonics: miekg/dns's tables, spelled as CoreDNS 1.15.0 prints them. */
import { describe, expect, it } from 'vitest';
import { packetTypeCode, qclassFromName, qclassName, qtypeFromName, qtypeName } from './constants.js';
import { TYPES, typeName } from './zonefile/mnemonics.js';

describe('type mnemonics', () => {
  // What `.bin/coredns` (1.15.0) with `log` and `whoami` printed for queries of these types.
  it.each([
    [65, 'HTTPS'],
    [64, 'SVCB'],
    [99, 'SPF'],
    [249, 'TKEY'],
    [53, 'SMIMEA'],
    [19, 'X25'],
    [23, 'NSAP-PTR'],
    [0, 'None'],
    [65535, 'Reserved'],
    [65534, 'TYPE65534'],
  ])('qtypeName(%i) is %s', (n, name) => {
    expect(qtypeName(n)).toBe(name);
  });

  it('reads a Corefile type as StringToType of the upper-cased text', () => {
    expect(qtypeFromName('smimea')).toBe(53);
    expect(qtypeFromName('nsap-ptr')).toBe(23);
    expect(qtypeFromName('type0')).toBe(0);
    // StringToType's keys are `None` and `Reserved`: an upper-cased token never matches them.
    expect(qtypeFromName('None')).toBeUndefined();
    expect(qtypeFromName('reserved')).toBeUndefined();
  });

  it('encodes every name qtypeName prints back to its number', () => {
    for (const n of [0, 19, 23, 65, 65535]) expect(packetTypeCode(qtypeName(n))).toBe(n);
  });

  it('gives the zone-file lexer the same table upper-cased', () => {
    expect(Object.keys(TYPES)).toHaveLength(88);
    expect(TYPES.NONE).toBe(0);
    expect(TYPES.RESERVED).toBe(65535);
    expect(TYPES['NSAP-PTR']).toBe(23);
    expect(typeName(0)).toBe('NONE');
    expect(typeName(65)).toBe('HTTPS');
    expect(typeName(65534)).toBe('TYPE65534');
  });
});

describe('class mnemonics', () => {
  it('are miekg/dns ClassToString, CS included', () => {
    expect(qclassName(2)).toBe('CS');
    expect(qclassFromName('cs')).toBe(2);
    expect(qclassName(5)).toBe('CLASS5');
  });
});
