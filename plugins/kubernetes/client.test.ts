import { mkdtempSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { logger } from '../../src/log.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { ApiClient, ApiError, PageTooLargeError, readJson } from './client.js';
import { KubeIndexSource } from './indexsource.js';
import { fixtureObjects } from './testdata.js';
import { waitFor } from '../../test/helpers/wait.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function kubeconfig(server: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'k8s-kubeconfig-'));
  const path = join(dir, 'config');
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters:
- name: wrong
  cluster:
    server: http://127.0.0.1:1
    insecure-skip-tls-verify: true
- name: sandbox
  cluster:
    server: ${server}
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: abc
contexts:
- name: broken
  context: { cluster: wrong, user: u }
- name: sb
  context: { cluster: sandbox, user: u }
current-context: broken
`,
  );
  return path;
}

const base = { endpoint: null, tls: null, qps: 0, burst: 0, maxInflight: 0 };
/** WatchSettings beyond the client's: everything watched, nothing extra kept. */
const watched = {
  labels: null,
  namespaceLabels: null,
  endpoints: true,
  pods: false,
  zonal: false,
  podNames: false,
  multicluster: false,
};

async function startAndSync(ix: KubeIndexSource): Promise<void> {
  ix.start();
  await waitFor(
    () => `the index to sync (not ready: ${ix.notReadyReason()})`,
    () => ix.synced(),
  );
}

describe('API client configuration', () => {
  it('uses a kubeconfig file and the named context', async () => {
    const sb: Sandbox = await startSandbox({ objects: fixtureObjects(), log: () => undefined });
    cleanups.push(() => sb.close());
    const ix = new KubeIndexSource(
      { ...base, ...watched, kubeconfig: { path: kubeconfig(sb.url), context: 'sb' } },
      logger('kubernetes'),
    );
    cleanups.push(() => ix.stop());
    await startAndSync(ix);
    expect(ix.store.services.size).toBe(14);
  });

  it('syncs with a client-side rate limit and one request in flight', async () => {
    const sb: Sandbox = await startSandbox({ objects: fixtureObjects(), log: () => undefined });
    cleanups.push(() => sb.close());
    const ix = new KubeIndexSource(
      { ...base, endpoint: sb.url, qps: 50, burst: 2, maxInflight: 1, ...watched, kubeconfig: null, pods: true },
      logger('kubernetes'),
    );
    cleanups.push(() => ix.stop());
    await startAndSync(ix);
    expect(ix.store.pods.size).toBe(3);
  });

  it("rejects a context that does not exist (the credential helper's error)", async () => {
    await expect(
      ApiClient.create({ ...base, kubeconfig: { path: kubeconfig('http://127.0.0.1:2'), context: 'nope' } }),
    ).rejects.toThrow(/context "nope" does not exist/);
  });

  it('a kubeconfig error is a startup error of the index', async () => {
    const ix = new KubeIndexSource(
      { ...base, ...watched, kubeconfig: { path: kubeconfig('http://127.0.0.1:2'), context: 'nope' } },
      logger('kubernetes'),
    );
    cleanups.push(() => ix.stop());
    ix.start();
    await expect(ix.whenStarted()).rejects.toThrow(/context "nope" does not exist/);
    expect(ix.watches).toHaveLength(0);
  });

  it('needs the in-cluster environment without endpoint or kubeconfig', async () => {
    const saved = [process.env['KUBERNETES_SERVICE_HOST'], process.env['KUBERNETES_SERVICE_PORT']];
    delete process.env['KUBERNETES_SERVICE_HOST'];
    delete process.env['KUBERNETES_SERVICE_PORT'];
    try {
      await expect(ApiClient.create({ ...base, kubeconfig: null })).rejects.toThrow(
        /KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined/,
      );
    } finally {
      if (saved[0] !== undefined) process.env['KUBERNETES_SERVICE_HOST'] = saved[0];
      if (saved[1] !== undefined) process.env['KUBERNETES_SERVICE_PORT'] = saved[1];
    }
  });

  it('plain http endpoint: host label is host:port', () => {
    const c = new ApiClient({ ...base, endpoint: 'http://127.0.0.1:8001', kubeconfig: null });
    expect(c.host).toBe('127.0.0.1:8001');
  });
});

describe('response bodies', () => {
  /** A server that writes `chunks` as separate writes, and the response to a GET of it. */
  async function respond(chunks: Buffer[]): Promise<http.IncomingMessage> {
    const srv = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const next = (i: number): void => {
        if (i === chunks.length) return void res.end();
        res.write(chunks[i], () => setImmediate(() => next(i + 1)));
      };
      next(0);
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    cleanups.push(() => new Promise<void>((r) => srv.close(() => r())));
    const port = (srv.address() as { port: number }).port;
    return new Promise((resolve, reject) =>
      http.get({ host: '127.0.0.1', port, path: '/' }, resolve).on('error', reject),
    );
  }

  it('decodes a body whose UTF-8 characters are split between reads', async () => {
    const text = Buffer.from(JSON.stringify({ items: [{ name: 'caf\u00e9-\u{1F600}' }] }));
    // Cut inside the two-byte é and inside the four-byte emoji.
    const e = text.indexOf(0xc3) + 1;
    const f = text.indexOf(0xf0) + 2;
    const body = await readJson(await respond([text.subarray(0, e), text.subarray(e, f), text.subarray(f)]), 1000);
    expect(body).toEqual({ items: [{ name: 'caf\u00e9-\u{1F600}' }] });
  });

  it('a body that is not JSON is an ApiError quoting its start', async () => {
    const err = await readJson(await respond([Buffer.from('<html>proxy error</html>')]), 1000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as Error).message).toMatch(/invalid JSON from the API server \(HTTP 200\): <html>proxy error/);
  });

  it('reads a body of up to maxChars characters, and no more', async () => {
    const text = JSON.stringify({ items: [{ name: 'x'.repeat(5000) }] });
    const chunks = [
      Buffer.from(text.slice(0, 2000)),
      Buffer.from(text.slice(2000, 4000)),
      Buffer.from(text.slice(4000)),
    ];
    expect(await readJson(await respond(chunks), text.length)).toEqual(JSON.parse(text));
    const err = await readJson(await respond(chunks), text.length - 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PageTooLargeError);
    expect((err as Error).message).toBe(`list page larger than ${text.length - 1} characters`);
  });

  it('stops reading an endless body at maxChars and closes its connection', async () => {
    let sent = 0;
    let closed = false;
    const srv = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.on('close', () => {
        closed = true;
      });
      const chunk = Buffer.alloc(16 * 1024, 0x78);
      const pump = (): void => {
        while (!res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      res.write('{"items":["');
      pump();
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          srv.closeAllConnections();
          srv.close(() => r());
        }),
    );
    const port = (srv.address() as { port: number }).port;
    const res = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http.get({ host: '127.0.0.1', port, path: '/' }, resolve).on('error', reject),
    );
    const err = await readJson(res, 1024 * 1024).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PageTooLargeError);
    expect((err as PageTooLargeError).maxChars).toBe(1024 * 1024);
    expect(res.destroyed).toBe(true);
    await waitFor('the server to see the connection closed', () => closed);
    expect(closed).toBe(true);
    // what the server got out before the close: the bound plus what the socket buffers held
    expect(sent).toBeLessThan(64 * 1024 * 1024);
  });
});
