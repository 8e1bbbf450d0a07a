/**
 * The DoH listener's own HTTP/2 layer (src/server/h2session.ts) against real HTTP/2 peers: h2spec's
 * whole conformance suite, nghttp2's h2load with many streams on several connections, Node's
 * http2 client with a tiny flow-control window and the server's stream limit, the TLS key log, the
 * request headers reaching *trace* (B3), and GOAWAY at shutdown.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { decode } from '../dns/message.js';
import { Server } from './server.js';
import { H2Session, type H2Handler, type H2Stream } from './h2session.js';
import { PREFACE } from './h2frames.js';
import { writeIndexed, writeLiteralWithoutIndexing } from './hpack.js';
import { encodeQuery } from '../../test/helpers/dns.js';
import { freePort } from '../../test/helpers/net.js';
import { makeTestPki } from '../../test/helpers/tls.js';
import { waitFor } from '../../test/helpers/wait.js';
import { startCollector } from '../../test/helpers/zipkin.js';

const run = promisify(execFile);
const pki = makeTestPki();
const ca = pki.read(pki.caCert);
const H2SPEC = resolve(import.meta.dirname, '../../.bin/h2spec');
const ZONE = join(pki.dir, 'example.org.zone');
const corefilePath = join(pki.dir, 'Corefile');

// A name whose TXT answer (~22 KB) is larger than a DATA frame and than a small client window.
const txt = Array.from({ length: 100 }, (_, i) => `big 300 IN TXT "${String(i).padStart(3, '0')}${'x'.repeat(200)}"`);
writeFileSync(
  ZONE,
  [
    '$ORIGIN example.org.',
    '@ 300 IN SOA ns.example.org. admin.example.org. 1 7200 3600 1209600 300',
    '@ 300 IN NS ns',
    'ns 300 IN A 192.0.2.1',
    'small 300 IN A 192.0.2.9',
    ...txt,
    '',
  ].join('\n'),
);

let server: Server | null = null;
const sessions: http2.ClientHttp2Session[] = [];

afterEach(async () => {
  for (const s of sessions.splice(0)) s.destroy();
  await server?.shutdown();
  server = null;
});

async function start(extra = ''): Promise<number> {
  const port = await freePort();
  const text = `https://example.org:${port} {\n  tls ${pki.cert} ${pki.key}\n${extra}  file ${ZONE}\n}\n`;
  writeFileSync(corefilePath, text);
  server = new Server({ dnsPort: port, quiet: true, loadSource: async () => ({ path: corefilePath, text }) });
  await server.start();
  return port;
}

function connect(port: number, settings?: http2.Settings): Promise<http2.ClientHttp2Session> {
  return new Promise((ok, fail) => {
    const s = http2.connect(`https://localhost:${port}`, { ca, host: '127.0.0.1', ...(settings ? { settings } : {}) });
    sessions.push(s);
    s.once('remoteSettings', () => ok(s));
    s.once('error', fail);
  });
}

function post(s: http2.ClientHttp2Session, body: Buffer): Promise<{ status: number; body: Buffer }> {
  return new Promise((ok, fail) => {
    const req = s.request({ ':method': 'POST', ':path': '/dns-query', 'content-type': 'application/dns-message' });
    let status = 0;
    const chunks: Buffer[] = [];
    req.on('response', (h) => {
      status = Number(h[':status']);
    });
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => ok({ status, body: Buffer.concat(chunks) }));
    req.on('error', fail);
    req.end(body);
  });
}

describe('DoH over our own HTTP/2', () => {
  it('passes every h2spec conformance test', async () => {
    expect(existsSync(H2SPEC), `${H2SPEC} is missing: run bash scripts/install-h2spec.sh`).toBe(true);
    const port = await start();
    // -o: the seconds h2spec waits for an expected frame or close; generous, so a loaded machine
    // only makes the run slower, never a pass a failure.
    const report = join(pki.dir, 'h2spec.xml');
    const out = await run(
      H2SPEC,
      ['-h', '127.0.0.1', '-p', String(port), '-t', '-k', '-P', '/dns-query', '-o', '10', '-j', report],
      { timeout: 600_000, maxBuffer: 16 << 20 },
    ).catch((e: { stdout?: string; stderr?: string }) => ({ stdout: e.stdout ?? '', stderr: e.stderr ?? '' }));
    const summary = /(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed/.exec(out.stdout);
    expect(summary, out.stdout.slice(-4000) + out.stderr).not.toBeNull();
    const failed = out.stdout.split('\n').filter((l) => l.includes('×'));
    expect(failed).toEqual([]);
    expect(Number(summary![1])).toBeGreaterThanOrEqual(145);
    expect(Number(summary![4])).toBe(0);
  });

  it('answers every request of h2load: 4 connections × 50 streams, 4,000 POSTs', async () => {
    const port = await start();
    const body = join(pki.dir, 'query.bin');
    writeFileSync(body, encodeQuery('small.example.org', 'A', { id: 0 }));
    const { stdout } = await run(
      'h2load',
      [
        '-n',
        '4000',
        '-c',
        '4',
        '-m',
        '50',
        '-d',
        body,
        '-H',
        'content-type: application/dns-message',
        `https://127.0.0.1:${port}/dns-query`,
      ],
      { timeout: 120_000 },
    );
    expect(stdout).toMatch(/requests: 4000 total, 4000 started, 4000 done, 4000 succeeded, 0 failed, 0 errored/);
    expect(stdout).toMatch(/status codes: 4000 2xx, 0 3xx, 0 4xx, 0 5xx/);
  });

  it('sends a reply larger than the client’s window and frame size once the window opens', async () => {
    const port = await start();
    // A 1,000-byte stream window: the ~22 KB reply leaves in pieces as the client reads.
    const s = await connect(port, { initialWindowSize: 1000 });
    const r = await post(s, encodeQuery('big.example.org', 'TXT', { id: 3 }));
    expect(r.status).toBe(200);
    expect(r.body.length).toBeGreaterThan(16384);
    const m = decode(r.body);
    expect(m.id).toBe(3);
    expect(m.answers).toHaveLength(100);
    // The same connection goes on serving.
    const again = await post(s, encodeQuery('small.example.org', 'A', { id: 4 }));
    expect(decode(again.body).answers).toHaveLength(1);
  });

  it('advertises max_streams and serves more requests than that, in turn', async () => {
    const port = await start('  https {\n    max_streams 3\n  }\n');
    const s = await connect(port);
    expect(s.remoteSettings.maxConcurrentStreams).toBe(3);
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => post(s, encodeQuery('small.example.org', 'A', { id: i + 1 }))),
    );
    expect(replies.map((r) => decode(r.body).id)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it('appends the TLS secrets of its connections to the keylog file (NSS format)', async () => {
    const port = await freePort();
    const keylog = join(pki.dir, 'keylog.txt');
    const text = `https://example.org:${port} {\n  tls ${pki.cert} ${pki.key} {\n    keylog ${keylog}\n  }\n  file ${ZONE}\n}\n`;
    writeFileSync(corefilePath, text);
    server = new Server({ dnsPort: port, quiet: true, loadSource: async () => ({ path: corefilePath, text }) });
    await server.start();
    const s = await connect(port);
    const r = await post(s, encodeQuery('small.example.org', 'A', { id: 9 }));
    expect(r.status).toBe(200);
    await waitFor(
      'the key log lines',
      () => existsSync(keylog) && /SERVER_TRAFFIC_SECRET_0 [0-9a-f]+ [0-9a-f]+/.test(readFileSync(keylog, 'utf8')),
    );
    expect(readFileSync(keylog, 'utf8')).toMatch(/^CLIENT_HANDSHAKE_TRAFFIC_SECRET [0-9a-f]{64} [0-9a-f]+$/m);
  });

  it('hands the request headers to trace: a B3 context in the HTTP/2 headers is continued', async () => {
    const collector = await startCollector();
    try {
      const port = await start(
        `  trace ${collector.url} {\n    service doh\n    zipkin_max_batch_interval 20ms\n  }\n`,
      );
      const s = await connect(port);
      const req = s.request({
        ':method': 'POST',
        ':path': '/dns-query',
        'x-b3-traceid': '463ac35c9f6413ad48485a3953bb6124',
        'x-b3-spanid': 'a2fb4a1d1a96d312',
        'x-b3-sampled': '1',
      });
      await new Promise<void>((ok, fail) => {
        req.on('response', () => undefined);
        req.on('data', () => undefined);
        req.on('end', ok);
        req.on('error', fail);
        req.end(encodeQuery('small.example.org', 'A', { id: 5 }));
      });
      const [trace] = await collector.waitTraces('doh', 1);
      const root = trace!.find((x) => x.name === 'servedns')!;
      expect(root).toMatchObject({ traceId: '463ac35c9f6413ad48485a3953bb6124', parentId: 'a2fb4a1d1a96d312' });
    } finally {
      await collector.stop();
    }
  });

  it('sends GOAWAY (NO_ERROR) at shutdown', async () => {
    const port = await start();
    const s = await connect(port);
    await post(s, encodeQuery('small.example.org', 'A', { id: 1 }));
    let code = -1;
    s.on('goaway', (c: number) => {
      code = c;
    });
    const stopping = server!.shutdown();
    await waitFor('GOAWAY', () => code >= 0);
    await stopping;
    server = null;
    expect(code).toBe(http2.constants.NGHTTP2_NO_ERROR);
  });
});

describe('H2Session on its own', () => {
  // A session over plain TCP (HTTP/2 with prior knowledge) whose handler keeps every query
  // running until the test ends it: what a slow upstream looks like, without waiting on one.
  it('counts streams reset while their query runs against max_streams (rapid reset)', async () => {
    const running: H2Stream[] = [];
    let closedCount = 0;
    const srv = net.createServer((sock) => {
      new H2Session(
        sock,
        {
          request: (st) => {
            st.working();
            running.push(st);
          },
          closed: () => {
            closedCount++;
          },
        },
        2,
      );
    });
    await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
    try {
      const port = (srv.address() as net.AddressInfo).port;
      const s = http2.connect(`http://127.0.0.1:${port}`);
      sessions.push(s);
      await new Promise((ok) => s.once('remoteSettings', ok));
      expect(s.remoteSettings.maxConcurrentStreams).toBe(2);
      // Two requests, each cancelled at once: their streams close, their queries keep running.
      for (let i = 0; i < 2; i++) {
        const req = s.request({ ':method': 'GET', ':path': `/dns-query?n=${i}` }, { endStream: true });
        req.on('error', () => undefined);
        await waitFor('the request', () => running.length === i + 1);
        req.close(http2.constants.NGHTTP2_CANCEL);
        await waitFor('the reset', () => closedCount === i + 1);
      }
      // A third is refused: two queries still run on this connection.
      const refused = await new Promise<string>((ok) => {
        const req = s.request({ ':method': 'GET', ':path': '/dns-query?n=2' }, { endStream: true });
        req.on('error', (e: Error) => ok(e.message));
        req.on('response', () => ok('answered'));
      });
      expect(refused).toMatch(/NGHTTP2_REFUSED_STREAM/);
      expect(running).toHaveLength(2);
      // One query ends: a new request is taken and answered.
      running[0]!.workDone();
      const status = await new Promise<number>((ok, fail) => {
        const req = s.request({ ':method': 'GET', ':path': '/dns-query?n=3' }, { endStream: true });
        req.on('response', (h) => ok(Number(h[':status'])));
        req.on('error', fail);
        void waitFor('the fourth request', () => running.length === 3).then(() =>
          running[2]!.send({ status: 200, body: Buffer.from('ok'), maxAge: 5 }),
        );
      });
      expect(status).toBe(200);
    } finally {
      srv.close();
    }
  });

  /** A raw HTTP/2 client: frames written by hand, the server's frames read back. */
  async function rawClient(handler: H2Handler): Promise<{
    sock: net.Socket;
    frames: { type: number; flags: number; id: number; payload: Buffer }[];
    closed: () => boolean;
    stop: () => void;
  }> {
    const srv = net.createServer((sock) => {
      new H2Session(sock, handler, 10);
    });
    await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
    const sock = net.connect((srv.address() as net.AddressInfo).port, '127.0.0.1');
    await new Promise((ok) => sock.once('connect', ok));
    const frames: { type: number; flags: number; id: number; payload: Buffer }[] = [];
    let buf = Buffer.alloc(0);
    let isClosed = false;
    sock.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      while (buf.length >= 9) {
        const len = buf.readUIntBE(0, 3);
        if (buf.length < 9 + len) break;
        frames.push({ type: buf[3]!, flags: buf[4]!, id: buf.readUInt32BE(5), payload: buf.subarray(9, 9 + len) });
        buf = buf.subarray(9 + len);
      }
    });
    sock.on('error', () => undefined);
    sock.on('close', () => {
      isClosed = true;
    });
    sock.write(Buffer.concat([PREFACE, frame(4, 0, 0, Buffer.alloc(0))]));
    return {
      sock,
      frames,
      closed: () => isClosed,
      stop: () => {
        sock.destroy();
        srv.close();
      },
    };
  }

  function frame(type: number, flags: number, id: number, payload: Buffer): Buffer {
    const h = Buffer.alloc(9);
    h.writeUIntBE(payload.length, 0, 3);
    h[3] = type;
    h[4] = flags;
    h.writeUInt32BE(id, 5);
    return Buffer.concat([h, payload]);
  }

  /** A POST /dns-query header block (static indexes: 3 :method POST, 7 :scheme https, 4 :path). */
  function postBlock(): Buffer {
    const b = Buffer.alloc(64);
    let o = writeIndexed(b, 0, 3);
    o = writeIndexed(b, o, 7);
    o = writeLiteralWithoutIndexing(b, o, 4, '', '/dns-query');
    return b.subarray(0, o);
  }

  it('ends a connection flooded with empty CONTINUATION frames (ENHANCE_YOUR_CALM)', async () => {
    const c = await rawClient({ request: () => undefined, closed: () => undefined });
    try {
      const flood = [frame(1, 0, 1, postBlock())];
      for (let i = 0; i < 1000; i++) flood.push(frame(9, 0, 1, Buffer.alloc(0)));
      c.sock.write(Buffer.concat(flood));
      const goaway = await waitFor('GOAWAY', () => c.frames.find((f) => f.type === 7));
      expect(goaway.payload.readUInt32BE(4)).toBe(0xb);
      await waitFor('the close', () => c.closed());
    } finally {
      c.stop();
    }
  });

  it('gives the connection window back as body bytes arrive, before any body is complete', async () => {
    const got: H2Stream[] = [];
    const c = await rawClient({ request: (st) => got.push(st), closed: () => undefined });
    try {
      // Five POSTs whose bodies (48 KiB each, 240 KiB in all: within the 256 KiB the server opens)
      // arrive interleaved, none finished.
      const out: Buffer[] = [];
      for (let id = 1; id <= 9; id += 2) out.push(frame(1, 0x4, id, postBlock()));
      for (let part = 0; part < 3; part++)
        for (let id = 1; id <= 9; id += 2) out.push(frame(0, 0, id, Buffer.alloc(16384, 1)));
      c.sock.write(Buffer.concat(out));
      // Window given back on stream 0 beyond the opening update: the client can go on.
      await waitFor(
        'a WINDOW_UPDATE of the connection',
        () => c.frames.filter((f) => f.type === 8 && f.id === 0).length >= 2,
      );
      const ends: Buffer[] = [];
      for (let id = 1; id <= 9; id += 2) ends.push(frame(0, 0x1, id, Buffer.alloc(0)));
      c.sock.write(Buffer.concat(ends));
      await waitFor('five requests', () => got.length === 5);
      expect(got.map((st) => st.body?.length)).toEqual([49152, 49152, 49152, 49152, 49152]);
    } finally {
      c.stop();
    }
  });

  it('takes a request sent a byte per write', async () => {
    const got: H2Stream[] = [];
    const c = await rawClient({ request: (st) => got.push(st), closed: () => undefined });
    try {
      const req = Buffer.concat([frame(1, 0x4, 1, postBlock()), frame(0, 0x1, 1, Buffer.from('abc'))]);
      for (const byte of req) {
        c.sock.write(Buffer.from([byte]));
        await new Promise((ok) => setImmediate(ok));
      }
      await waitFor('the request', () => got.length === 1);
      expect(got[0]!.body?.toString()).toBe('abc');
    } finally {
      c.stop();
    }
  });

  it('answers HEAD with the headers and no body', async () => {
    const srv = net.createServer((sock) => {
      new H2Session(
        sock,
        {
          request: (st) => st.send({ status: 400, body: Buffer.from('invalid request\n'), maxAge: null }),
          closed: () => undefined,
        },
        10,
      );
    });
    await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
    try {
      const s = http2.connect(`http://127.0.0.1:${(srv.address() as net.AddressInfo).port}`);
      sessions.push(s);
      const r = await new Promise<{ status: number; length: string; body: number }>((ok, fail) => {
        const req = s.request({ ':method': 'HEAD', ':path': '/dns-query' }, { endStream: true });
        let status = 0;
        let length = '';
        let body = 0;
        req.on('response', (h) => {
          status = Number(h[':status']);
          length = String(h['content-length']);
        });
        req.on('data', (c: Buffer) => {
          body += c.length;
        });
        req.on('end', () => ok({ status, length, body }));
        req.on('error', fail);
      });
      expect(r).toEqual({ status: 400, length: '16', body: 0 });
    } finally {
      srv.close();
    }
  });
});
