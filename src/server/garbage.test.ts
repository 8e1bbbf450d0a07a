/**
 * Bad input must never stop the server: thousands of random and mutated packets over UDP and TCP,
 * then valid queries still answered correctly, no query left in flight and no TCP connection
 * left open (the in-flight counter and the connection set are where a leak would show).
 */
import * as net from 'node:net';
import * as dgram from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRequest } from '../dns/wire.js';
import { encodeQuery, rcode, tcpQueries, udpQuery } from '../../test/helpers/dns.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { seededRandom } from '../util/prng.js';

const BASE = [
  encodeQuery('www.example.org', 'A', { id: 1 }),
  encodeQuery('a.b.c.example.org', 'SRV', { id: 2, edns: 4096, do: true }),
  encodeQuery('example.org', 'TXT', {
    id: 3,
    edns: 1232,
    options: [{ code: 10, data: Buffer.from('0123456789abcdef', 'hex') }],
  }),
];

function mutate(rand: () => number): Buffer {
  const kind = Math.floor(rand() * 8);
  const base = Buffer.from(BASE[Math.floor(rand() * BASE.length)]!);
  switch (kind) {
    case 0: // random bytes
      return Buffer.from(Array.from({ length: Math.floor(rand() * 600) }, () => Math.floor(rand() * 256)));
    case 1: // truncated anywhere
      return base.subarray(0, Math.floor(rand() * base.length));
    case 2: {
      // compression loop: name is a pointer to itself
      const b = Buffer.from(base);
      b[12] = 0xc0;
      b[13] = 12;
      return b;
    }
    case 3: {
      // oversized label
      const b = Buffer.from(base);
      b[12] = 64 + Math.floor(rand() * 128);
      return b;
    }
    case 4: {
      // bad counts
      const b = Buffer.from(base);
      b.writeUInt16BE(Math.floor(rand() * 65536), 4 + 2 * Math.floor(rand() * 4));
      return b;
    }
    case 5: {
      // garbage OPT rdata/option lengths
      const b = Buffer.from(BASE[1]!);
      b.writeUInt16BE(Math.floor(rand() * 65536), b.length - 2);
      return b;
    }
    case 6: {
      // flip random bits
      const b = Buffer.from(base);
      for (let i = 0; i < 1 + rand() * 6; i++) b[Math.floor(rand() * b.length)]! ^= 1 << Math.floor(rand() * 8);
      return b;
    }
    default: {
      // name longer than 255 via many labels
      const labels = Array.from({ length: 60 }, () => Buffer.from([5, 97, 98, 99, 100, 101]));
      return Buffer.concat([base.subarray(0, 12), ...labels, Buffer.from([0, 0, 1, 0, 1])]);
    }
  }
}

describe('wire parser on malformed input', () => {
  it('never throws and classifies every mutation', () => {
    const rand = seededRandom(7);
    for (let i = 0; i < 20000; i++) {
      const r = parseRequest(mutate(rand));
      expect(['query', 'drop', 'rcode']).toContain(r.kind);
    }
  });

  it('rejects a compression loop and an oversized name with FORMERR', () => {
    const loop = Buffer.from(BASE[0]!);
    loop[12] = 0xc0;
    loop[13] = 12;
    expect(parseRequest(loop)).toMatchObject({ kind: 'rcode', rcode: 1 });
    const long = mutate(() => 0.99);
    expect(parseRequest(long)).toMatchObject({ kind: 'rcode', rcode: 1 });
  });

  it('drops responses and packets shorter than a header', () => {
    const resp = Buffer.from(BASE[0]!);
    resp[2]! |= 0x80;
    expect(parseRequest(resp).kind).toBe('drop');
    expect(parseRequest(Buffer.alloc(11)).kind).toBe('drop');
  });
});

describe('server under a flood of garbage', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer('example.org {\n  whoami\n}\n');
  });
  afterAll(() => s.stop());

  it('keeps answering after random and mutated packets over UDP', async () => {
    const rand = seededRandom(42);
    const sock = dgram.createSocket('udp4');
    await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
    for (let batch = 0; batch < 20; batch++) {
      for (let i = 0; i < 200; i++) sock.send(mutate(rand), s.port, '127.0.0.1');
      // Let the server drain the batch (bounded by a valid round trip), so the socket buffer holds.
      expect(rcode(await udpQuery(s.port, 'www.example.org', 'A'))).toBe(0);
    }
    sock.close();
    const r = await udpQuery(s.port, 'check.example.org', 'A', { id: 999 });
    expect(r.id).toBe(999);
    expect(r.additionals.some((a) => a.type === 'A')).toBe(true);
  });

  it('keeps answering after garbage over TCP, and closes or survives each connection', async () => {
    const rand = seededRandom(99);
    for (let c = 0; c < 40; c++) {
      await new Promise<void>((resolve) => {
        const sock = net.connect(s.port, '127.0.0.1', () => {
          for (let i = 0; i < 25; i++) {
            const p = mutate(rand);
            const framed = rand() < 0.8;
            if (framed) {
              const len = Buffer.alloc(2);
              len.writeUInt16BE(p.length);
              sock.write(Buffer.concat([len, p]));
            } else {
              sock.write(p);
            }
          }
          sock.end();
        });
        sock.on('data', () => {});
        sock.on('error', () => resolve());
        sock.on('close', () => resolve());
      });
    }
    const replies = await tcpQueries(s.port, [
      encodeQuery('a.example.org', 'A', { id: 7 }),
      encodeQuery('b.example.org', 'A', { id: 8 }),
    ]);
    expect(replies.map((r) => r.id).sort()).toEqual([7, 8]);
  });

  it('leaves nothing in flight', async () => {
    const listeners = [...s.server.listeners.values()];
    expect(listeners.length).toBeGreaterThan(0);
    for (const l of listeners) expect(l.busy).toBe(0);
  });
});
