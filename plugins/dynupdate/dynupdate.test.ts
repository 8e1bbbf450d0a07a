/**
 * dynupdate's transaction engine (RFC 2136 as CoreDNS 1.15.0 applies it) on records read from
 * zone text, its setup errors, and the database round trip. The wire path with real clients
 * (nsupdate, dig) is in test/differential/dynupdate.test.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Rcode } from '../../src/dns/constants.js';
import { parseZoneRecords } from '../../src/dns/zonefile/parser.js';
import type { ZoneRecord } from '../../src/dns/zonefile/record.js';
import { runCorefile } from '../../test/helpers/corefile.js';
import { rrLines } from '../../test/helpers/records.js';
import { dispenserFor } from '../../test/helpers/setup.js';
import { DEFAULT_LIMITS, DynamicZone } from './engine.js';
import { parseDynupdate } from './setup.js';
import { readDatabase, writeDatabase } from './store.js';

const ORIGIN = 'example.org.';
const SEED = `$ORIGIN example.org.
@ 60 IN SOA ns hostmaster 1 3600 600 86400 60
@ 60 IN NS ns
ns 60 IN A 192.0.2.53
www 60 IN A 192.0.2.1
`;

function rrs(text: string): ZoneRecord[] {
  const { records, error } = parseZoneRecords(`$ORIGIN example.org.\n${text}`, { origin: ORIGIN, file: 'test' });
  if (error) throw error;
  return records;
}
/** Records with another class (NONE/ANY forms): class and, for ANY, no RDATA. */
function cls(r: ZoneRecord[], klass: number, empty = false): ZoneRecord[] {
  return r.map((x) => ({ ...x, class: klass, ttl: 0, ...(empty ? { rdata: Buffer.alloc(0) } : {}) }));
}

const zone = new DynamicZone(
  ORIGIN,
  [
    { key: 'k.', name: '*', types: new Set(), allTypes: true },
    { key: 'narrow.', name: 'host.example.org.', types: new Set([1]), allTypes: false },
  ],
  DEFAULT_LIMITS,
);
const seed = rrs(SEED);
const serialOf = (records: readonly ZoneRecord[]): number =>
  records.find((r) => r.type === 6)!.rdata.readUInt32BE(records.find((r) => r.type === 6)!.rdata.length - 20);

describe('dynupdate engine', () => {
  it('adds, bumps the serial, and keeps the old records untouched', () => {
    const r = zone.update(seed, 'k.', [], rrs('host 60 IN A 192.0.2.10'));
    expect(r.rcode).toBe(Rcode.NOERROR);
    expect(r.records!.length).toBe(seed.length + 1);
    expect(serialOf(r.records!)).toBe(2);
    expect(seed.length).toBe(4);
  });

  it('prerequisites: NXRRSET, YXRRSET, NXDOMAIN, YXDOMAIN, NOTZONE, FORMERR for a TTL', () => {
    expect(zone.update(seed, 'k.', cls(rrs('www 0 IN TXT "x"'), 255, true), []).rcode).toBe(Rcode.NXRRSET);
    expect(zone.update(seed, 'k.', cls(rrs('www 0 IN A 192.0.2.1'), 254, true), []).rcode).toBe(Rcode.YXRRSET);
    const anyType = (name: string, klass: number): ZoneRecord[] => [
      { name, type: 255, class: klass, ttl: 0, rdata: Buffer.alloc(0), file: '', line: 0 },
    ];
    expect(zone.update(seed, 'k.', anyType('nope.example.org.', 255), []).rcode).toBe(Rcode.NXDOMAIN);
    expect(zone.update(seed, 'k.', anyType('www.example.org.', 254), []).rcode).toBe(Rcode.YXDOMAIN);
    expect(zone.update(seed, 'k.', anyType('www.example.com.', 255), []).rcode).toBe(Rcode.NOTZONE);
    expect(zone.update(seed, 'k.', rrs('www 60 IN A 192.0.2.1'), []).rcode).toBe(Rcode.FORMERR);
    // Value-dependent: the whole RRset must match.
    expect(zone.update(seed, 'k.', cls(rrs('www 0 IN A 192.0.2.1'), 1), []).rcode).toBe(Rcode.NOERROR);
    expect(zone.update(seed, 'k.', cls(rrs('www 0 IN A 192.0.2.2'), 1), []).rcode).toBe(Rcode.NXRRSET);
  });

  it('authorisation: unknown key and a type outside the rule are REFUSED', () => {
    expect(zone.update(seed, 'other.', [], rrs('host 60 IN A 192.0.2.10')).rcode).toBe(Rcode.REFUSED);
    expect(zone.update(seed, 'narrow.', [], rrs('host 60 IN AAAA 2001:db8::1')).rcode).toBe(Rcode.REFUSED);
    expect(zone.update(seed, 'narrow.', [], rrs('host 60 IN A 192.0.2.10')).rcode).toBe(Rcode.NOERROR);
  });

  it('CNAME and apex invariants; DNSSEC types NOTIMP; SOA serial 0 FORMERR', () => {
    const r = zone.update(seed, 'k.', [], rrs('www 60 IN CNAME ns'));
    expect(r.rcode).toBe(Rcode.NOERROR);
    expect(r.records).toBeNull();
    const apexNs = zone.update(seed, 'k.', [], cls(rrs('@ 0 IN NS ns'), 254));
    expect(apexNs.records).toBeNull();
    const delAll = zone.update(seed, 'k.', [], [{ ...cls(rrs('@ 0 IN A 192.0.2.1'), 255, true)[0]!, type: 255 }]);
    expect(delAll.records).toBeNull();
    expect(zone.update(seed, 'k.', [], rrs('www 60 IN DS 1 8 2 AABB')).rcode).toBe(Rcode.NOTIMP);
    expect(zone.update(seed, 'k.', [], rrs('@ 60 IN SOA ns hostmaster 0 3600 600 86400 60')).rcode).toBe(Rcode.FORMERR);
    const soa = zone.update(seed, 'k.', [], rrs('@ 60 IN SOA ns hostmaster 100 3600 600 86400 60'));
    expect(serialOf(soa.records!)).toBe(100);
  });

  it('deletes one record (CLASS NONE) and an RRset (CLASS ANY), names compared without case', () => {
    const one = zone.update(seed, 'k.', [], cls(rrs('WWW 0 IN A 192.0.2.1'), 254));
    expect(one.records!.some((r) => r.name === 'www.example.org.')).toBe(false);
    const set = zone.update(seed, 'k.', [], cls(rrs('ns 0 IN A 192.0.2.53'), 255, true));
    expect(set.records!.some((r) => r.name === 'ns.example.org.')).toBe(false);
  });

  it('limits: an update over max_update_records or a zone over max_records is REFUSED', () => {
    const tight = new DynamicZone(ORIGIN, [{ key: 'k.', name: '*', types: new Set(), allTypes: true }], {
      records: 4,
      bytes: 1 << 20,
      updateRecords: 1,
    });
    expect(tight.update(seed, 'k.', [], rrs('a 60 IN A 192.0.2.1\nb 60 IN A 192.0.2.2')).rcode).toBe(Rcode.REFUSED);
    const over = tight.update(seed, 'k.', [], rrs('a 60 IN A 192.0.2.1'));
    expect(over.rcode).toBe(Rcode.REFUSED);
    expect(over.error).toBe('zone exceeds max_records (4)');
  });
});

describe('dynupdate setup', () => {
  const err = (text: string): string => {
    try {
      parseDynupdate(dispenserFor(text, 'dynupdate'), ['example.org.']);
    } catch (e) {
      return (e as Error).message;
    }
    return '';
  };
  it('words its errors as CoreDNS', () => {
    expect(err('dynupdate {\n allow k. * *\n}')).toContain('file is required');
    expect(err('dynupdate {\n file db\n}')).toContain('at least one allow rule is required');
    expect(err('dynupdate {\n file db\n allow k. * FOO\n}')).toContain('invalid RR type "FOO" in allow rule');
    expect(err('dynupdate {\n file db\n allow k. x.example.com. A\n}')).toContain(
      'allow name "x.example.com." is outside zone "example.org."',
    );
    expect(err('dynupdate {\n file db\n allow k. * * A\n}')).toContain('wildcard RR type must be the only type');
    expect(err('dynupdate {\n file db\n file db2\n allow k. * *\n}')).toContain('file specified more than once');
    expect(err('dynupdate {\n file db\n max_records 0\n allow k. * *\n}')).toContain(
      'max_records requires a positive integer',
    );
    expect(err('dynupdate {\n file db\n bogus\n allow k. * *\n}')).toContain('unknown property "bogus"');
    expect(err('dynupdate a.org b.org {\n file db\n allow k. * *\n}')).toContain('exactly one zone is allowed');
  });
});

describe('dynupdate database', () => {
  it('round-trips the records and refuses another zone', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'dynupdate-')), 'zone.db');
    expect(readDatabase(path, ORIGIN, DEFAULT_LIMITS)).toBeNull();
    writeDatabase(path, ORIGIN, seed);
    const back = readDatabase(path, ORIGIN, DEFAULT_LIMITS)!;
    expect(back.map((r) => [r.name.toLowerCase(), r.type, r.ttl, r.rdata.toString('hex')])).toEqual(
      seed.map((r) => [r.name.toLowerCase(), r.type, r.ttl, r.rdata.toString('hex')]),
    );
    expect(() => readDatabase(path, 'other.org.', DEFAULT_LIMITS)).toThrow('database belongs to a different zone');
  });
});

describe('dynupdate with root', () => {
  it("reads the relative seed file and database from the block's root, as CoreDNS does", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dynupdate-root-'));
    writeFileSync(join(dir, 'db.example.org'), SEED);
    // A database beside it that differs from the seed: it wins, so the answer shows it was read.
    writeDatabase(join(dir, 'state.db'), ORIGIN, [...seed, ...rrs('db 60 IN A 192.0.2.99')]);
    const run = await runCorefile(
      `example.org {\n  root ${dir}\n  dynupdate {\n    file db.example.org\n    database state.db\n    allow k. * *\n  }\n}\n`,
    );
    try {
      expect(rrLines((await run.ask('db.example.org.', 'A')).answers)).toEqual(['db.example.org. 60 IN A 192.0.2.99']);
    } finally {
      await run.stop();
    }
    const seedOnly = await runCorefile(
      `example.org {\n  root ${dir}\n  dynupdate {\n    file db.example.org\n    allow k. * *\n  }\n}\n`,
    );
    try {
      expect(rrLines((await seedOnly.ask('www.example.org.', 'A')).answers)).toEqual([
        'www.example.org. 60 IN A 192.0.2.1',
      ]);
    } finally {
      await seedOnly.stop();
    }
  });
});
