/**
 * The HTTP side of talking to the API server: authentication and TLS come from
 * @kubernetes/client-node's `KubeConfig` (in-cluster service account with token rotation, a
 * kubeconfig file, or `endpoint` + `tls`); `endpoint http://...` without TLS is plain HTTP with no
 * credentials (local API servers, tests). Requests go through a client-side rate limiter
 * (`apiserver_qps`/`apiserver_burst`) and an in-flight cap (`apiserver_max_inflight`) and are
 * measured by the rest-client metrics.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { hostLabel, rateLimiterDuration, requestDuration, requestsTotal } from './metrics.js';

export interface ClientSettings {
  endpoint: string | null;
  tls: { cert: string; key: string; ca: string } | null;
  kubeconfig: { path: string; context: string | null } | null;
  qps: number;
  burst: number;
  maxInflight: number;
}

export class ApiError extends Error {
  constructor(message: string, readonly status: number) {
    super(message);
  }
}

/** Token bucket (`apiserver_qps` / `apiserver_burst`). */
class RateLimiter {
  private tokens: number;
  private last = Date.now();

  constructor(private readonly qps: number, private readonly burst: number) {
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

type Auth =
  | { kind: 'plain' }
  | { kind: 'static'; options: https.RequestOptions }
  | { kind: 'kubeconfig'; kc: KubeConfig };

export class ApiClient {
  readonly base: URL;
  readonly host: string;
  private readonly auth: Auth;
  /** null: no client-side rate limit (`apiserver_qps 0`, the default). */
  private readonly limiter: RateLimiter | null;
  private readonly inflight: Semaphore;

  /** Build the client configuration; throws when it cannot be built (a startup error). */
  constructor(s: ClientSettings) {
    if (s.kubeconfig) {
      const kc = new KubeConfig();
      kc.loadFromFile(s.kubeconfig.path);
      if (s.kubeconfig.context) {
        if (!kc.getContextObject(s.kubeconfig.context)) throw new Error(`context "${s.kubeconfig.context}" does not exist in ${s.kubeconfig.path}`);
        kc.setCurrentContext(s.kubeconfig.context);
      }
      const cluster = kc.getCurrentCluster();
      if (!cluster) throw new Error(`no current cluster in kubeconfig ${s.kubeconfig.path}`);
      this.base = new URL(cluster.server);
      this.auth = { kind: 'kubeconfig', kc };
    } else if (s.endpoint) {
      this.base = new URL(s.endpoint);
      if (this.base.protocol === 'https:' && s.tls) {
        this.auth = {
          kind: 'static',
          options: { cert: fs.readFileSync(s.tls.cert), key: fs.readFileSync(s.tls.key), ca: fs.readFileSync(s.tls.ca) },
        };
      } else {
        this.auth = { kind: 'plain' };
      }
    } else {
      if (!process.env['KUBERNETES_SERVICE_HOST'] || !process.env['KUBERNETES_SERVICE_PORT']) {
        throw new Error('unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined');
      }
      const kc = new KubeConfig();
      kc.loadFromCluster();
      const cluster = kc.getCurrentCluster();
      if (!cluster) throw new Error('unable to load in-cluster configuration');
      this.base = new URL(cluster.server);
      this.auth = { kind: 'kubeconfig', kc };
    }
    this.host = hostLabel(this.base);
    // client-go would default to 5 qps / burst 10, which makes the paged initial list of a large
    // cluster take seconds; failures are already spaced by the reflectors' backoff.
    this.limiter = s.qps > 0 ? new RateLimiter(s.qps, s.burst > 0 ? s.burst : Math.max(1, Math.ceil(s.qps))) : null;
    this.inflight = new Semaphore(s.maxInflight);
  }

  private async options(): Promise<https.RequestOptions> {
    switch (this.auth.kind) {
      case 'plain': return { headers: {} };
      case 'static': return { ...this.auth.options, headers: {} };
      case 'kubeconfig': {
        const opts: https.RequestOptions = { headers: {} };
        await this.auth.kc.applyToHTTPSOptions(opts);
        return opts;
      }
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
      const mod = url.protocol === 'https:' ? https : http;
      const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = mod.request(url, { ...opts, method: 'GET', signal }, resolve);
        req.setTimeout(idleTimeoutMs, () => req.destroy(new Error(`no data from ${this.host} for ${idleTimeoutMs} ms`)));
        req.on('error', reject);
        req.end();
      });
      const code = String(res.statusCode ?? 0);
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

/** Read a whole response body as JSON. */
export async function readJson(res: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(`invalid JSON from the API server (HTTP ${res.statusCode}): ${text.slice(0, 200)}`, res.statusCode ?? 0);
  }
}
