/**
 * A small etcd v3 client over etcd's gRPC gateway (the JSON API every etcd ≥ 3.4 serves on its
 * client URLs: `/v3/kv/range`, `/v3/watch`, `/v3/auth/authenticate`, `/v3/lease/timetolive`), with
 * node's http/https: no dependency, TLS with a client certificate and a private CA, simple-auth
 * tokens. Only what the etcd plugin needs: a paged range read at one revision, a watch of a prefix
 * from a revision, and a lease's remaining TTL. Why not the `etcd3` package: plugins/etcd/README.md.
 */
import type * as http from 'node:http';
import type * as https from 'node:https';
import { nodeHttp, nodeHttps } from '../../src/util/require.js';

/** One key as read or watched. Values are etcd's bytes read as UTF-8 (SkyDNS values are JSON). */
export interface Kv {
  readonly key: string;
  readonly value: string;
  /** Lease id (decimal, '0' = none). */
  readonly lease: string;
}

export type WatchEvent = { readonly type: 'put'; readonly kv: Kv } | { readonly type: 'delete'; readonly key: string };

export interface TlsMaterial {
  readonly cert: Buffer | null;
  readonly key: Buffer | null;
  /** null: the system's CAs. */
  readonly ca: Buffer | null;
}

export interface ClientOptions {
  /** `http://host:port`, `https://host:port` or `host:port` (TLS when `tls` is set), in order of preference. */
  readonly endpoints: readonly string[];
  /** Client TLS, or null: https:// endpoints then use the system's CAs. */
  readonly tls: TlsMaterial | null;
  readonly credentials: { readonly username: string; readonly password: string } | null;
  /** Bound on one request (CoreDNS's etcdTimeout, 5 s). */
  readonly timeoutMs: number;
}

/** An error etcd answered (grpc code and message), or a transport failure. */
export class EtcdError extends Error {
  constructor(
    message: string,
    readonly grpcCode: number | null = null,
  ) {
    super(message);
  }
}

/** etcd's Unauthenticated: the token expired (simple tokens live 5 minutes unused) or was revoked. */
const UNAUTHENTICATED = 16;

/** What a watch reports while it runs. */
export interface WatchHandlers {
  /** The watch is established (etcd answered `created`). */
  created(): void;
  /** Changes at one revision, in order. */
  events(events: readonly WatchEvent[], revision: number): void;
  /** The watch ended: an error, or the start revision was compacted (`compacted` set: list again). */
  ended(err: Error, compacted: boolean): void;
}

export interface Watch {
  close(): void;
}

function b64(s: string): string {
  return Buffer.from(s, 'utf8').toString('base64');
}

function unb64(v: unknown): string {
  return typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : '';
}

/** The range end that makes a range over every key starting with `prefix` (clientv3.GetPrefixRangeEnd). */
export function prefixRangeEnd(prefix: string): string {
  const b = Buffer.from(prefix, 'utf8');
  for (let i = b.length - 1; i >= 0; i--) {
    if (b[i]! < 0xff) {
      const end = Buffer.from(b.subarray(0, i + 1));
      end[i] = end[i]! + 1;
      return end.toString('base64');
    }
  }
  return Buffer.from([0]).toString('base64');
}

function num(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v !== '') return Number(v);
  return 0;
}

function obj(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function toKv(v: unknown): Kv {
  const o = obj(v);
  return { key: unb64(o['key']), value: unb64(o['value']), lease: typeof o['lease'] === 'string' ? o['lease'] : '0' };
}

/** The gateway's error body (`{"error": …, "code": …, "message": …}`), or null. */
function gatewayError(body: Record<string, unknown>): EtcdError | null {
  const inner = obj(body['error']);
  const message =
    body['message'] ?? inner['message'] ?? (typeof body['error'] === 'string' ? body['error'] : undefined);
  const code = body['code'] ?? inner['grpc_code'];
  if (message === undefined && code === undefined) return null;
  return new EtcdError(`etcdserver: ${String(message ?? 'error')}`, typeof code === 'number' ? code : null);
}

export class EtcdClient {
  /** The endpoint requests go to; moves to the next one on a transport failure. */
  private current = 0;
  private token: string | null = null;
  private readonly httpAgent: http.Agent = new nodeHttp.Agent({ keepAlive: true, keepAliveMsecs: 5000 });
  /** Made on the first https:// request: loading TLS costs every isolate ~4 MiB (src/util/require.ts). */
  private httpsAgent: https.Agent | null = null;

  constructor(private readonly opts: ClientOptions) {}

  private secureAgent(): https.Agent {
    if (this.httpsAgent) return this.httpsAgent;
    const tls = this.opts.tls;
    this.httpsAgent = new (nodeHttps().Agent)({
      keepAlive: true,
      keepAliveMsecs: 5000,
      minVersion: 'TLSv1.2',
      ...(tls?.ca ? { ca: tls.ca } : {}),
      ...(tls?.cert ? { cert: tls.cert } : {}),
      ...(tls?.key ? { key: tls.key } : {}),
    });
    return this.httpsAgent;
  }

  /** The endpoint in use (for log lines). */
  get endpoint(): string {
    return this.opts.endpoints[this.current]!;
  }

  /** A transport failure: the next request tries the next endpoint. */
  private rotate(): void {
    this.current = (this.current + 1) % this.opts.endpoints.length;
  }

  private target(path: string): { url: URL; secure: boolean } {
    const ep = this.endpoint;
    const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(ep) ? ep : `${this.opts.tls ? 'https' : 'http'}://${ep}`;
    const url = new URL(path, withScheme);
    return { url, secure: url.protocol === 'https:' };
  }

  private open(path: string, body: string, headers: Record<string, string>): http.ClientRequest {
    const { url, secure } = this.target(path);
    const options: http.RequestOptions = {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers },
      agent: secure ? this.secureAgent() : this.httpAgent,
    };
    const req = secure ? nodeHttps().request(url, options) : nodeHttp.request(url, options);
    req.end(body);
    return req;
  }

  private async authHeaders(): Promise<Record<string, string>> {
    const c = this.opts.credentials;
    if (!c) return {};
    if (this.token === null) {
      const r = await this.post('/v3/auth/authenticate', { name: c.username, password: c.password }, false);
      const token = r['token'];
      if (typeof token !== 'string') throw new EtcdError('etcd: authenticate returned no token');
      this.token = token;
    }
    return { authorization: this.token };
  }

  /** One JSON request and its answer; a transport failure moves to the next endpoint. */
  private async post(path: string, body: object, auth = true, retried = false): Promise<Record<string, unknown>> {
    const headers = auth ? await this.authHeaders() : {};
    try {
      return await new Promise((resolve, reject) => {
        const req = this.open(path, JSON.stringify(body), headers);
        req.setTimeout(this.opts.timeoutMs, () =>
          req.destroy(new EtcdError(`context deadline exceeded (${this.endpoint})`)),
        );
        req.on('error', reject);
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            let parsed: Record<string, unknown>;
            try {
              parsed = obj(JSON.parse(Buffer.concat(chunks).toString('utf8')));
            } catch {
              reject(new EtcdError(`etcd: ${path}: HTTP ${res.statusCode ?? 0}, not JSON`));
              return;
            }
            const err = gatewayError(parsed);
            if (err) reject(err);
            else if ((res.statusCode ?? 0) >= 300) reject(new EtcdError(`etcd: ${path}: HTTP ${res.statusCode ?? 0}`));
            else resolve(parsed);
          });
        });
      });
    } catch (e) {
      if (e instanceof EtcdError && e.grpcCode !== null) {
        if (e.grpcCode === UNAUTHENTICATED && auth && this.opts.credentials && !retried) {
          this.token = null;
          return this.post(path, body, auth, true);
        }
        throw e;
      }
      this.rotate();
      throw e instanceof Error ? e : new Error(String(e));
    }
  }

  /**
   * Every key under `prefix` at one revision, read in pages of `pageSize` keys (a large zone is
   * never one response body), in key order.
   */
  async rangePrefix(prefix: string, pageSize = 1000): Promise<{ revision: number; kvs: Kv[] }> {
    const end = prefixRangeEnd(prefix);
    const kvs: Kv[] = [];
    let from = b64(prefix);
    let revision = 0;
    for (;;) {
      const r = await this.post('/v3/kv/range', {
        key: from,
        range_end: end,
        limit: pageSize,
        ...(revision ? { revision } : {}),
      });
      if (!revision) revision = num(obj(r['header'])['revision']);
      const page = Array.isArray(r['kvs']) ? r['kvs'].map(toKv) : [];
      kvs.push(...page);
      if (r['more'] !== true || page.length === 0) break;
      // The next page starts just after the last key read.
      from = Buffer.concat([Buffer.from(page[page.length - 1]!.key, 'utf8'), Buffer.from([0])]).toString('base64');
    }
    return { revision, kvs };
  }

  /** A cheap request that fails when the endpoint does not answer (the watch's liveness check). */
  async ping(key: string): Promise<void> {
    await this.post('/v3/kv/range', { key: b64(key), count_only: true });
  }

  /** The remaining seconds of a lease, or 0 when it is gone (clientv3 TimeToLive). */
  async leaseTimeToLive(id: string): Promise<number> {
    const r = await this.post('/v3/lease/timetolive', { ID: id });
    return num(r['TTL']);
  }

  /**
   * Watch every key under `prefix` from `startRevision` on. The gateway streams one JSON object
   * per line; the watch ends (once) on an error, a closed stream, a cancel or a compaction.
   */
  watch(prefix: string, startRevision: number, h: WatchHandlers): Watch {
    let done = false;
    let req: http.ClientRequest | null = null;
    const end = (err: Error, compacted: boolean): void => {
      if (done) return;
      done = true;
      req?.destroy();
      h.ended(err, compacted);
    };
    const body = JSON.stringify({
      create_request: { key: b64(prefix), range_end: prefixRangeEnd(prefix), start_revision: startRevision },
    });
    this.authHeaders().then(
      (headers) => {
        if (done) return;
        req = this.open('/v3/watch', body, headers);
        req.on('socket', (s) => s.setKeepAlive(true, 5000));
        // No response head within the bound: the endpoint is not answering.
        req.setTimeout(this.opts.timeoutMs, () => {
          if (!created) {
            this.rotate();
            end(new EtcdError(`watch: no answer from ${this.endpoint} within ${this.opts.timeoutMs} ms`), false);
          }
        });
        let created = false;
        req.on('error', (e) => {
          this.rotate();
          end(e, false);
        });
        req.on('response', (res) => {
          let buf = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            buf += chunk;
            for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
              const line = buf.slice(0, nl).trim();
              buf = buf.slice(nl + 1);
              if (line === '' || done) continue;
              let m: Record<string, unknown>;
              try {
                m = obj(JSON.parse(line));
              } catch {
                end(new EtcdError('watch: a line of the stream is not JSON'), false);
                return;
              }
              const err = gatewayError(m);
              if (err) {
                if (err.grpcCode === UNAUTHENTICATED) this.token = null;
                end(err, false);
                return;
              }
              const result = obj(m['result']);
              const compact = num(result['compact_revision']);
              if (compact > 0) {
                end(new EtcdError(`watch: revision ${startRevision} compacted (now ${compact})`), true);
                return;
              }
              if (result['canceled'] === true) {
                end(new EtcdError(`watch canceled: ${String(result['cancel_reason'] ?? '')}`), false);
                return;
              }
              if (result['created'] === true && !created) {
                created = true;
                req?.setTimeout(0);
                h.created();
              }
              const events = Array.isArray(result['events']) ? result['events'] : [];
              if (events.length === 0) continue;
              const out: WatchEvent[] = events.map((e: unknown): WatchEvent => {
                const o = obj(e);
                const kv = toKv(o['kv']);
                return o['type'] === 'DELETE' ? { type: 'delete', key: kv.key } : { type: 'put', kv };
              });
              h.events(out, num(obj(result['header'])['revision']));
            }
          });
          res.on('error', (e) => end(e, false));
          res.on('end', () => end(new EtcdError(`watch: ${this.endpoint} closed the stream`), false));
          if ((res.statusCode ?? 0) >= 300) end(new EtcdError(`watch: HTTP ${res.statusCode ?? 0}`), false);
        });
      },
      (e: unknown) => end(e instanceof Error ? e : new Error(String(e)), false),
    );
    return { close: () => end(new EtcdError('watch closed'), false) };
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent?.destroy();
  }
}
