/**
 * The sections of a received message as records: an RFC 2136 UPDATE read by sectionRecords
 * (compressed owners and RDATA names expanded, the RDATA-less ANY/NONE forms kept), the same
 * records messageRecords gives dnssec's reply path.
 */
import { describe, expect, it } from 'vitest';
import { messageRecords, sectionRecords } from './wirerecords.js';

/** zone example.org; prerequisite `example.org ANY A`; updates `www MX 10 mail`, delete `example.org NONE A 192.0.2.1`. */
const UPDATE = Buffer.concat([
  Buffer.from([0, 1, 0x28, 0, 0, 1, 0, 1, 0, 2, 0, 0]),
  Buffer.from('\x07example\x03org\x00\x00\x06\x00\x01', 'latin1'),
  Buffer.from([0xc0, 12, 0, 1, 0, 255, 0, 0, 0, 0, 0, 0]),
  Buffer.from('\x03www', 'latin1'),
  Buffer.from([0xc0, 12, 0, 15, 0, 1, 0, 0, 0, 60, 0, 9, 0, 10]),
  Buffer.from('\x04mail', 'latin1'),
  Buffer.from([0xc0, 12]),
  Buffer.from([0xc0, 12, 0, 1, 0, 254, 0, 0, 0, 0, 0, 4, 192, 0, 2, 1]),
]);

describe('sectionRecords', () => {
  it('reads an UPDATE section by section, names expanded, empty RDATA kept', () => {
    const [prereq, update, extra] = sectionRecords(UPDATE, 'UPDATE');
    expect(prereq).toEqual([
      { name: 'example.org.', type: 1, class: 255, ttl: 0, rdata: Buffer.alloc(0), file: 'UPDATE', line: 0 },
    ]);
    expect(update.map((r) => [r.name, r.type, r.class, r.ttl, r.rdata.toString('hex')])).toEqual([
      ['www.example.org.', 15, 1, 60, Buffer.from('\x00\x0a\x04mail\x07example\x03org\x00', 'latin1').toString('hex')],
      ['example.org.', 1, 254, 0, 'c0000201'],
    ]);
    expect(update[0]!.target).toBe('mail.example.org.');
    expect(extra).toEqual([]);
  });

  it('agrees with messageRecords record for record', () => {
    const flat = sectionRecords(UPDATE, 'UPDATE').flat();
    const wire = messageRecords(UPDATE);
    expect(flat.map((r) => [r.type, r.class, r.ttl, r.rdata])).toEqual(
      wire.map((r) => [r.type, r.class, r.ttl, r.rdata]),
    );
  });

  it('fails as messageRecords does on a cut message', () => {
    expect(() => sectionRecords(UPDATE.subarray(0, UPDATE.length - 2), 'UPDATE')).toThrow(
      'dns: overflow unpacking rdata',
    );
    expect(() => sectionRecords(Buffer.alloc(5), 'UPDATE')).toThrow('dns: overflow unpacking uint16');
  });
});
