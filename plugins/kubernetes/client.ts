/**
 * The HTTP side of talking to the API server. `endpoint http://...` without TLS is plain HTTP with
 * no credentials (local API servers, tests); `endpoint https://...` + `tls` uses the given files.
 * In-cluster and kubeconfig authentication are resolved by @kubernetes/client-node's `KubeConfig`
 * in a short-lived child process (`credentials.ts`), because importing client-node costs ~80 MiB of
 * RSS: this module must never import it (only `import type` from `credentials.js`). The child
 * prints the server URL, TLS material and headers, which are applied here to every request. A
 * token file (in-cluster service account, kubeconfig `token-file`) is re-read at most once a minute
 * and right after a 401; other credentials (exec, OIDC, ...) are resolved again by a new child once
 * they expire or after a 401, with backoff.
 *
 * Requests go through a client-side rate limiter (`apiserver_qps`/`apiserver_burst`) and an
 * in-flight cap (`apiserver_max_inflight`) and are measured by the rest-client metrics. Every API
 * connection has TCP keepalive on and a connect timeout; idle connections are pooled by the
 * client's own agent, which {@link ApiClient.dropIdleConnections} empties after a connection was
 * found dead.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import type * as http from 'node:http';
import type * as https from 'node:https';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { CredentialRequest, Credentials } from './credentials.js';
import { hostLabel, rateLimiterDuration, requestDuration, requestsTotal } from './metrics.js';
import { nodeHttp, nodeHttps, nodeTls } from '../../src/util/require.js';

export type { CredentialRequest, Credentials } from './credentials.js';

export interface ClientSettings {
  endpoint: string | null;
  tls: { cert: string; key: string; ca: string } | null;
  kubeconfig: { path: string; context: string | null } | null;
  qps: number;
  burst: number;
  maxInflight: number;
  /** Connect timeout (TCP, and the TLS handshake) in ms; default {@link CONNECT_TIMEOUT_MS}. */
  connectTimeoutMs?: number;
}

export class ApiError extends Error {
  /**
   * @param retryAfterMs the server's `Retry-After` (429, or 5xx with the header), in ms; the
   * next attempt waits at least this long.
   */
  constructor(
    message: string,
    readonly status: number,
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
  }
}

/** TCP keepalive on API connections: first probe after this much idle time (client-go: 30 s). */
export const KEEPALIVE_INITIAL_DELAY_MS = 15_000;
/** Connecting to the API server (TCP, and the TLS handshake for https) gives up after this. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** A `Retry-After` longer than this is shortened to it. */
export const RETRY_AFTER_MAX_MS = 300_000;

/**
 * `Retry-After` of a response in ms (delta-seconds or an HTTP date; capped at
 * {@link RETRY_AFTER_MAX_MS}), or null when absent or unparsable.
 */
export function retryAfterMs(value: string | string[] | undefined, now = Date.now()): number | null {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return null;
  let ms: number;
  if (/^\d+$/.test(v)) ms = Number(v) * 1000;
  else {
    const t = Date.parse(v);
    if (Number.isNaN(t)) return null;
    ms = Math.max(0, t - now);
  }
  return Math.min(ms, RETRY_AFTER_MAX_MS);
}

/**
 * Keepalive and a connect timeout for the socket of `req` (called on its 'socket' event; a pooled
 * socket that is already connected only gets keepalive re-armed).
 */
function armSocket(req: http.ClientRequest, socket: Socket, host: string, timeoutMs: number): void {
  socket.setKeepAlive(true, KEEPALIVE_INITIAL_DELAY_MS);
  const tls = socket instanceof nodeTls().TLSSocket;
  // A pooled socket is connected (and a TLS one past its handshake) already; a new one is still
  // connecting when it is handed to the request.
  if (!socket.connecting) return;
  const ready = tls ? 'secureConnect' : 'connect';
  const what = tls ? 'TLS handshake with' : 'connect to';
  const timer = setTimeout(() => req.destroy(new Error(`${what} ${host}: i/o timeout (${timeoutMs} ms)`)), timeoutMs);
  const done = (): void => {
    clearTimeout(timer);
    socket.off(ready, done);
    req.off('close', done);
  };
  socket.once(ready, done);
  req.once('close', done);
}

/** Token bucket (`apiserver_qps` / `apiserver_burst`). */
class RateLimiter {
  private tokens: number;
  private last = Date.now();

  constructor(
    private readonly qps: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  async take(): Promise<void> {
    for (;;) {
      const now = Date.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await new Promise((r) => setTimeout(r, Math.ceil(((1 - this.tokens) / this.qps) * 1000)));
    }
  }
}

class Semaphore {
  private active = 0;
  private readonly waiters: (() => void)[] = [];

  constructor(private readonly max: number) {}

  async acquire(): Promise<void> {
    if (this.max <= 0) return;
    if (this.active < this.max) {
      this.active++;
      return;
    }
    await new Promise<void>((r) => this.waiters.push(r));
  }

  release(): void {
    if (this.max <= 0) return;
    const w = this.waiters.shift();
    if (w) w();
    else this.active--;
  }
}

/** How often a token file is re-read (client-node's FileAuth and client-go: once a minute). */
const TOKEN_FILE_REREAD_MS = 60_000;
/** Credentials with an expiry are resolved again this long before it. */
const EXPIRY_MARGIN_MS = 10_000;
const REFRESH_BACKOFF_MIN_MS = 1_000;
const REFRESH_BACKOFF_MAX_MS = 300_000;
const HELPER_TIMEOUT_MS = 60_000;

/**
 * The compiled helper script. From dist/ it is the sibling `credentials.js`; when this module runs
 * from TypeScript sources (vitest), the helper is taken from the build output (`npm run build`).
 */
export function credentialHelperPath(): string {
  const here = import.meta.url;
  const url = here.endsWith('.ts')
    ? new URL('../../dist/plugins/kubernetes/credentials.js', here)
    : new URL('./credentials.js', here);
  return fileURLToPath(url);
}

/**
 * Run the credential helper (a child `node` process that loads @kubernetes/client-node) and return
 * what it resolved; rejects with the helper's error message.
 */
export async function resolveCredentials(req: CredentialRequest): Promise<Credentials> {
  const script = credentialHelperPath();
  if (!fs.existsSync(script)) {
    throw new Error(`credential helper ${script} not found; run \`npm run build\` first`);
  }
  const { stdout, error } = await new Promise<{ stdout: string; error: Error | null }>((resolve) => {
    execFile(
      process.execPath,
      [script, JSON.stringify(req)],
      { timeout: HELPER_TIMEOUT_MS, maxBuffer: 16 << 20, windowsHide: true },
      (err, out) => resolve({ stdout: String(out), error: err }),
    );
  });
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdout.trim().split('\n').pop() ?? '');
  } catch {
    throw new Error(`credential helper failed: ${error?.message ?? 'no output'}`);
  }
  const p = parsed as { ok?: Credentials; error?: string };
  if (typeof p.error === 'string') throw new Error(p.error);
  if (!p.ok || typeof p.ok.server !== 'string')
    throw new Error(`credential helper failed: ${error?.message ?? 'unexpected output'}`);
  return p.ok;
}

/** What the settings ask for from the credential helper; null: no helper needed. */
export function credentialRequest(s: ClientSettings): CredentialRequest | null {
  if (s.kubeconfig) return { mode: 'kubeconfig', path: s.kubeconfig.path, context: s.kubeconfig.context };
  if (s.endpoint) return null;
  return { mode: 'cluster' };
}

/** Credentials from the helper, kept fresh. */
class HelperAuth {
  private token: string | null = null;
  private tokenReadAt = 0;
  /** A 401 was seen: re-read the token file / resolve again before the next request. */
  private rejected = false;
  private refreshing: Promise<void> | null = null;
  private retryAt = 0;
  private backoff = REFRESH_BACKOFF_MIN_MS;
  /** Why the last re-resolution failed (kept for diagnostics), or null. */
  lastError: string | null = null;

  constructor(
    private readonly req: CredentialRequest,
    private creds: Credentials,
  ) {
    if (creds.expiry !== undefined && creds.expiry - EXPIRY_MARGIN_MS <= Date.now()) delete creds.expiry;
    if (creds.tokenFile) this.readToken();
  }

  get server(): string {
    return this.creds.server;
  }

  private readToken(): void {
    const file = this.creds.tokenFile!;
    this.tokenReadAt = Date.now();
    try {
      this.token = fs.readFileSync(file, 'utf8').trim();
      this.lastError = null;
    } catch (e) {
      // keep the previous token; the next request tries again after the interval
      this.lastError = `reading token file ${file}: ${(e as Error).message}`;
    }
  }

  /** The next request should use fresh credentials (the API server answered 401). */
  invalidate(): void {
    this.rejected = true;
  }

  private needsRefresh(now: number): boolean {
    if (now < this.retryAt) return false;
    if (this.rejected) return true;
    const e = this.creds.expiry;
    return e !== undefined && now >= e - EXPIRY_MARGIN_MS;
  }

  private async refresh(): Promise<void> {
    try {
      const next = await resolveCredentials(this.req);
      // An expiry that has already passed (a static JWT) would make every request resolve again.
      if (next.expiry !== undefined && next.expiry - EXPIRY_MARGIN_MS <= Date.now()) delete next.expiry;
      const same = JSON.stringify(next) === JSON.stringify(this.creds);
      this.creds = next;
      if (next.tokenFile) this.readToken();
      this.lastError = null;
      if (same) {
        // Nothing changed (static credentials the API server rejects): do not spawn a helper per 401.
        this.retryAt = Date.now() + this.backoff;
        this.backoff = Math.min(REFRESH_BACKOFF_MAX_MS, this.backoff * 2);
      } else {
        this.backoff = REFRESH_BACKOFF_MIN_MS;
        this.retryAt = 0;
      }
    } catch (e) {
      this.lastError = `resolving credentials: ${(e as Error).message}`;
      this.retryAt = Date.now() + this.backoff;
      this.backoff = Math.min(REFRESH_BACKOFF_MAX_MS, this.backoff * 2);
    }
  }

  async options(): Promise<https.RequestOptions> {
    const now = Date.now();
    if (this.creds.tokenFile) {
      if (this.rejected || now - this.tokenReadAt > TOKEN_FILE_REREAD_MS) {
        this.rejected = false;
        this.readToken();
      }
    } else if (this.needsRefresh(now)) {
      this.refreshing ??= this.refresh().finally(() => {
        this.refreshing = null;
      });
      this.rejected = false;
      await this.refreshing;
    }
    const c = this.creds;
    const headers: Record<string, string> = { ...c.headers };
    if (c.tokenFile && this.token) headers['Authorization'] = `Bearer ${this.token}`;
    const opts: https.RequestOptions = { headers };
    if (c.ca !== undefined) opts.ca = c.ca;
    if (c.cert !== undefined) opts.cert = c.cert;
    if (c.key !== undefined) opts.key = c.key;
    if (c.rejectUnauthorized !== undefined) opts.rejectUnauthorized = c.rejectUnauthorized;
    if (c.servername !== undefined) opts.servername = c.servername;
    return opts;
  }
}

type Auth =
  | { kind: 'plain' }
  | { kind: 'static'; options: https.RequestOptions }
  | { kind: 'helper'; helper: HelperAuth };

export class ApiClient {
  readonly base: URL;
  readonly host: string;
  private readonly auth: Auth;
  /** null: no client-side rate limit (`apiserver_qps 0`, the default). */
  private readonly limiter: RateLimiter | null;
  private readonly inflight: Semaphore;
  /** Pooled connections of this client (keep-alive between requests). */
  private readonly agent: http.Agent;
  private readonly connectTimeoutMs: number;

  /**
   * A client for `endpoint` settings (plain HTTP, or HTTPS with `tls` files); throws when it
   * cannot be built (a startup error). In-cluster and kubeconfig settings need
   * {@link ApiClient.create}, which runs the credential helper.
   */
  constructor(s: ClientSettings, helper?: HelperAuth) {
    if (helper) {
      this.base = new URL(helper.server);
      this.auth = { kind: 'helper', helper };
    } else if (s.endpoint && !s.kubeconfig) {
      this.base = new URL(s.endpoint);
      if (this.base.protocol === 'https:' && s.tls) {
        this.auth = {
          kind: 'static',
          options: {
            cert: fs.readFileSync(s.tls.cert),
            key: fs.readFileSync(s.tls.key),
            ca: fs.readFileSync(s.tls.ca),
          },
        };
      } else {
        this.auth = { kind: 'plain' };
      }
    } else {
      throw new Error('in-cluster and kubeconfig credentials need ApiClient.create()');
    }
    this.host = hostLabel(this.base);
    // client-go would default to 5 qps / burst 10, which makes the paged initial list of a large
    // cluster take seconds; failures are already spaced by the reflectors' backoff.
    this.limiter = s.qps > 0 ? new RateLimiter(s.qps, s.burst > 0 ? s.burst : Math.max(1, Math.ceil(s.qps))) : null;
    this.inflight = new Semaphore(s.maxInflight);
    this.connectTimeoutMs = s.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    // As Node's global agent: keep-alive, most recently used socket first, idle sockets closed after 5 s.
    const pool = { keepAlive: true, scheduling: 'lifo', timeout: 5000 } as const;
    this.agent = this.base.protocol === 'https:' ? new (nodeHttps().Agent)(pool) : new nodeHttp.Agent(pool);
  }

  /**
   * Close the pooled idle connections: after a watch was found silent its peers may be dead too
   * (a NAT or proxy that dropped the flows), and the next request must not wait on one of them.
   */
  dropIdleConnections(): void {
    for (const list of Object.values(this.agent.freeSockets)) for (const s of list ?? []) s.destroy();
  }

  /** Close every pooled connection (the index was stopped). */
  close(): void {
    this.agent.destroy();
  }

  /** Build the client, resolving in-cluster / kubeconfig credentials in the helper process. */
  static async create(s: ClientSettings): Promise<ApiClient> {
    const req = credentialRequest(s);
    if (!req) return new ApiClient(s);
    if (
      req.mode === 'cluster' &&
      (!process.env['KUBERNETES_SERVICE_HOST'] || !process.env['KUBERNETES_SERVICE_PORT'])
    ) {
      throw new Error(
        'unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined',
      );
    }
    return new ApiClient(s, new HelperAuth(req, await resolveCredentials(req)));
  }

  /** Why the last credential refresh failed, or null. */
  get credentialError(): string | null {
    return this.auth.kind === 'helper' ? this.auth.helper.lastError : null;
  }

  private async options(): Promise<https.RequestOptions> {
    switch (this.auth.kind) {
      case 'plain':
        return { headers: {} };
      case 'static':
        return { ...this.auth.options, headers: {} };
      case 'helper':
        return this.auth.helper.options();
    }
  }

  /**
   * GET `path` (with query); resolves with the response once headers arrived (status checked by the
   * caller). `verb` is the metric label (`LIST`/`WATCH` are reported as GET, like client-go).
   */
  async get(path: string, signal: AbortSignal, idleTimeoutMs: number): Promise<http.IncomingMessage> {
    const t0 = process.hrtime.bigint();
    if (this.limiter) await this.limiter.take();
    const t1 = process.hrtime.bigint();
    rateLimiterDuration.observe({ verb: 'GET', host: this.host }, Number(t1 - t0) / 1e9);
    await this.inflight.acquire();
    try {
      const opts = await this.options();
      const url = new URL(path, this.base);
      (opts.headers as Record<string, string>)['Accept'] = 'application/json';
      (opts.headers as Record<string, string>)['User-Agent'] = 'clusterdns/kubernetes';
      const mod = url.protocol === 'https:' ? nodeHttps() : nodeHttp;
      const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = mod.request(url, { ...opts, method: 'GET', signal, agent: this.agent }, resolve);
        req.on('socket', (sock) => armSocket(req, sock, this.host, this.connectTimeoutMs));
        req.setTimeout(idleTimeoutMs, () =>
          req.destroy(new Error(`no data from ${this.host} for ${idleTimeoutMs} ms`)),
        );
        req.on('error', reject);
        req.end();
      });
      const code = String(res.statusCode ?? 0);
      if (res.statusCode === 401 && this.auth.kind === 'helper') this.auth.helper.invalidate();
      requestsTotal.inc({ code, method: 'GET', host: this.host });
      requestDuration.observe({ verb: 'GET', host: this.host }, Number(process.hrtime.bigint() - t1) / 1e9);
      return res;
    } catch (e) {
      requestsTotal.inc({ code: '<error>', method: 'GET', host: this.host });
      throw e;
    } finally {
      this.inflight.release();
    }
  }
}

/** A list page's body was longer than the bound it was read with (see {@link readJson}). */
export class PageTooLargeError extends Error {
  constructor(readonly maxChars: number) {
    super(`list page larger than ${maxChars} characters`);
  }
}

/**
 * Read a whole response body as JSON. The body is decoded chunk by chunk into one V8 string rather
 * than joined into one Buffer: a list page is megabytes, and buffers that size come from malloc,
 * whose freed blocks the process keeps (the resident size after the initial lists was 11 MiB
 * larger that way). Once the text is longer than `maxChars` the response is destroyed (its
 * connection closed) and {@link PageTooLargeError} thrown: a server or proxy that sends an endless
 * or enormous body cannot make the heap grow past the bound.
 */
export async function readJson(res: http.IncomingMessage, maxChars: number): Promise<unknown> {
  res.setEncoding('utf8');
  let text = '';
  for await (const c of res) {
    text += c as string;
    if (text.length > maxChars) {
      res.destroy();
      throw new PageTooLargeError(maxChars);
    }
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(
      `invalid JSON from the API server (HTTP ${res.statusCode}): ${text.slice(0, 200)}`,
      res.statusCode ?? 0,
    );
  }
}
