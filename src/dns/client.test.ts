import * as dgram from 'node:dgram';
import * as net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { exchange, isTruncated, tcpExchange, udpExchange } from './client.js';
import { Flag } from './constants.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A reply to `q`: the query with QR set, `extra` flags and one marker byte appended. */
function answer(q: Buffer, extra: number, marker: number): Buffer {
  const r = Buffer.concat([q, Buffer.from([marker])]);
  r.writeUInt16BE(q.readUInt16BE(2) | Flag.QR | extra, 2);
  return r;
}

/** UDP answers truncated, TCP answers in full, on one port. */
async function server(): Promise<number> {
  const tcp = net.createServer((c) => {
    let buf = Buffer.alloc(0);
    c.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const q = buf.subarray(2, 2 + buf.readUInt16BE(0));
        buf = buf.subarray(2 + q.length);
        const r = answer(q, 0, 2);
        const len = Buffer.alloc(2);
        len.writeUInt16BE(r.length);
        c.write(Buffer.concat([len, r]));
      }
    });
  });
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', () => r()));
  const port = (tcp.address() as net.AddressInfo).port;
  const udp = dgram.createSocket('udp4');
  udp.on('message', (q, rinfo) => udp.send(answer(q, Flag.TC, 1), rinfo.port, rinfo.address));
  await new Promise<void>((r) => udp.bind(port, '127.0.0.1', () => r()));
  cleanups.push(() => {
    tcp.close();
    udp.close();
  });
  return port;
}

const QUERY = Buffer.from('12340100000100000000000003777777076578616d706c6503636f6d0000010001', 'hex');

describe('DNS client', () => {
  it('UDP: the first datagram back, and the client port it came to', async () => {
    const port = await server();
    const { reply, localPort } = await udpExchange(QUERY, { port });
    expect(reply.at(-1)).toBe(1);
    expect(isTruncated(reply)).toBe(true);
    expect(localPort).toBeGreaterThan(0);
  });

  it('TCP: pipelined queries on one connection, every reply', async () => {
    const port = await server();
    const replies = await tcpExchange([QUERY, QUERY], { port });
    expect(replies.map((r) => r.at(-1))).toEqual([2, 2]);
  });

  it('exchange asks again over TCP when the UDP reply is truncated', async () => {
    const port = await server();
    const reply = await exchange(QUERY, { port });
    expect(isTruncated(reply)).toBe(false);
    expect(reply.at(-1)).toBe(2);
  });

  it('a UDP query nobody answers ends with an error', async () => {
    const silent = dgram.createSocket('udp4');
    await new Promise<void>((r) => silent.bind(0, '127.0.0.1', () => r()));
    cleanups.push(() => silent.close());
    await expect(udpExchange(QUERY, { port: silent.address().port, timeoutMs: 50 })).rejects.toThrow(/timed out/);
  });
});

/** A UDP server that answers each query twice: first with another ID, then with the query's. */
async function wrongIdFirst(): Promise<number> {
  const udp = dgram.createSocket('udp4');
  udp.on('message', (q, rinfo) => {
    const wrong = answer(q, 0, 7);
    wrong.writeUInt16BE(q.readUInt16BE(0) ^ 0xffff, 0);
    udp.send(wrong, rinfo.port, rinfo.address, () => udp.send(answer(q, 0, 8), rinfo.port, rinfo.address));
  });
  await new Promise<void>((r) => udp.bind(0, '127.0.0.1', () => r()));
  cleanups.push(() => udp.close());
  return udp.address().port;
}

describe('udpExchange options', () => {
  const query = Buffer.from('abcd01000001000000000000000000010001', 'hex');

  it('matchId: a datagram with another ID is ignored, the reply with the query ID is taken', async () => {
    const port = await wrongIdFirst();
    expect((await udpExchange(query, { port })).reply.at(-1)).toBe(7);
    expect((await udpExchange(query, { port, matchId: true })).reply.at(-1)).toBe(8);
  });

  it('signal: an aborted exchange ends with an error instead of waiting for its timeout', async () => {
    const silent = dgram.createSocket('udp4');
    await new Promise<void>((r) => silent.bind(0, '127.0.0.1', () => r()));
    cleanups.push(() => silent.close());
    const abort = new AbortController();
    const pending = udpExchange(query, { port: silent.address().port, timeoutMs: 600_000, signal: abort.signal });
    abort.abort();
    await expect(pending).rejects.toThrow(/aborted/);
    const already = new AbortController();
    already.abort();
    await expect(udpExchange(query, { port: silent.address().port, signal: already.signal })).rejects.toThrow(
      /aborted/,
    );
  });
});
