/**
 * A hostile TCP client cannot exhaust the server: one that pipelines queries for a large answer
 * and never reads its replies is paused with bounded buffered bytes and closed after the idle
 * timeout; one address holding many connections, or several filling the global cap, cannot keep
 * another address from being served.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { decode, type Message } from '../dns/message.js';
import { Server } from './server.js';
import type { Listener, TcpLimits } from './listener.js';
import { encodeQuery } from '../../test/helpers/dns.js';
import { freePort } from '../../test/helpers/net.js';
import { waitFor } from '../../test/helpers/wait.js';

const LIMITS: TcpLimits = {
  idleTimeoutMs: 1500,
  readTimeoutMs: 3000,
  maxConnections: 50,
  maxConnectionsPerSource: 20,
  maxInFlightPerConnection: 128,
  maxQueuedBytesPerConnection: 64 * 1024,
  maxQueuedBytes: 32 * 1024 * 1024,
};

let server: Server | null = null;
const sockets: net.Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await server?.shutdown();
  server = null;
});

/** A hosts file with `n` addresses for big.example.org: a ~3.3 kB answer for 200. */
async function start(limits: TcpLimits, n = 200): Promise<{ port: number; listener: Listener }> {
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-tcp-'));
  const lines: string[] = [];
  for (let i = 0; i < n; i++) lines.push(`10.1.${i >> 8}.${i & 255} big.example.org`);
  writeFileSync(join(dir, 'hosts'), `${lines.join('\n')}\n`);
  const port = await freePort();
  const text = `example.org:${port} {\n  hosts ${join(dir, 'hosts')}\n}\n`;
  server = new Server({
    dnsPort: port,
    quiet: true,
    tcpLimits: limits,
    loadSource: async () => ({ path: join(dir, 'Corefile'), text }),
  });
  await server.start();
  const listener = [...server.listeners.values()][0]!;
  return { port, listener };
}

function frame(q: Buffer): Buffer {
  const b = Buffer.allocUnsafe(2 + q.length);
  b.writeUInt16BE(q.length, 0);
  q.copy(b, 2);
  return b;
}

function connect(port: number, localAddress: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress });
    sockets.push(s);
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

/** One query on an open connection; rejects when the server closes it first. */
function ask(s: net.Socket, name: string, id: number, timeoutMs = 10_000): Promise<Message> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => done(new Error('no reply')), timeoutMs);
    const onData = (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0))
        done(null, decode(buf.subarray(2, 2 + buf.readUInt16BE(0))));
    };
    const onClose = () => done(new Error('closed by the server'));
    const done = (e: Error | null, m?: Message) => {
      clearTimeout(timer);
      s.off('data', onData);
      s.off('close', onClose);
      if (e) reject(e);
      else resolve(m!);
    };
    s.on('data', onData);
    s.on('close', onClose);
    s.write(frame(encodeQuery(name, 'A', { id })));
  });
}

/** Open a connection from `localAddress`, resolving to whether the server kept it (it answers). */
async function served(port: number, localAddress: string, id: number): Promise<boolean> {
  const s = await connect(port, localAddress);
  try {
    const m = await ask(s, 'big.example.org', id);
    return m.id === id && m.answers.length === 200;
  } catch {
    return false;
  } finally {
    s.destroy();
  }
}

describe('TCP back-pressure', () => {
  it('a client that never reads its replies is paused with bounded buffers, others are served, it is closed when idle', async () => {
    const { port, listener } = await start(LIMITS);
    const before = process.memoryUsage();
    const hostile = await connect(port, '127.0.0.1');
    hostile.pause(); // never read
    let closed = false;
    hostile.on('close', () => (closed = true));
    hostile.on('error', () => {});
    // 100,000 pipelined queries for a 3.3 kB answer (330 MB of replies if all were answered).
    const q = frame(encodeQuery('big.example.org', 'A', { id: 7 }));
    const batch = Buffer.concat(Array.from({ length: 1000 }, () => q));
    for (let i = 0; i < 100; i++) hostile.write(batch);
    // The server stops reading: the connection is paused and the client cannot send everything.
    await waitFor('the hostile connection to be paused', () => listener.tcpPool.stats().some((c) => c.readPaused));
    const conn = listener.tcpPool.stats().find((c) => c.readPaused)!;
    expect(conn.queuedBytes).toBeLessThan(LIMITS.maxQueuedBytesPerConnection + 70_000);
    expect(listener.tcpPool.queuedBytes).toBeLessThan(LIMITS.maxQueuedBytesPerConnection + 70_000);
    // Someone else is served meanwhile, over TCP from another address.
    expect(await served(port, '127.0.0.2', 99)).toBe(true);
    // Memory: nowhere near the hundreds of megabytes the replies would take.
    const after = process.memoryUsage();
    expect(after.external + after.arrayBuffers - (before.external + before.arrayBuffers)).toBeLessThan(
      48 * 1024 * 1024,
    );
    expect(after.rss - before.rss).toBeLessThan(128 * 1024 * 1024);
    // Writes pending and no progress is idle: the server closes the connection.
    // (The paused client itself does not poll its socket, so the server's view is what counts.)
    await waitFor('the idle close of the non-reading client', () => listener.tcpPool.countFrom('127.0.0.1') === 0);
    hostile.resume();
    await waitFor('the client to see the close', () => closed);
    expect(listener.tcpPool.size).toBe(0);
    expect(listener.tcpPool.queuedBytes).toBe(0);
    expect(listener.busy).toBe(0);
  }, 60_000);

  it('a client that stops reading and then reads again gets every reply of a long pipeline', async () => {
    const { port, listener } = await start({
      ...LIMITS,
      idleTimeoutMs: 30_000,
      maxQueuedBytesPerConnection: 16 * 1024,
      maxInFlightPerConnection: 8,
    });
    const s = await connect(port, '127.0.0.1');
    s.pause();
    const n = 3000;
    const frames = Array.from({ length: n }, (_, i) =>
      frame(encodeQuery(i % 2 ? 'big.example.org' : 'none.example.org', 'A', { id: i })),
    );
    s.write(Buffer.concat(frames));
    // The kernel's buffers fill up, the server stops reading; then the client reads everything.
    await waitFor('the server to pause the connection', () =>
      listener.tcpPool.stats().some((c) => c.readPaused && c.queuedBytes > 0),
    );
    const ids = new Set<number>();
    let buf = Buffer.alloc(0);
    await new Promise<void>((resolve, reject) => {
      s.on('error', reject);
      s.on('close', () => reject(new Error(`closed after ${ids.size} replies`)));
      s.on('data', (c: Buffer) => {
        buf = Buffer.concat([buf, c]);
        while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
          const m = decode(buf.subarray(2, 2 + buf.readUInt16BE(0)));
          buf = buf.subarray(2 + buf.readUInt16BE(0));
          expect(m.answers.length).toBe(m.id! % 2 ? 200 : 0);
          ids.add(m.id!);
        }
        if (ids.size === n) resolve();
      });
      s.resume();
    });
    expect(ids.size).toBe(n);
  }, 60_000);
});

describe('fair TCP connection limits', () => {
  it('one address holding many connections cannot keep another address out (per-source cap)', async () => {
    const { port, listener } = await start(LIMITS);
    const held: net.Socket[] = [];
    for (let i = 0; i < 60; i++) {
      const s = await connect(port, '127.0.0.1');
      s.on('error', () => {});
      held.push(s);
    }
    await waitFor(
      'the per-source cap',
      () =>
        held.filter((s) => !s.destroyed && s.readyState === 'open').length <= LIMITS.maxConnectionsPerSource &&
        listener.tcpPool.countFrom('127.0.0.1') === LIMITS.maxConnectionsPerSource,
    );
    // The connections the server kept still work.
    const kept = held.filter((s) => !s.destroyed && s.readyState === 'open');
    expect((await ask(kept[0]!, 'big.example.org', 5)).answers).toHaveLength(200);
    expect(await served(port, '127.0.0.2', 42)).toBe(true);
  }, 60_000);

  it('at the global cap the longest-idle connection is closed for a new one', async () => {
    const { port, listener } = await start(LIMITS);
    const first: net.Socket[] = [];
    // Three addresses fill the global cap (50) with 20 connections each; the oldest are closed.
    for (const src of ['127.0.0.3', '127.0.0.4', '127.0.0.5']) {
      for (let i = 0; i < 20; i++) {
        const s = await connect(port, src);
        s.on('error', () => {});
        first.push(s);
      }
    }
    await waitFor('the global cap', () => listener.tcpPool.size === LIMITS.maxConnections);
    // The first ones connected (idle the longest) were closed, the newest kept.
    await waitFor('the evicted connections to close', () =>
      first.slice(0, 10).every((s) => s.destroyed || s.readableEnded),
    );
    expect(listener.tcpPool.evicted).toBe(10);
    // Keep the newest connection busy, then a new address is still served at the cap.
    expect((await ask(first[first.length - 1]!, 'big.example.org', 1)).answers).toHaveLength(200);
    expect(await served(port, '127.0.0.2', 43)).toBe(true);
    expect(listener.tcpPool.size).toBe(LIMITS.maxConnections);
    // The busy connection was not the one evicted for the new one.
    expect((await ask(first[first.length - 1]!, 'big.example.org', 2)).answers).toHaveLength(200);
  }, 60_000);
});
