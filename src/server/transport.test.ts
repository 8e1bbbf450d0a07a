import * as dnsPacket from 'dns-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode } from '../dns/message.js';
import { encodeQuery, rcode, tcpQueries, udpExchange, udpQuery } from '../../test/helpers/dns.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';

describe('transport and message rules (whoami)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer('example.org {\n  whoami\n}\nempty.test {\n}\n');
  });
  afterAll(() => s.stop());

  it('answers over UDP with the client address and port, echoing the question case', async () => {
    const r = await udpQuery(s.port, 'WwW.Example.ORG', 'A', { id: 4242 });
    expect(r.id).toBe(4242);
    expect(rcode(r)).toBe(0);
    expect(r.flag_qr).toBe(true);
    expect(r.flag_aa).toBe(true);
    expect(r.flag_rd).toBe(true);
    expect(r.questions[0]!.name).toBe('WwW.Example.ORG');
    expect(r.answers).toHaveLength(0);
    const a = r.additionals.find((x) => x.type === 'A') as dnsPacket.StringAnswer;
    expect(a.name).toBe('WwW.Example.ORG');
    expect(a.data).toBe('127.0.0.1');
    const srv = r.additionals.find((x) => x.type === 'SRV') as dnsPacket.SrvAnswer;
    expect(srv.name).toBe('_udp.WwW.Example.ORG');
    expect(srv.data.port).toBeGreaterThan(0);
  });

  it('answers several pipelined queries on one TCP connection', async () => {
    const packets = [1, 2, 3, 4, 5].map((id) => encodeQuery(`q${id}.example.org`, 'A', { id }));
    const replies = await tcpQueries(s.port, packets);
    expect(replies.map((r) => r.id).sort()).toEqual([1, 2, 3, 4, 5]);
    for (const r of replies)
      expect(r.additionals.some((x) => x.type === 'SRV' && x.name.startsWith('_tcp.'))).toBe(true);
  });

  it('answers over IPv6 loopback', async () => {
    const r = await udpQuery(s.port, 'example.org', 'AAAA', { host: '::1' });
    const aaaa = r.additionals.find((x) => x.type === 'AAAA') as dnsPacket.StringAnswer;
    expect(aaaa.data).toBe('::1');
  });

  it('refuses a zone no block serves, and a block without plugins', async () => {
    expect(rcode(await udpQuery(s.port, 'www.google.com', 'A'))).toBe(5);
    expect(rcode(await udpQuery(s.port, 'x.empty.test', 'A'))).toBe(5);
  });

  it('echoes EDNS with the client size and DO bit, and gives BADVERS for version 1', async () => {
    const r = await udpQuery(s.port, 'example.org', 'A', { edns: 1400, do: true });
    const opt = r.additionals.find((x) => x.type === 'OPT') as unknown as { udpPayloadSize: number; flag_do: boolean };
    expect(opt.udpPayloadSize).toBe(1400);
    expect(opt.flag_do).toBe(true);
    const q = encodeQuery('example.org', 'A', { edns: 1232 });
    // OPT version byte: the OPT RR starts after the question; version is at offset +6 from its start.
    const optStart = q.length - 11;
    q[optStart + 6] = 1;
    const raw = await udpExchange(s.port, q);
    const m = decode(raw);
    const ropt = m.additionals.find((x) => x.type === 'OPT') as unknown as {
      extendedRcode: number;
      ednsVersion: number;
    };
    expect(rcode(m)).toBe(0);
    expect(ropt.extendedRcode).toBe(1); // BADVERS = 16 = (1 << 4) | 0
    expect(ropt.ednsVersion).toBe(0);
  });

  it('gives NOTIMP for other opcodes and FORMERR for QDCOUNT != 1', async () => {
    const q = encodeQuery('example.org', 'A');
    q.writeUInt16BE((q.readUInt16BE(2) & ~0x7800) | (2 << 11), 2); // STATUS
    expect(decode(await udpExchange(s.port, q)).flags! & 0xf).toBe(4);
    const z = encodeQuery('example.org', 'A');
    z.writeUInt16BE(2, 4);
    const r = await udpExchange(s.port, z);
    expect(r[3]! & 0xf).toBe(1);
  });

  it('drops packets whose header cannot be read and keeps answering', async () => {
    await expect(udpExchange(s.port, Buffer.from([1, 2, 3]), 300)).rejects.toThrow(/timed out/);
    expect(rcode(await udpQuery(s.port, 'example.org', 'A'))).toBe(0);
  });
});
