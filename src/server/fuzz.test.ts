/**
 * Seeded fuzzing over UDP and TCP against a running server: mutated valid queries (EDNS with
 * options, AXFR/IXFR/ANY, every opcode), compression loops, bad counts and lengths, framing lies,
 * slow (byte-by-byte) and half-open connections. Valid queries interleaved all along must get
 * exactly the answer they got before the fuzzing started, and the server must end with nothing in
 * flight and no connection left.
 *
 * FUZZ_SEED and FUZZ_DURATION_MS choose the run (default: seed 1, about 20 s); scripts/fuzz-long.sh
 * runs it for longer with a seed of your choice. A failure prints the seed.
 */
import * as dgram from 'node:dgram';
import { mkdtempSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeQuery, udpExchange } from '../../test/helpers/dns.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { seededRandom } from '../util/prng.js';
import { waitFor } from '../../test/helpers/wait.js';

const SEED = Number(process.env.FUZZ_SEED ?? 1);
const DURATION_MS = Number(process.env.FUZZ_DURATION_MS ?? 20_000);

/** Queries with known answers (hosts plugin: fixed TTLs, fixed order). */
const VALID: [string, string, Parameters<typeof encodeQuery>[2]][] = [
  ['a.example.org', 'A', {}],
  ['a.example.org', 'AAAA', { edns: 1232 }],
  ['A.Example.ORG', 'A', { edns: 4096, do: true }],
  ['big.example.org', 'A', {}], // truncated (TC) over UDP without EDNS, whole over TCP
  ['big.example.org', 'A', { edns: 1232, options: [{ code: 10, data: Buffer.from('0123456789abcdef', 'hex') }] }],
  ['1.0.0.10.in-addr.arpa', 'PTR', {}],
  ['nothere.example.org', 'A', {}],
  ['a.example.org', 'MX', {}],
  ['example.net', 'A', {}], // REFUSED: no zone
];

const BASES: Buffer[] = [
  ...VALID.map(([n, t, o]) => encodeQuery(n, t, o)),
  encodeQuery('example.org', 'AXFR', {}),
  encodeQuery('example.org', 'IXFR', { edns: 4096 }),
  encodeQuery('a.example.org', 'ANY', {}),
  encodeQuery('a.example.org', 'A', {
    edns: 512,
    options: [
      { code: 8, data: Buffer.from([0, 1, 24, 0, 10, 0, 0]) },
      { code: 12, data: Buffer.alloc(40) },
      { code: 65001, data: Buffer.from('x') },
    ],
  }),
  encodeQuery('a.example.org', 'A', { class: 'CH' }),
];

function mutate(rand: () => number): Buffer {
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rand() * a.length)]!;
  const b = Buffer.from(pick(BASES));
  switch (Math.floor(rand() * 12)) {
    case 0: // random bytes
      return Buffer.from(Array.from({ length: Math.floor(rand() * 700) }, () => Math.floor(rand() * 256)));
    case 1: // truncated anywhere
      return b.subarray(0, Math.floor(rand() * b.length));
    case 2: // compression loop or forward pointer in the question name
      b[12] = 0xc0;
      b[13] = rand() < 0.5 ? 12 : Math.floor(rand() * 256);
      return b;
    case 3: // bad counts
      b.writeUInt16BE(Math.floor(rand() * 65536), 4 + 2 * Math.floor(rand() * 4));
      return b;
    case 4: // opcode 0..15, random flag bits
      b[2] = (b[2]! & 0x87) | (Math.floor(rand() * 16) << 3);
      if (rand() < 0.5) b[3] = Math.floor(rand() * 256);
      return b;
    case 5: // an OPT record with lying lengths (when the base has one)
      b.writeUInt16BE(Math.floor(rand() * 65536), b.length - 2 - Math.floor(rand() * 4));
      return b;
    case 6: // flipped bits
      for (let i = 0; i < 1 + rand() * 8; i++) b[Math.floor(rand() * b.length)]! ^= 1 << Math.floor(rand() * 8);
      return b;
    case 7: // trailing garbage
      return Buffer.concat([
        b,
        Buffer.from(Array.from({ length: 1 + Math.floor(rand() * 40) }, () => Math.floor(rand() * 256))),
      ]);
    case 8: // two OPT records / duplicated additional
      b.writeUInt16BE(b.readUInt16BE(10) + 1, 10);
      return Buffer.concat([b, b.subarray(b.length - 11)]);
    case 9: // QR set (a response): dropped
      b[2]! |= 0x80;
      return b;
    case 10: // oversized label or name
      b[12] = 64 + Math.floor(rand() * 190);
      return b;
    default: // type and class at random
      b.writeUInt16BE(Math.floor(rand() * 65536), b.length - (b.readUInt16BE(10) ? 15 : 4));
      return b;
  }
}

function frame(p: Buffer): Buffer {
  const len = Buffer.alloc(2);
  len.writeUInt16BE(p.length & 0xffff);
  return Buffer.concat([len, p]);
}

/** Reply without its ID, to compare with the one taken before the fuzzing. */
function body(reply: Buffer): string {
  return reply.subarray(2).toString('hex');
}

/** One query over a fresh TCP connection. */
function tcpExchange(port: number, q: Buffer, timeoutMs = 10_000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(frame(q)));
    let buf = Buffer.alloc(0);
    const t = setTimeout(() => {
      s.destroy();
      reject(new Error('TCP reply timed out'));
    }, timeoutMs);
    s.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        clearTimeout(t);
        s.destroy();
        resolve(buf.subarray(2, 2 + buf.readUInt16BE(0)));
      }
    });
    s.on('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
  });
}

const tick = () => new Promise<void>((r) => setImmediate(r));

describe(`fuzzing over UDP and TCP (seed ${SEED}, ${DURATION_MS} ms)`, () => {
  let s: TestServer;
  const expected = new Map<string, string>();

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-fuzz-'));
    const hosts = ['10.0.0.1 a.example.org', 'fd00::1 a.example.org'];
    for (let i = 0; i < 60; i++) hosts.push(`10.1.0.${i + 1} big.example.org`);
    writeFileSync(join(dir, 'hosts'), `${hosts.join('\n')}\n`);
    s = await startServer(`example.org 0.0.10.in-addr.arpa {\n  hosts ${join(dir, 'hosts')}\n}\n`, { dir });
    for (const [i, [n, t, o]] of VALID.entries()) {
      const q = encodeQuery(n, t, { ...o, id: i });
      expected.set(`udp${i}`, body(await udpExchange(s.port, q)));
      expected.set(`tcp${i}`, body(await tcpExchange(s.port, q)));
    }
  });
  afterAll(() => s.stop());

  it(
    'never crashes, every reply is a response, valid queries keep their exact answers',
    async () => {
      const rand = seededRandom(SEED);
      const end = Date.now() + DURATION_MS;
      const udp = dgram.createSocket('udp4');
      await new Promise<void>((r) => udp.bind(0, '127.0.0.1', () => r()));
      let udpReplies = 0;
      const bad: string[] = [];
      udp.on('message', (m) => {
        udpReplies++;
        if (m.length < 12 || (m[2]! & 0x80) === 0) bad.push(m.toString('hex'));
      });
      const open = new Set<net.Socket>();
      let checks = 0;
      let tcpConns = 0;

      /** A TCP connection doing something hostile or odd; resolves when it is over. */
      const tcpFuzz = (seed: number): Promise<void> =>
        new Promise((resolve) => {
          const r = seededRandom(seed);
          const mode = Math.floor(r() * 5);
          const sock = net.connect(s.port, '127.0.0.1');
          open.add(sock);
          tcpConns++;
          const finish = () => {
            open.delete(sock);
            sock.destroy();
            resolve();
          };
          let got = Buffer.alloc(0);
          sock.on('data', (c: Buffer) => {
            got = Buffer.concat([got, c]);
            while (got.length >= 2 && got.length >= 2 + got.readUInt16BE(0)) {
              const m = got.subarray(2, 2 + got.readUInt16BE(0));
              if (m.length < 12 || (m[2]! & 0x80) === 0) bad.push(`tcp ${m.toString('hex')}`);
              got = got.subarray(2 + m.length);
            }
          });
          sock.on('error', finish);
          sock.on('close', finish);
          sock.on('connect', async () => {
            const packets = Array.from({ length: 1 + Math.floor(r() * 30) }, () => mutate(r));
            if (mode === 0) {
              // framed garbage, then a half-close (the client sends FIN and keeps reading)
              for (const p of packets) sock.write(frame(p));
              sock.end();
            } else if (mode === 1) {
              // framing lies: a length longer than the message, then silence (the read timeout closes it)
              const p = packets[0]!;
              const len = Buffer.alloc(2);
              len.writeUInt16BE(Math.min(65535, p.length + 1 + Math.floor(r() * 1000)));
              sock.write(Buffer.concat([len, p]));
              setTimeout(finish, 500);
            } else if (mode === 2) {
              // slow: one byte at a time
              const all = Buffer.concat(packets.slice(0, 3).map(frame));
              for (let i = 0; i < all.length && !sock.destroyed; i++) {
                sock.write(all.subarray(i, i + 1));
                await tick();
              }
              sock.end();
            } else if (mode === 3) {
              // raw garbage, not framed
              for (const p of packets) sock.write(p);
              sock.end();
            } else {
              // abort mid-message (RST)
              sock.write(frame(packets[0]!).subarray(0, 1 + Math.floor(r() * 10)));
              setImmediate(() => sock.resetAndDestroy());
            }
          });
        });

      const check = async () => {
        const i = Math.floor(rand() * VALID.length);
        const [n, t, o] = VALID[i]!;
        const id = Math.floor(rand() * 65536);
        const q = encodeQuery(n, t, { ...o, id });
        const [u, c] = await Promise.all([udpExchange(s.port, q), tcpExchange(s.port, q)]);
        expect(u.readUInt16BE(0)).toBe(id);
        expect(c.readUInt16BE(0)).toBe(id);
        expect(body(u), `UDP answer of ${n} ${t} (seed ${SEED})`).toBe(expected.get(`udp${i}`));
        expect(body(c), `TCP answer of ${n} ${t} (seed ${SEED})`).toBe(expected.get(`tcp${i}`));
        checks++;
      };

      const tcpRunning: Promise<void>[] = [];
      while (Date.now() < end) {
        for (let i = 0; i < 100; i++) udp.send(mutate(rand), s.port, '127.0.0.1');
        if (open.size < 20) tcpRunning.push(tcpFuzz(Math.floor(rand() * 2 ** 31)));
        await check();
      }
      await Promise.all(tcpRunning);
      await check();
      udp.close();
      expect(bad, `non-response replies (seed ${SEED})`).toEqual([]);
      expect(checks).toBeGreaterThan(10);
      expect(udpReplies).toBeGreaterThan(0);
      expect(tcpConns).toBeGreaterThan(10);
      // Nothing left behind: no query in flight, every connection closed by now or soon.
      const listener = [...s.server.listeners.values()][0]!;
      await waitFor(
        'no query in flight and every connection closed',
        () => listener.busy === 0 && listener.tcpPool.size === 0,
        { everyMs: 50 },
      );
      expect(listener.busy).toBe(0);
      expect(listener.tcpPool.size).toBe(0);
      expect(listener.tcpPool.queuedBytes).toBe(0);
    },
    DURATION_MS + 90_000,
  );
});
