import { describe, expect, it } from 'vitest';
import { readName, writePlainName } from './wire.js';
import { packetClassCode, packetClassName, packetTypeCode, packetTypeName } from './constants.js';
import {
  canonicalIP,
  ipFromReverseName,
  isSubdomain,
  lowerName,
  matchZone,
  normalizeZoneArg,
  reverseName,
  reverseZonesFromCidr,
} from './name.js';

describe('names', () => {
  it('subdomain and longest zone match', () => {
    expect(isSubdomain('a.cluster.local.', 'cluster.local.')).toBe(true);
    expect(isSubdomain('acluster.local.', 'cluster.local.')).toBe(false);
    expect(isSubdomain('cluster.local.', 'cluster.local.')).toBe(true);
    expect(isSubdomain('x.', '.')).toBe(true);
    expect(matchZone(['.', 'local.', 'cluster.local.'], 'a.cluster.local.')).toBe('cluster.local.');
  });

  it('reverse names both ways, IPv4 and IPv6', () => {
    expect(reverseName('10.96.0.11')).toBe('11.0.96.10.in-addr.arpa.');
    expect(ipFromReverseName('11.0.96.10.in-addr.arpa.')).toBe('10.96.0.11');
    expect(ipFromReverseName('1.0.96.10.in-addr.arpa.x')).toBeUndefined();
    const r6 = reverseName('fd00:10:96::13')!;
    expect(r6).toBe('3.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa.');
    expect(ipFromReverseName(r6)).toBe('fd00:10:96::13');
  });

  it('canonical IPv6 per RFC 5952', () => {
    expect(canonicalIP('FD00:0010:0244:0000:0000:0000:0000:0021')).toBe('fd00:10:244::21');
    expect(canonicalIP('2001:db8:0:0:1:0:0:1')).toBe('2001:db8::1:0:0:1');
    expect(canonicalIP('::1')).toBe('::1');
    expect(canonicalIP('fd00::')).toBe('fd00::');
    expect(canonicalIP('1.2.3.4')).toBe('1.2.3.4');
    expect(canonicalIP('nope')).toBeUndefined();
  });

  it('expands CIDRs into reverse zones (docs/corefile.md §6.3)', () => {
    expect(reverseZonesFromCidr('10.0.0.0/8')).toEqual(['10.in-addr.arpa.']);
    expect(reverseZonesFromCidr('10.0.0.0/15')).toEqual(['0.10.in-addr.arpa.', '1.10.in-addr.arpa.']);
    expect(reverseZonesFromCidr('10.0.0.0/17')).toHaveLength(128);
    expect(reverseZonesFromCidr('10.9.3.0/18')![0]).toBe('0.9.10.in-addr.arpa.');
    expect(reverseZonesFromCidr('192.168.1.0/24')).toEqual(['1.168.192.in-addr.arpa.']);
    expect(reverseZonesFromCidr('2001:db8::/32')).toEqual(['8.b.d.0.1.0.0.2.ip6.arpa.']);
    expect(reverseZonesFromCidr('2001:db8::/30')).toEqual([
      '8.b.d.0.1.0.0.2.ip6.arpa.',
      '9.b.d.0.1.0.0.2.ip6.arpa.',
      'a.b.d.0.1.0.0.2.ip6.arpa.',
      'b.b.d.0.1.0.0.2.ip6.arpa.',
    ]);
    expect(reverseZonesFromCidr('fd00:10:96::/112')).toEqual([
      '0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa.',
    ]);
    expect(() => reverseZonesFromCidr('::/64')).toThrow(/invalid CIDR/);
    expect(reverseZonesFromCidr('example.org')).toBeUndefined();
  });

  it('normalises plugin zone arguments and drops bad ones', () => {
    expect(normalizeZoneArg('Cluster.Local')).toEqual(['cluster.local.']);
    expect(normalizeZoneArg('dns://example.org:1053')).toEqual(['example.org.']);
    expect(normalizeZoneArg('10.0.0.0/8')).toEqual(['10.in-addr.arpa.']);
    expect(normalizeZoneArg('10.0.0.0/')).toEqual([]);
    expect(normalizeZoneArg('.')).toEqual(['.']);
  });

  it('lowerName folds ASCII letters only and keeps a lower-case name as it is', () => {
    const lower = 'svc.cluster.local.';
    expect(lowerName(lower)).toBe(lower);
    expect(lowerName('SvC.Cluster.LOCAL.')).toBe(lower);
    // RFC 4343: only A-Z fold; a non-ASCII letter keeps its case.
    expect(lowerName('ÄB.Example.')).toBe('Äb.example.');
    expect(lowerName('A\\065.')).toBe('a\\065.');
  });
});

describe('dns-packet type and class strings', () => {
  it('are the mnemonic when known and UNKNOWN_<n> otherwise, both ways', () => {
    expect(packetTypeName(28)).toBe('AAAA');
    expect(packetTypeName(65534)).toBe('UNKNOWN_65534');
    expect(packetTypeCode('aaaa')).toBe(28);
    expect(packetTypeCode('TYPE65')).toBe(65);
    expect(packetTypeCode('UNKNOWN_65534')).toBe(65534);
    expect(packetTypeCode('NOPE')).toBeUndefined();
    expect(packetClassName(3)).toBe('CH');
    expect(packetClassName(2)).toBe('CS');
    expect(packetClassName(5)).toBe('UNKNOWN_5');
    expect(packetClassCode('UNKNOWN_5')).toBe(5);
    expect(packetClassCode('UNKNOWN_2')).toBe(2);
    expect(packetClassCode('CLASS4')).toBe(4);
  });
});

describe('plain names on the wire', () => {
  it('writePlainName writes labels uncompressed, and readName reads them back', () => {
    for (const name of ['.', 'cluster.local.', '10-244-1-22.hl.testns.svc.cluster.local.']) {
      const buf = Buffer.alloc(300);
      const end = writePlainName(name, buf, 12);
      expect(end).toBe(12 + (name === '.' ? 1 : name.length + 1));
      expect(readName(buf, 12)).toEqual([name, end]);
    }
  });
});
