/**
 * DNS over HTTPS (`https://` blocks; docs/corefile.md §7.5) with real clients: kdig +https (POST
 * and GET), Node's http2 client (POST and GET) and its HTTP/1.1 client, the status codes and
 * headers CoreDNS gives bad requests, Cache-Control from the reply's TTL, the responses counter,
 * and the connection caps.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import * as https from 'node:https';
import * as net from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as dnsPacket from 'dns-packet';
import { afterEach, describe, expect, it } from 'vitest';
import { decode } from '../dns/message.js';
import { registry } from '../metrics/registry.js';
import { Server } from './server.js';
import { maxAge } from './doh.js';
import { encodeQuery } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { captureLogs, type LogCapture } from '../../test/helpers/logs.js';
import { freePort } from '../../test/helpers/net.js';
import { h2Request, makeTestPki, type HttpReply } from '../../test/helpers/tls.js';
import { TestUpstream } from '../../test/helpers/upstream.js';
import { waitFor } from '../../test/helpers/wait.js';

const run = promisify(execFile);
const pki = makeTestPki();
const ca = pki.read(pki.caCert);
const HOSTS = join(pki.dir, 'hosts');
writeFileSync(HOSTS, '192.0.2.8 doh.example.org\n');
const corefilePath = join(pki.dir, 'Corefile');

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

async function start(extra = '', hostsExtra = ''): Promise<number> {
  const port = await freePort();
  const text = `https://example.org:${port} {\n  tls ${pki.cert} ${pki.key}\n${extra}  log\n  acl {\n    drop net 127.0.0.9/32\n  }\n  hosts ${HOSTS} {\n    ttl 300\n${hostsExtra}  }\n}\n`;
  writeFileSync(corefilePath, text);
  logs = captureLogs();
  server = new Server({ dnsPort: port, quiet: true, loadSource: async () => ({ path: corefilePath, text }) });
  await server.start();
  return port;
}

const query = encodeQuery('doh.example.org', 'A', { id: 0 });
const b64 = query.toString('base64url');

function http1(port: number, method: string, path: string, body?: Buffer): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, method, path, ca, servername: 'localhost', agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = String(v);
          resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function dohCounter(port: number, status: number): Promise<number> {
  const m = await registry.getSingleMetric('coredns_dns_https_responses_total')?.get();
  const v = m?.values.find((x) => x.labels.server === `https://:${port}` && x.labels.status === String(status));
  return v?.value ?? 0;
}

describe('DNS over HTTPS', () => {
  it('answers kdig +https with POST and GET over HTTP/2', async () => {
    const port = await start();
    for (const get of [false, true]) {
      const { stdout } = await run('kdig', [
        '@127.0.0.1',
        '-p',
        String(port),
        `+tls-ca=${pki.caCert}`,
        '+tls-hostname=localhost',
        '+https',
        ...(get ? ['+https-get'] : []),
        'doh.example.org',
        'A',
      ]);
      expect(stdout).toContain(`HTTP session (HTTP/2-${get ? 'GET' : 'POST'})`);
      expect(stdout).toContain('status: 200');
      expect(stdout).toMatch(/doh\.example\.org\.\s+300\s+IN\s+A\s+192\.0\.2\.8/);
    }
    await waitFor(
      'the log lines',
      () => logs!.lines.filter((l) => /"A IN doh\.example\.org\. tcp /.test(l)).length === 2,
    );
  });

  it('answers dig +https (BIND 9) with POST and GET, the certificate verified', async () => {
    const port = await start();
    for (const get of [false, true]) {
      const { stdout } = await run('dig', [
        '@127.0.0.1',
        '-p',
        String(port),
        get ? '+https-get' : '+https',
        `+tls-ca=${pki.caCert}`,
        '+tls-hostname=localhost',
        '+tries=1',
        '+time=5',
        'doh.example.org',
        'A',
      ]);
      expect(stdout).toContain('status: NOERROR');
      expect(stdout).toMatch(/doh\.example\.org\.\s+300\s+IN\s+A\s+192\.0\.2\.8/);
      expect(stdout).toContain(`(HTTPS${get ? '-GET' : ''})`);
    }
  });

  it('answers Node’s http2 client with POST and GET, with the DoH headers', async () => {
    const port = await start();
    const post = await h2Request(port, ca, {
      method: 'POST',
      path: '/dns-query',
      headers: { 'content-type': 'application/dns-message', accept: 'application/dns-message' },
      body: query,
    });
    const get = await h2Request(port, ca, { method: 'GET', path: `/dns-query?dns=${b64}` });
    for (const r of [post, get]) {
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toBe('application/dns-message');
      expect(r.headers['cache-control']).toBe('max-age=300');
      expect(r.headers['content-length']).toBe(String(r.body.length));
      expect(rrLines(decode(r.body).answers)).toEqual(['doh.example.org. 300 IN A 192.0.2.8']);
    }
    expect(await dohCounter(port, 200)).toBe(2);
  });

  it('serves HTTP/1.1 when the client offers only http/1.1', async () => {
    const port = await start();
    const r = await http1(port, 'GET', `/dns-query?dns=${b64}`);
    expect(r.status).toBe(200);
    expect(rrLines(decode(r.body).answers)).toEqual(['doh.example.org. 300 IN A 192.0.2.8']);
  });

  it('gives CoreDNS’s status codes and bodies to bad requests', async () => {
    const port = await start();
    const plain = { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' };
    const cases: { req: Parameters<typeof h2Request>[2]; status: number; body: string }[] = [
      { req: { method: 'GET', path: '/other' }, status: 404, body: '\n' },
      // The path is judged before the body (CoreDNS's ServeHTTP): too large for another path is 404.
      { req: { method: 'POST', path: '/other', body: Buffer.alloc(65537) }, status: 404, body: '\n' },
      { req: { method: 'GET', path: '/dns-query' }, status: 400, body: 'invalid request\n' },
      { req: { method: 'PUT', path: '/dns-query', body: query }, status: 400, body: 'invalid request\n' },
      { req: { method: 'GET', path: `/dns-query?dns=${b64}==` }, status: 400, body: 'invalid request\n' },
      { req: { method: 'GET', path: `/dns-query?dns=${b64}&dns=${b64}` }, status: 400, body: 'invalid request\n' },
      { req: { method: 'GET', path: '/dns-query?dns=not*base64' }, status: 400, body: 'invalid request\n' },
      // The content type is not checked (CoreDNS): a DNS message under another type is answered,
      {
        req: { method: 'POST', path: '/dns-query', headers: { 'content-type': 'text/plain' }, body: query },
        status: 200,
        body: '',
      },
      // and anything that is not one is a 400, whatever its type.
      { req: { method: 'POST', path: '/dns-query', body: Buffer.from('abc') }, status: 400, body: 'invalid request\n' },
      {
        req: { method: 'POST', path: '/dns-query', body: Buffer.alloc(65537) },
        status: 400,
        body: 'invalid request\n',
      },
    ];
    for (const c of cases) {
      const r = await h2Request(port, ca, c.req);
      expect([c.req.method, c.req.path, r.status]).toEqual([c.req.method, c.req.path, c.status]);
      if (c.status === 200) continue;
      expect(r.body.toString()).toBe(c.body);
      expect(r.headers).toMatchObject({ ...plain, 'content-length': String(c.body.length) });
    }
    expect(await dohCounter(port, 400)).toBe(7);
    expect(await dohCounter(port, 404)).toBe(2);
    // HTTP/1.1 alike.
    expect((await http1(port, 'POST', '/other', Buffer.alloc(65537))).status).toBe(404);
  });

  it('answers 500 No response when the chain writes nothing (acl drop)', async () => {
    const port = await start();
    const r = await new Promise<HttpReply>((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port,
          method: 'GET',
          path: `/dns-query?dns=${b64}`,
          ca,
          servername: 'localhost',
          localAddress: '127.0.0.9',
          agent: false,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: {}, body: Buffer.concat(chunks) }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(r.status).toBe(500);
    expect(r.body.toString()).toBe('No response\n');
  });

  it('max_connections caps the listener: the longest-idle connection is closed for a new one', async () => {
    const port = await start('  https {\n    max_connections 5\n    max_streams 10\n  }\n');
    const listener = [...server!.listeners.values()][0]!;
    for (let i = 0; i < 8; i++) {
      await new Promise<void>((resolve) => {
        const s = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.3' });
        sockets.push(s);
        s.on('error', () => undefined);
        s.once('connect', () => resolve());
      });
    }
    await waitFor('the cap', () => listener.doh!.size === 5 && listener.doh!.evicted >= 3);
    const r = await h2Request(port, ca, { method: 'GET', path: `/dns-query?dns=${b64}` });
    expect(r.status).toBe(200);
    expect(listener.doh!.size).toBeLessThanOrEqual(5);
  });
});

describe('DoH write timeout', () => {
  let upstream: TestUpstream | null = null;
  afterEach(async () => {
    await upstream?.stop();
    upstream = null;
  });

  // Go's http.Server WriteTimeout (CoreDNS's 5 s, here `timeouts { write 1s }`): a request still
  // unanswered when it passes is cut — the HTTP/2 stream reset with INTERNAL_ERROR, an HTTP/1.1
  // connection closed — before forward's own 4 s budget would answer SERVFAIL.
  it('resets an HTTP/2 stream and closes an HTTP/1.1 connection whose answer is late', async () => {
    upstream = await TestUpstream.start();
    upstream.defaultBehaviour = { drop: true };
    const port = await start(
      `  timeouts {\n    write 1s\n  }\n  forward slow.example.org 127.0.0.1:${upstream.port}\n`,
      '    fallthrough\n',
    );
    const listener = [...server!.listeners.values()][0]!;
    const slow = encodeQuery('slow.example.org', 'A', { id: 0 }).toString('base64url');
    await expect(h2Request(port, ca, { method: 'GET', path: `/dns-query?dns=${slow}` }, 10_000)).rejects.toThrow(
      /NGHTTP2_INTERNAL_ERROR/,
    );
    expect(listener.doh!.writeTimedOut).toBe(1);
    await expect(http1(port, 'GET', `/dns-query?dns=${slow}`)).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect(listener.doh!.writeTimedOut).toBe(2);
    // Answers in time are not touched.
    const r = await h2Request(port, ca, { method: 'GET', path: `/dns-query?dns=${b64}` });
    expect(r.status).toBe(200);
  });
});

describe('maxAge', () => {
  it('is the smallest TTL of a NOERROR reply and 5 s for an error', () => {
    const base = {
      type: 'response' as const,
      id: 1,
      flags: 0x8180,
      questions: [{ name: 'a.example', type: 'A' as const, class: 'IN' as const }],
    };
    const enc = (extra: Partial<dnsPacket.Packet>): Buffer => dnsPacket.encode({ ...base, ...extra });
    expect(
      maxAge(
        enc({
          answers: [
            { name: 'a.example', type: 'A', ttl: 30, data: '192.0.2.1' },
            { name: 'a.example', type: 'A', ttl: 20, data: '192.0.2.2' },
          ],
        }),
      ),
    ).toBe(20);
    expect(maxAge(enc({ flags: 0x8182 }))).toBe(5);
    expect(maxAge(enc({}))).toBe(5);
  });
});
