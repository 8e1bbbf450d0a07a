/**
 * The AXFR client against a scripted primary: a transfer over several messages, RDATA names
 * compressed by the primary, and the failures worded as miekg/dns words them — a refused transfer,
 * a reply without SOA or with another id, a dead primary, and one that stalls, trickles or sends
 * more than the bound (each ends in an error instead of a hang).
 */
import * as net from 'node:net';
import * as dnsPacket from 'dns-packet';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../test/helpers/net.js';
import { axfrIn, soaSerialOf } from './axfr.js';
import { answerRecords } from './wirerecords.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const SOA = {
  mname: 'ns1.example.org',
  rname: 'hostmaster.example.org',
  serial: 7,
  refresh: 1,
  retry: 1,
  expire: 1,
  minimum: 60,
};

function reply(id: number, answers: dnsPacket.Answer[], rcode = 0): Buffer {
  return dnsPacket.encode({
    id,
    type: 'response',
    flags: rcode,
    questions: [{ name: 'example.org', type: 'AXFR', class: 'IN' }],
    answers,
  });
}

/** A TCP server that answers each framed query with what `script` returns (raw frames), or nothing. */
async function scriptedPrimary(
  script: (query: Buffer) => Buffer[] | 'stall' | 'trickle',
): Promise<{ addr: string; connections: () => number }> {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((sock) => {
    connections++;
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => undefined);
    sock.once('data', (chunk) => {
      const q = chunk.subarray(2, 2 + chunk.readUInt16BE(0));
      const out = script(q);
      if (out === 'stall') return;
      if (out === 'trickle') {
        const msg = reply(q.readUInt16BE(0), [{ name: 'example.org', type: 'SOA', data: SOA }]);
        const len = Buffer.alloc(2);
        len.writeUInt16BE(msg.length + 1000);
        sock.write(Buffer.concat([len, msg]));
        const t = setInterval(() => sock.write(Buffer.alloc(1)), 50);
        sock.on('close', () => clearInterval(t));
        return;
      }
      for (const m of out) {
        const len = Buffer.alloc(2);
        len.writeUInt16BE(m.length);
        sock.write(Buffer.concat([len, m]));
      }
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        srv.close(() => r());
      }),
  );
  return { addr: `127.0.0.1:${(srv.address() as net.AddressInfo).port}`, connections: () => connections };
}

describe('AXFR client', () => {
  it('reads a transfer over several messages, SOA first and last', async () => {
    const p = await scriptedPrimary((q) => {
      const id = q.readUInt16BE(0);
      return [
        reply(id, [{ name: 'example.org', type: 'SOA', data: SOA }]),
        reply(id, [
          { name: 'example.org', type: 'NS', data: 'ns1.example.org' },
          { name: 'ns1.example.org', type: 'A', data: '192.0.2.53' },
        ]),
        reply(id, [
          { name: 'www.example.org', type: 'A', data: '192.0.2.80' },
          { name: 'example.org', type: 'SOA', data: SOA },
        ]),
      ];
    });
    const got = await axfrIn('example.org.', p.addr);
    expect(got.messages).toHaveLength(3);
    expect(got.records.map((r) => `${r.name} ${r.type}`)).toEqual([
      'example.org. 6',
      'example.org. 2',
      'ns1.example.org. 1',
      'www.example.org. 1',
      'example.org. 6',
    ]);
    expect(got.records[0]!.serial).toBe(7);
    expect(await soaSerialOf('example.org.', p.addr)).toBe(7);
  });

  it('expands names compressed inside RDATA', () => {
    // dns-packet compresses RDATA names of NS, CNAME, SOA and MX, as BIND does.
    const msg = reply(1, [
      { name: 'example.org', type: 'SOA', data: SOA },
      { name: 'example.org', type: 'NS', data: 'ns1.example.org' },
      { name: 'example.org', type: 'MX', data: { preference: 10, exchange: 'mail.example.org' } },
      { name: 'www.example.org', type: 'CNAME', data: 'example.org' },
    ]);
    const rrs = answerRecords(msg, 'test');
    expect(rrs.map((r) => r.target ?? '')).toEqual(['', 'ns1.example.org.', 'mail.example.org.', 'example.org.']);
    // The stored RDATA holds no pointer: the NS target written out in full.
    expect(rrs[1]!.rdata.equals(Buffer.from('\x03ns1\x07example\x03org\x00', 'latin1'))).toBe(true);
    expect(rrs[0]!.serial).toBe(7);
  });

  it("fails with miekg's words on a refused transfer, a reply without SOA, a dead primary", async () => {
    const refused = await scriptedPrimary((q) => [reply(q.readUInt16BE(0), [], 5)]);
    await expect(axfrIn('example.org.', refused.addr)).rejects.toThrow('dns: bad xfr rcode: 5');
    const noSoa = await scriptedPrimary((q) => [
      reply(q.readUInt16BE(0), [{ name: 'www.example.org', type: 'A', data: '192.0.2.80' }]),
    ]);
    await expect(axfrIn('example.org.', noSoa.addr)).rejects.toThrow('dns: no SOA');
    const otherId = await scriptedPrimary((q) => [
      reply((q.readUInt16BE(0) + 1) & 0xffff, [{ name: 'example.org', type: 'SOA', data: SOA }]),
    ]);
    await expect(axfrIn('example.org.', otherId.addr)).rejects.toThrow('dns: id mismatch');
    const port = await freePort(); // nobody listens there
    await expect(axfrIn('example.org.', `127.0.0.1:${port}`)).rejects.toMatchObject({
      message: `dial tcp 127.0.0.1:${port}: connect: connection refused`,
      setup: true,
    });
  });

  it('gives up on a primary that stalls, trickles or sends too much, instead of hanging', async () => {
    const stalled = await scriptedPrimary(() => 'stall');
    await expect(axfrIn('example.org.', stalled.addr, { timeoutMs: 200 })).rejects.toThrow(/i\/o timeout$/);
    await expect(soaSerialOf('example.org.', stalled.addr, { timeoutMs: 200 })).rejects.toThrow(/i\/o timeout$/);
    const trickle = await scriptedPrimary(() => 'trickle');
    await expect(axfrIn('example.org.', trickle.addr, { timeoutMs: 1000, deadlineMs: 300 })).rejects.toThrow(
      /i\/o timeout$/,
    );
    const endless = await scriptedPrimary((q) => {
      const id = q.readUInt16BE(0);
      const many: Buffer[] = [reply(id, [{ name: 'example.org', type: 'SOA', data: SOA }])];
      for (let i = 0; i < 50; i++) many.push(reply(id, [{ name: `h${i}.example.org`, type: 'A', data: '192.0.2.1' }]));
      return many;
    });
    await expect(axfrIn('example.org.', endless.addr, { maxBytes: 1000 })).rejects.toThrow(/larger than 1000 bytes/);
  });
});
