/**
 * Seeded fuzzing of PROXY headers, as src/server/fuzz.test.ts fuzzes DNS messages: the reader
 * alone (it never throws, a header never claims more bytes than it was given, a stream's prefix
 * never reads as a different header), then a server with `proxyproto` fed mutated v1/v2 headers
 * over UDP and TCP while queries with valid headers keep their answers (the header's client), and
 * nothing is left in flight.
 *
 * FUZZ_SEED and FUZZ_DURATION_MS choose the run (default: seed 1, about 5 s here).
 */
import * as dgram from 'node:dgram';
import * as net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode } from '../dns/message.js';
import { encodeQuery, udpExchange } from '../../test/helpers/dns.js';
import { proxyV1, proxyV2, tcpFrame } from '../../test/helpers/proxyproto.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { waitFor } from '../../test/helpers/wait.js';
import { seededRandom } from '../util/prng.js';
import { readProxyHeader } from './header.js';

const SEED = Number(process.env.FUZZ_SEED ?? 1);
const DURATION_MS = Math.min(Number(process.env.FUZZ_DURATION_MS ?? 5_000), 60_000);

function headers(rand: () => number): Buffer {
  const port = Math.floor(rand() * 65536);
  const pick = Math.floor(rand() * 6);
  if (pick === 0) return proxyV1('192.0.2.1', port, '10.0.0.1', 53);
  if (pick === 1) return proxyV1('2001:db8::1', port, '2001:db8::53', 53);
  if (pick === 2) return proxyV2('198.51.100.1', port, '10.0.0.1', 53, { tlvs: [[0xe0, Buffer.from('x')]] });
  if (pick === 3) return proxyV2('2001:db8::2', port, '2001:db8::53', 53, { transport: 'tcp' });
  if (pick === 4) return proxyV2('198.51.100.1', port, '10.0.0.1', 53, { local: true });
  return proxyV2('198.51.100.1', port, '10.0.0.1', 53, { tlvs: [[0x04, Buffer.alloc(Math.floor(rand() * 40))]] });
}

function mutate(rand: () => number, h: Buffer): Buffer {
  const b = Buffer.from(h);
  switch (Math.floor(rand() * 7)) {
    case 0: // truncated
      return b.subarray(0, Math.floor(rand() * b.length));
    case 1: // flipped bits anywhere
      for (let i = 0; i < 1 + rand() * 4; i++) b[Math.floor(rand() * b.length)]! ^= 1 << Math.floor(rand() * 8);
      return b;
    case 2: // v2 length lies
      if (b[0] === 0x0d) b.writeUInt16BE(Math.floor(rand() * 65536), 14);
      return b;
    case 3: // v2 command and family at random
      if (b[0] === 0x0d) {
        b[12] = Math.floor(rand() * 256);
        b[13] = Math.floor(rand() * 256);
      }
      return b;
    case 4: // random bytes after the signature
      for (let i = b[0] === 0x0d ? 12 : 5; i < b.length; i++) if (rand() < 0.3) b[i] = Math.floor(rand() * 256);
      return b;
    case 5: // v1 tokens at random
      return Buffer.from(`PROXY ${['TCP4', 'TCP6', 'UNKNOWN', 'UDP4', ''][Math.floor(rand() * 5)]} ${rand()}\r\n`);
    default:
      return b;
  }
}

describe(`PROXY header fuzzing (seed ${SEED})`, () => {
  it('the reader never throws, never overreads, and a stream prefix never reads differently', () => {
    const rand = seededRandom(SEED);
    for (let n = 0; n < 20_000; n++) {
      const b = Buffer.concat([mutate(rand, headers(rand)), encodeQuery('a.example', 'A')]);
      const full = readProxyHeader(b, true);
      if (full.kind === 'header') expect(full.length).toBeLessThanOrEqual(b.length);
      const cut = Math.floor(rand() * b.length);
      const part = readProxyHeader(b.subarray(0, cut), false);
      if (part.kind === 'header' && full.kind === 'header') expect(part.length).toBe(full.length);
      if (part.kind === 'none') expect(full.kind).toBe('none');
    }
  });
});

describe(`proxyproto fuzzing over UDP and TCP (seed ${SEED}, ${DURATION_MS} ms)`, () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer('. {\n  proxyproto\n  whoami\n}\n');
  });
  afterAll(() => s.stop());

  it(
    'never crashes, every reply is a response, valid headers keep naming the client',
    async () => {
      const rand = seededRandom(SEED);
      const end = Date.now() + DURATION_MS;
      const udp = dgram.createSocket('udp4');
      await new Promise<void>((r) => udp.bind(0, '127.0.0.1', () => r()));
      const bad: string[] = [];
      udp.on('message', (m) => {
        if (m.length < 12 || (m[2]! & 0x80) === 0) bad.push(m.toString('hex'));
      });
      const tcpFuzz = (payload: Buffer): Promise<void> =>
        new Promise((resolve) => {
          const sock = net.connect(s.port, '127.0.0.1');
          const finish = (): void => {
            sock.destroy();
            resolve();
          };
          sock.on('error', finish);
          sock.on('close', finish);
          sock.on('data', (d: Buffer) => {
            if (d.length >= 5 && (d[4]! & 0x80) === 0) bad.push(`tcp ${d.toString('hex')}`);
          });
          sock.on('connect', () => sock.end(payload));
        });
      let checks = 0;
      const running: Promise<void>[] = [];
      while (Date.now() < end) {
        for (let i = 0; i < 50; i++) {
          udp.send(Buffer.concat([mutate(rand, headers(rand)), encodeQuery('f.example', 'A')]), s.port, '127.0.0.1');
        }
        running.push(tcpFuzz(Buffer.concat([mutate(rand, headers(rand)), tcpFrame(encodeQuery('f.example', 'A'))])));
        const client = `198.51.100.${1 + Math.floor(rand() * 250)}`;
        const m = decode(
          await udpExchange(s.port, Buffer.concat([proxyV2(client, 9, '10.0.0.1', 53), encodeQuery('a.example', 'A')])),
        );
        const a = (m.additionals ?? []).find((r) => r.type === 'A') as { data?: unknown } | undefined;
        expect(a?.data).toBe(client);
        checks++;
      }
      await Promise.all(running);
      udp.close();
      expect(bad, `non-response replies (seed ${SEED})`).toEqual([]);
      expect(checks).toBeGreaterThan(5);
      const listener = [...s.server.listeners.values()][0]!;
      await waitFor(
        'no query in flight and every connection closed',
        () => listener.busy === 0 && listener.tcpPool.size === 0,
      );
      expect(listener.tcpPool.queuedBytes).toBe(0);
    },
    DURATION_MS + 60_000,
  );
});
