/**
 * DNS over TLS (`tls://` blocks, the `tls` directive; docs/corefile.md §7.5) with real clients:
 * kdig +tls and Node's tls client verifying a test CA made here; client authentication; the
 * material reloading with the Corefile; file errors at start; and one source holding 10,000 idle
 * DoT connections cannot keep a second source out.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { decode } from '../dns/message.js';
import { FrameReader } from '../dns/tcpframes.js';
import { ConfigError } from '../corefile/types.js';
import { Server } from './server.js';
import { DEFAULT_TCP_LIMITS, type TcpLimits } from './listener.js';
import { encodeQuery } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { captureLogs, type LogCapture } from '../../test/helpers/logs.js';
import { freePort } from '../../test/helpers/net.js';
import { dotExchange, makeTestPki } from '../../test/helpers/tls.js';
import { waitFor } from '../../test/helpers/wait.js';
import { TestUpstream } from '../../test/helpers/upstream.js';

const run = promisify(execFile);
const pki = makeTestPki();
const ca = pki.read(pki.caCert);

let server: Server | null = null;
let logs: LogCapture | null = null;
const sockets: net.Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await server?.shutdown();
  server = null;
  logs?.restore();
  logs = null;
});

const corefilePath = join(pki.dir, 'Corefile');

async function start(text: (port: number) => string, tcpLimits?: TcpLimits): Promise<number> {
  const port = await freePort();
  writeFileSync(corefilePath, text(port));
  logs = captureLogs();
  server = new Server({
    dnsPort: port,
    quiet: true,
    ...(tcpLimits ? { tcpLimits } : {}),
    loadSource: async () => ({ path: corefilePath, text: text(port) }),
  });
  await server.start();
  return port;
}

const HOSTS = join(pki.dir, 'hosts');
writeFileSync(HOSTS, '192.0.2.7 dot.example.org\n');

const block =
  (tlsLine: string) =>
  (port: number): string =>
    `tls://example.org:${port} {\n  ${tlsLine}\n  log\n  hosts ${HOSTS}\n}\n`;

describe('DNS over TLS', () => {
  it('answers kdig +tls, verified against the test CA, over the same chain as plain DNS', async () => {
    const port = await start(block(`tls ${pki.cert} ${pki.key}`));
    const { stdout } = await run('kdig', [
      '@127.0.0.1',
      '-p',
      String(port),
      '+tls-ca=' + pki.caCert,
      '+tls-hostname=localhost',
      'dot.example.org',
      'A',
    ]);
    expect(stdout).toMatch(/TLS session \(TLS1\.[23]\)/);
    expect(stdout).toMatch(/status: NOERROR/);
    expect(stdout).toMatch(/dot\.example\.org\.\s+\d+\s+IN\s+A\s+192\.0\.2\.7/);
    // The log plugin prints the protocol as CoreDNS does for DoT: tcp.
    await waitFor('the log line', () => logs!.lines.some((l) => /"A IN dot\.example\.org\. tcp \d+ /.test(l)));
    expect(server!.servers()).toEqual([`tls://:${port}`]);
  });

  it('answers Node’s TLS client and needs a client certificate with client_auth require_and_verify', async () => {
    const port = await start(
      block(`tls ${pki.cert} ${pki.key} ${pki.caCert} {\n    client_auth require_and_verify\n  }`),
    );
    const q = encodeQuery('dot.example.org', 'A', { id: 7 });
    await expect(dotExchange(port, q, { ca, timeoutMs: 3000 })).rejects.toThrow();
    const { reply } = await dotExchange(port, q, {
      ca,
      cert: pki.read(pki.clientCert),
      key: pki.read(pki.clientKey),
    });
    const m = decode(reply);
    expect(m.id).toBe(7);
    expect(rrLines(m.answers)).toEqual(['dot.example.org. 3600 IN A 192.0.2.7']);
  });

  it('answers 200 pipelined queries, each in a TLS record of its own, every one once', async () => {
    // Each record is a 'data' event of its own on the server; the replies of one event-loop turn
    // are held and leave together (src/server/tcp.ts, holdUntilTurnEnds): none may be lost,
    // repeated or stuck behind the hold.
    const port = await start(block(`tls ${pki.cert} ${pki.key}`));
    const s = tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost' });
    sockets.push(s);
    await new Promise<void>((resolve, reject) => {
      s.once('secureConnect', () => resolve());
      s.once('error', reject);
    });
    const ids: number[] = [];
    const reader = new FrameReader();
    s.on('data', (chunk: Buffer) => reader.push(chunk, (frame) => ids.push(frame.readUInt16BE(0))));
    s.cork();
    for (let id = 1; id <= 200; id++) {
      const q = encodeQuery('dot.example.org', 'A', { id });
      const len = Buffer.alloc(2);
      len.writeUInt16BE(q.length);
      // Two writes per query while corked: Node's TLS client still makes one record per write.
      s.write(len);
      s.write(q);
    }
    s.uncork();
    await waitFor('200 replies', () => ids.length >= 200);
    expect([...ids].sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
  });

  it('answers a pipeline longer than the in-flight cap when the answers come later (forward)', async () => {
    // Answers that arrive in later turns (an upstream's) fill the in-flight cap; reading pauses and
    // must resume when the held replies leave, or the connection stalls with nothing in flight.
    const upstream = await TestUpstream.start();
    upstream.defaultBehaviour = { rcode: 3, delayMs: 1 };
    try {
      const port = await start(
        (p) => `tls://.:${p} {\n  tls ${pki.cert} ${pki.key}\n  forward . 127.0.0.1:${upstream.port}\n}\n`,
      );
      const s = tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost' });
      sockets.push(s);
      await new Promise<void>((resolve, reject) => {
        s.once('secureConnect', () => resolve());
        s.once('error', reject);
      });
      const ids = new Set<number>();
      const reader = new FrameReader();
      s.on('data', (chunk: Buffer) => reader.push(chunk, (frame) => ids.add(frame.readUInt16BE(0))));
      const n = 1000;
      for (let id = 1; id <= n; id++) {
        const q = encodeQuery(`q${id}.example.org`, 'A', { id });
        const len = Buffer.alloc(2);
        len.writeUInt16BE(q.length);
        s.write(Buffer.concat([len, q]));
      }
      await waitFor(`${n} replies`, () => ids.size >= n, { timeoutMs: 60_000 });
      expect(ids.size).toBe(n);
    } finally {
      await upstream.stop();
    }
  });

  it('client_auth require refuses a client without a certificate after the handshake', async () => {
    const port = await start(block(`tls ${pki.cert} ${pki.key} {\n    client_auth require\n  }`));
    const q = encodeQuery('dot.example.org', 'A', { id: 8 });
    await expect(dotExchange(port, q, { ca, timeoutMs: 3000 })).rejects.toThrow();
    const { reply } = await dotExchange(port, q, { ca, cert: pki.read(pki.clientCert), key: pki.read(pki.clientKey) });
    expect(decode(reply).id).toBe(8);
  });

  it('takes new certificate files on reload, keeps the listener, and never logs the material', async () => {
    let tlsLine = `tls ${pki.cert} ${pki.key}`;
    const port = await start((p) => block(tlsLine)(p));
    const q = encodeQuery('dot.example.org', 'A');
    expect((await dotExchange(port, q, { ca })).serverCN).toBe('clusterdns-test-1');
    tlsLine = `tls ${pki.cert2} ${pki.key2}`;
    expect(await server!.reload('test')).toBe(true);
    expect((await dotExchange(port, q, { ca })).serverCN).toBe('clusterdns-test-2');
    // A reload to a missing file fails and keeps serving the old material.
    tlsLine = `tls ${join(pki.dir, 'nope.pem')} ${pki.key}`;
    expect(await server!.reload('test')).toBe(false);
    expect((await dotExchange(port, q, { ca })).serverCN).toBe('clusterdns-test-2');
    const all = logs!.lines.join('\n');
    expect(all).toContain('could not load TLS cert: open');
    for (const f of [pki.cert, pki.key, pki.cert2, pki.key2]) {
      const pem = pki.read(f).toString();
      const body = pem.split('\n')[1]!;
      expect(all).not.toContain(body);
    }
    expect(all).not.toMatch(/BEGIN (CERTIFICATE|PRIVATE KEY|EC PRIVATE KEY)/);
  });

  it('a missing or mismatched certificate is a start-up error with the Corefile line', async () => {
    const nope = join(pki.dir, 'nope.pem');
    const failure = async (text: (port: number) => string): Promise<string> => {
      try {
        await start(text);
      } catch (e) {
        logs?.restore();
        logs = null;
        server = null;
        return e instanceof ConfigError ? e.describe() : String(e);
      }
      return 'started';
    };
    expect(await failure(block(`tls ${nope} ${pki.key}`))).toBe(
      `plugin/tls: ${corefilePath}:2 - Error during parsing: could not load TLS cert: open ${nope}: no such file or directory`,
    );
    expect(await failure(block(`tls ${pki.cert} ${pki.key2}`))).toMatch(
      /^plugin\/tls: .*Corefile:2 - Error during parsing: could not load TLS cert: .*key values mismatch/,
    );
  });

  it('10,000 idle DoT connections from one source cannot keep a second source out', async () => {
    // A read timeout longer than the test: the idle connections are not closed by time, only by
    // the per-source cap, and the second source is served while they are held.
    const limits: TcpLimits = { ...DEFAULT_TCP_LIMITS, readTimeoutMs: 120_000, idleTimeoutMs: 120_000 };
    const port = await start(block(`tls ${pki.cert} ${pki.key}`), limits);
    const listener = [...server!.listeners.values()][0]!;
    let closed = 0;
    const open = (): Promise<void> =>
      new Promise((resolve) => {
        const s = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.1' });
        sockets.push(s);
        s.on('error', () => undefined);
        s.on('close', () => closed++);
        s.once('connect', () => resolve());
        s.once('error', () => resolve());
      });
    for (let i = 0; i < 10_000; i += 500) await Promise.all(Array.from({ length: 500 }, open));
    await waitFor(
      'the per-source cap to close the connections beyond it',
      () => closed >= 10_000 - limits.maxConnectionsPerSource,
    );
    expect(listener.tcpPool.countFrom('127.0.0.1')).toBe(limits.maxConnectionsPerSource);
    const { reply } = await dotExchange(port, encodeQuery('dot.example.org', 'A', { id: 99 }), {
      ca,
      localAddress: '127.0.0.2',
    });
    expect(decode(reply).id).toBe(99);
  }, 120_000);
});
