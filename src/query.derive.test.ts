/** Query.derive(): the raw packet rebuilt for another question, additional records kept. */
import { describe, expect, it } from 'vitest';
import { makeQuery } from '../test/helpers/dns.js';
import { Qtype } from './dns/constants.js';
import { parseRequest } from './dns/wire.js';

describe('Query.derive', () => {
  it('writes the new question and keeps the header and the OPT record', () => {
    const q = makeQuery('a.example.', 'A', { edns: 1232 });
    const d = q.derive('b.Example.org.', Qtype.AAAA);
    expect(d.raw.subarray(0, 12)).toEqual(q.raw.subarray(0, 12));
    expect(d.raw.subarray(12, 12 + 15)).toEqual(Buffer.from('\x01b\x07Example\x03org\x00', 'latin1'));
    expect(d.raw.readUInt16BE(27)).toBe(Qtype.AAAA);
    expect(d.raw.subarray(d.req.questionEnd)).toEqual(q.raw.subarray(q.req.questionEnd));
    const parsed = parseRequest(d.raw);
    expect(parsed.kind === 'query' && parsed.req.name).toBe('b.Example.org.');
    expect(parsed.kind === 'query' && parsed.req.edns?.udpSize).toBe(1232);
  });

  it('writes a non-ASCII character as its UTF-8 bytes, as CoreDNS packs Corefile text', () => {
    // é is U+00E9: latin1 would write the single byte e9; the name came from a rewrite rule
    // (Corefile text), whose bytes CoreDNS sends as they are: c3 a9, and a label length of 5.
    const q = makeQuery('a.example.', 'A');
    const d = q.derive('café.example.');
    expect(d.raw.subarray(12, d.req.questionEnd)).toEqual(
      Buffer.from([5, 0x63, 0x61, 0x66, 0xc3, 0xa9, 7, ...Buffer.from('example'), 0, 0, 1, 0, 1]),
    );
    expect(d.raw.length).toBe(d.req.questionEnd);
    const parsed = parseRequest(d.raw);
    expect(parsed.kind === 'query' && parsed.req.name).toBe('caf\\195\\169.example.');
  });

  it('writes the root name as one zero byte', () => {
    const q = makeQuery('a.example.', 'A');
    const d = q.derive('.', Qtype.NS);
    expect(d.raw.subarray(12)).toEqual(Buffer.from([0, 0, 2, 0, 1]));
  });
});
