/**
 * rrLines (test/helpers/records.ts) prints records as dig's answer section does, so that expected
 * strings in tests read like dig output. The records go through the wire (dns-packet encode and
 * decode) as a reply's would.
 */
import * as dnsPacket from 'dns-packet';
import type { Answer } from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { rrLines } from './records.js';

/** The answer section as a client decodes it from the wire. */
function viaWire(answers: Answer[], additionals: Answer[] = []): { answers: Answer[]; additionals: Answer[] } {
  const m = dnsPacket.decode(dnsPacket.encode({ type: 'response', id: 1, answers, additionals }));
  return { answers: m.answers ?? [], additionals: m.additionals ?? [] };
}

describe('rrLines', () => {
  it('owner TTL CLASS TYPE rdata, names absolute', () => {
    const { answers } = viaWire([
      { name: 'www.example.org', type: 'A', class: 'IN', ttl: 300, data: '192.0.2.1' },
      { name: 'www.example.org', type: 'AAAA', class: 'IN', ttl: 300, data: '2001:db8::1' },
      { name: 'alias.example.org', type: 'CNAME', class: 'IN', ttl: 60, data: 'www.example.org' },
      { name: 'example.org', type: 'NS', class: 'IN', ttl: 60, data: 'ns1.example.org' },
      { name: '1.2.0.192.in-addr.arpa', type: 'PTR', class: 'IN', ttl: 60, data: 'www.example.org' },
      { name: 'd.example.org', type: 'DNAME', class: 'IN', ttl: 60, data: 'example.com' },
      { name: 'example.org', type: 'MX', class: 'IN', ttl: 60, data: { preference: 10, exchange: 'mail.example.org' } },
      {
        name: '_http._tcp.example.org',
        type: 'SRV',
        class: 'IN',
        ttl: 5,
        data: { priority: 0, weight: 100, port: 80, target: 'www.example.org' },
      },
      { name: 'example.org', type: 'CAA', class: 'IN', ttl: 60, data: { flags: 0, tag: 'issue', value: 'ca.example' } },
      { name: 'host.example.org', type: 'HINFO', class: 'IN', ttl: 60, data: { cpu: 'x86', os: 'Linux' } },
    ]);
    expect(rrLines(answers)).toEqual([
      'www.example.org. 300 IN A 192.0.2.1',
      'www.example.org. 300 IN AAAA 2001:db8::1',
      'alias.example.org. 60 IN CNAME www.example.org.',
      'example.org. 60 IN NS ns1.example.org.',
      '1.2.0.192.in-addr.arpa. 60 IN PTR www.example.org.',
      'd.example.org. 60 IN DNAME example.com.',
      'example.org. 60 IN MX 10 mail.example.org.',
      '_http._tcp.example.org. 5 IN SRV 0 100 80 www.example.org.',
      'example.org. 60 IN CAA 0 issue "ca.example"',
      'host.example.org. 60 IN HINFO "x86" "Linux"',
    ]);
  });

  it('the root is `.`; other classes by their mnemonic', () => {
    const { answers } = viaWire([
      { name: '.', type: 'NS', class: 'IN', ttl: 5, data: 'a.root-servers.net' },
      { name: 'version.bind', type: 'TXT', class: 'CH', ttl: 0, data: 'v1' },
    ]);
    expect(rrLines(answers)).toEqual(['. 5 IN NS a.root-servers.net.', 'version.bind. 0 CH TXT "v1"']);
  });

  it('TXT: each string quoted, `"` and `\\` escaped, other non-printing octets as \\DDD', () => {
    const { answers } = viaWire([
      {
        name: 't.example.org',
        type: 'TXT',
        class: 'IN',
        ttl: 60,
        data: [
          Buffer.from('a b'),
          Buffer.from('q"uote'),
          Buffer.from('back\\slash'),
          Buffer.from([0xff, 0x01]),
          Buffer.from(''),
        ],
      },
    ]);
    expect(rrLines(answers)).toEqual(['t.example.org. 60 IN TXT "a b" "q\\"uote" "back\\\\slash" "\\255\\001" ""']);
  });

  it('SOA: the serial as it is, or `<serial>` when asked', () => {
    const soa: Answer = {
      name: 'example.org',
      type: 'SOA',
      class: 'IN',
      ttl: 5,
      data: {
        mname: 'ns.dns.example.org',
        rname: 'hostmaster.example.org',
        serial: 1732700000,
        refresh: 7200,
        retry: 1800,
        expire: 86400,
        minimum: 5,
      },
    };
    const { answers } = viaWire([soa]);
    expect(rrLines(answers)).toEqual([
      'example.org. 5 IN SOA ns.dns.example.org. hostmaster.example.org. 1732700000 7200 1800 86400 5',
    ]);
    expect(rrLines(answers, { maskSerial: true })).toEqual([
      'example.org. 5 IN SOA ns.dns.example.org. hostmaster.example.org. <serial> 7200 1800 86400 5',
    ]);
  });

  it('a type dns-packet does not know: RFC 3597 generic form, as dig prints it', () => {
    const { answers } = viaWire([
      {
        name: 'x.example.org',
        type: 'UNKNOWN_65280',
        class: 'IN',
        ttl: 10,
        data: Buffer.from([1, 2, 3]),
      } as unknown as Answer,
    ]);
    expect(rrLines(answers)).toEqual(['x.example.org. 10 IN TYPE65280 \\# 3 010203']);
  });

  it('leaves the OPT pseudo-record out of an additional section', () => {
    const { additionals } = viaWire(
      [],
      [
        { name: 'ns.example.org', type: 'A', class: 'IN', ttl: 5, data: '192.0.2.53' },
        { name: '.', type: 'OPT', udpPayloadSize: 1232, flags: 0, options: [] } as unknown as Answer,
      ],
    );
    expect(additionals.map((r) => r.type)).toEqual(['A', 'OPT']);
    expect(rrLines(additionals)).toEqual(['ns.example.org. 5 IN A 192.0.2.53']);
  });

  it('a type with no presentation form here is an error naming it', () => {
    const { answers } = viaWire([
      {
        name: 'example.org',
        type: 'DS',
        class: 'IN',
        ttl: 60,
        data: { keyTag: 1, algorithm: 13, digestType: 2, digest: Buffer.alloc(32) },
      },
    ]);
    expect(() => rrLines(answers)).toThrow(/no presentation form for DS/);
  });

  it('no section: no lines', () => {
    expect(rrLines(undefined)).toEqual([]);
  });
});
