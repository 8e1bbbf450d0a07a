import type { Answer } from 'dns-packet';
import * as dnsPacket from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../util/prng.js';
import { MAX_RECORD_BYTES, writeRecord } from './rrwrite.js';

/** What dns-packet's own codec writes for `rr` (the bytes the transfer plugin sent before). */
function reference(rr: Answer): Buffer {
  const codec = (dnsPacket as unknown as { answer: { encode(a: Answer): Buffer } }).answer;
  return Buffer.from(codec.encode(rr));
}

function written(rr: Answer): Buffer {
  const buf = Buffer.alloc(MAX_RECORD_BYTES + 8, 0xee);
  const n = writeRecord(rr, buf, 3);
  return Buffer.from(buf.subarray(3, 3 + n));
}

describe('writeRecord', () => {
  const cases: Answer[] = [
    { name: 'svc.ns.svc.cluster.local', type: 'A', class: 'IN', ttl: 5, data: '10.96.0.10' },
    { name: 'svc.ns.svc.cluster.local', type: 'A', ttl: 0, data: '0.0.0.0' },
    { name: 'svc.ns.svc.cluster.local', type: 'A', class: 'IN', ttl: 4294967295, data: '255.255.255.255' },
    { name: 'svc.ns.svc.cluster.local', type: 'AAAA', class: 'IN', ttl: 5, data: 'fd00::1' },
    { name: 'cluster.local', type: 'NS', class: 'IN', ttl: 5, data: 'ns.dns.cluster.local' },
    { name: 'x.cluster.local', type: 'CNAME', class: 'IN', ttl: 5, data: 'example.com' },
    { name: '1.0.96.10.in-addr.arpa', type: 'PTR', class: 'IN', ttl: 5, data: 'svc.ns.svc.cluster.local' },
    {
      name: '_http._tcp.svc.ns.svc.cluster.local',
      type: 'SRV',
      class: 'IN',
      ttl: 5,
      data: { priority: 0, weight: 33, port: 8080, target: '10-0-0-1.svc.ns.svc.cluster.local' },
    },
    // Names and data the fast path leaves to dns-packet: its bytes either way.
    { name: '.', type: 'NS', class: 'IN', ttl: 5, data: '.' },
    { name: 'trailing.dot.', type: 'A', class: 'IN', ttl: 5, data: '10.0.0.1' },
    { name: 'ünï.cöde', type: 'CNAME', class: 'IN', ttl: 5, data: 'tärget.example' },
    { name: 'esc\\.aped.example', type: 'CNAME', class: 'IN', ttl: 5, data: 'a\\032b.example' },
    { name: 'a.example', type: 'A', class: 'CH', ttl: 5, data: '10.0.0.1' },
    { name: 'a.example', type: 'A', class: 'IN', ttl: 5, data: '010.0.0.1' },
    { name: 'a.example', type: 'TXT', class: 'IN', ttl: 5, data: ['hello'] },
    { name: `${'l'.repeat(63)}.example`, type: 'A', class: 'IN', ttl: 5, data: '10.0.0.1' },
    {
      name: 'cluster.local',
      type: 'SOA',
      class: 'IN',
      ttl: 5,
      data: {
        mname: 'ns.dns.cluster.local',
        rname: 'hostmaster.cluster.local',
        serial: 1,
        refresh: 7200,
        retry: 1800,
        expire: 86400,
        minimum: 5,
      },
    },
  ];
  for (const rr of cases) {
    it(`writes ${rr.type} ${rr.name} as dns-packet does`, () => {
      expect(written(rr).toString('hex')).toBe(reference(rr).toString('hex'));
    });
  }

  it('writes random A, SRV and CNAME records as dns-packet does', () => {
    const rand = seededRandom(27);
    const label = (): string => {
      const n = 1 + Math.floor(rand() * 20);
      let s = '';
      for (let i = 0; i < n; i++) s += 'abcdefghijklmnopqrstuvwxyz0123456789-_'[Math.floor(rand() * 38)];
      return s;
    };
    const name = (): string => Array.from({ length: 1 + Math.floor(rand() * 6) }, label).join('.');
    const ip = (): string => Array.from({ length: 4 }, () => Math.floor(rand() * 256)).join('.');
    for (let i = 0; i < 600; i++) {
      const ttl = Math.floor(rand() * 100000);
      const k = i % 3;
      const rr: Answer =
        k === 0
          ? { name: name(), type: 'A', class: 'IN', ttl, data: ip() }
          : k === 1
            ? {
                name: name(),
                type: 'SRV',
                class: 'IN',
                ttl,
                data: {
                  priority: Math.floor(rand() * 65536),
                  weight: Math.floor(rand() * 65536),
                  port: Math.floor(rand() * 65536),
                  target: name(),
                },
              }
            : { name: name(), type: 'CNAME', class: 'IN', ttl, data: name() };
      expect(written(rr).toString('hex')).toBe(reference(rr).toString('hex'));
    }
  });
});
