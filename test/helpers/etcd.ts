/**
 * A standalone etcd on loopback for the etcd plugin's tests (the `.bin/etcd` the control-plane
 * tests build, scripts/control-plane/build.sh): ephemeral client and peer ports, a temp data dir,
 * optionally TLS with a CA, a server and a client certificate made by openssl (client certificates
 * required), and the writes external-dns's CoreDNS provider makes, through etcd's JSON gateway.
 * `stop()` / `start()` again keep the ports and the data (an etcd restart); `close()` removes it.
 * Everything is stopped by PID; nothing talks to anything but 127.0.0.1.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN_DIR, ETCD_VERSION, singleNodeEtcdArgs } from './controlplane.js';
import { freePort } from './net.js';
import { isExecutable } from './spawn.js';
import { anyError, waitFor } from './wait.js';

export interface EtcdTlsFiles {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

/** Why `.bin/etcd` cannot run (with how to build it), or null. Tests fail with it; they never skip. */
export function etcdMissing(): string | null {
  const p = join(BIN_DIR, 'etcd');
  if (!isExecutable(p))
    return `${p} is missing: build it with \`bash scripts/control-plane/build.sh\` (docs/testing.md)`;
  const r = spawnSync(p, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  const first = (r.stdout ?? '').split('\n')[0] ?? '';
  if (first !== `etcd Version: ${ETCD_VERSION}`) return `${p} reports '${first}', expected etcd ${ETCD_VERSION}`;
  return null;
}

function openssl(dir: string, args: string[]): void {
  const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  if (r.error) throw new Error(`openssl not runnable: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.stderr}`);
}

/** A CA, a server certificate for 127.0.0.1 and a client certificate, in `dir`. */
function makeCertificates(dir: string): { server: EtcdTlsFiles; client: EtcdTlsFiles } {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(dir, [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=etcd-test-ca',
  ]);
  const leaf = (name: string, usage: string, san: string): void =>
    openssl(dir, [
      'req',
      '-x509',
      ...ec,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-addext',
      `subjectAltName=${san}`,
      '-addext',
      'basicConstraints=critical,CA:FALSE',
      '-addext',
      `extendedKeyUsage=${usage}`,
    ]);
  // etcd's own gateway dials its gRPC server with the server certificate: it needs clientAuth too.
  leaf('server', 'serverAuth,clientAuth', 'IP:127.0.0.1,DNS:localhost');
  leaf('client', 'clientAuth', 'DNS:client');
  const f = (n: string): EtcdTlsFiles => ({
    ca: join(dir, 'ca.crt'),
    cert: join(dir, `${n}.crt`),
    key: join(dir, `${n}.key`),
  });
  return { server: f('server'), client: f('client') };
}

export class EtcdServer {
  private proc: ChildProcess | null = null;
  private exited: Promise<number | null> = Promise.resolve(null);
  private readonly agent: http.Agent;

  private constructor(
    readonly dir: string,
    readonly clientPort: number,
    private readonly peerPort: number,
    /** The client certificate, CA and key the tests give the plugin (TLS only). */
    readonly clientTls: EtcdTlsFiles | null,
    private readonly serverTls: EtcdTlsFiles | null,
  ) {
    this.agent = clientTls
      ? new https.Agent({
          ca: readFileSync(clientTls.ca),
          cert: readFileSync(clientTls.cert),
          key: readFileSync(clientTls.key),
        })
      : new http.Agent();
  }

  /** Start a fresh etcd (TLS with client certificates when `tls`); resolves when it serves. */
  static async start(opts: { tls?: boolean } = {}): Promise<EtcdServer> {
    const missing = etcdMissing();
    if (missing) throw new Error(missing);
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-etcd-'));
    const certs = opts.tls ? makeCertificates(dir) : null;
    const s = new EtcdServer(dir, await freePort(), await freePort(), certs?.client ?? null, certs?.server ?? null);
    await s.start();
    return s;
  }

  /** `http://127.0.0.1:PORT` (https with TLS): the plugin's `endpoint`. */
  get endpoint(): string {
    return `${this.clientTls ? 'https' : 'http'}://127.0.0.1:${this.clientPort}`;
  }

  /** (Re)start on the same ports and data dir; resolves once a read succeeds. */
  async start(): Promise<void> {
    if (this.proc) return;
    const client = this.endpoint;
    const peer = `http://127.0.0.1:${this.peerPort}`;
    const tls = this.serverTls
      ? [
          '--cert-file',
          this.serverTls.cert,
          '--key-file',
          this.serverTls.key,
          '--trusted-ca-file',
          this.serverTls.ca,
          '--client-cert-auth',
        ]
      : [];
    const log = openSync(join(this.dir, 'etcd.log'), 'a');
    const proc = spawn(join(BIN_DIR, 'etcd'), [...singleNodeEtcdArgs(join(this.dir, 'data'), client, peer), ...tls], {
      cwd: this.dir,
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    this.proc = proc;
    this.exited = new Promise((r) => proc.once('exit', (code, sig) => r(code ?? (sig ? 128 : null))));
    await waitFor(
      `etcd on ${client} to answer (log: ${join(this.dir, 'etcd.log')})`,
      () => this.range('/').then(() => true),
      {
        timeoutMs: 60_000,
        everyMs: 100,
        retry: anyError,
      },
    );
  }

  /** Stop etcd (SIGTERM, by PID) and wait for it to exit; the data stays for `start()`. */
  async stop(): Promise<void> {
    const p = this.proc;
    if (!p) return;
    this.proc = null;
    p.kill('SIGTERM');
    await this.exited;
  }

  async close(): Promise<void> {
    await this.stop();
    this.agent.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** One gateway request. */
  private post(path: string, body: object): Promise<Record<string, unknown>> {
    const data = JSON.stringify(body);
    const url = new URL(path, this.endpoint);
    const mod = this.clientTls ? https : http;
    return new Promise((resolve, reject) => {
      const req = mod.request(url, {
        method: 'POST',
        agent: this.agent,
        headers: { 'content-type': 'application/json' },
      });
      req.setTimeout(5000, () => req.destroy(new Error(`etcd ${path}: no answer`)));
      req.on('error', reject);
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          if ((res.statusCode ?? 0) >= 300) reject(new Error(`etcd ${path}: HTTP ${res.statusCode}: ${text}`));
          else resolve(JSON.parse(text) as Record<string, unknown>);
        });
      });
      req.end(data);
    });
  }

  private range(key: string): Promise<Record<string, unknown>> {
    return this.post('/v3/kv/range', { key: b64(key), count_only: true });
  }

  async put(key: string, value: string, lease?: string): Promise<void> {
    await this.post('/v3/kv/put', { key: b64(key), value: b64(value), ...(lease ? { lease } : {}) });
  }

  async del(key: string): Promise<void> {
    await this.post('/v3/kv/deleterange', { key: b64(key) });
  }

  /** Delete every key under `prefix`. */
  async delPrefix(prefix: string): Promise<void> {
    await this.post('/v3/kv/deleterange', { key: b64(prefix), range_end: b64(prefixEnd(prefix)) });
  }

  /** A lease of `ttl` seconds; its id. */
  async grant(ttl: number): Promise<string> {
    const r = await this.post('/v3/lease/grant', { TTL: ttl });
    return String(r['ID']);
  }

  /** Compact the history up to the current revision (a watch from before it must list again). */
  async compact(): Promise<void> {
    const r = await this.post('/v3/kv/range', { key: b64('/'), count_only: true });
    const rev = Number((r['header'] as { revision: string }).revision);
    await this.post('/v3/kv/compaction', { revision: rev, physical: true });
  }

  /** How many watchers etcd serves (its `etcd_debugging_mvcc_watcher_total` gauge). */
  async watchers(): Promise<number> {
    const url = new URL('/metrics', this.endpoint);
    const text = await new Promise<string>((resolve, reject) => {
      const mod = this.clientTls ? https : http;
      const req = mod.get(url, { agent: this.agent }, (res) => {
        let t = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (t += c));
        res.on('end', () => resolve(t));
      });
      req.on('error', reject);
    });
    const m = /^etcd_debugging_mvcc_watcher_total (\d+)/m.exec(text);
    if (!m) throw new Error('etcd /metrics has no etcd_debugging_mvcc_watcher_total');
    return Number(m[1]);
  }

  /** A user `root` with `password`, and authentication switched on. */
  async enableAuth(password: string): Promise<void> {
    await this.post('/v3/auth/user/add', { name: 'root', password });
    await this.post('/v3/auth/user/grant', { user: 'root', role: 'root' });
    await this.post('/v3/auth/enable', {});
  }
}

function b64(s: string): string {
  return Buffer.from(s, 'utf8').toString('base64');
}

function prefixEnd(prefix: string): string {
  const b = Buffer.from(prefix, 'utf8');
  b[b.length - 1] = b[b.length - 1]! + 1;
  return b.toString('utf8');
}
