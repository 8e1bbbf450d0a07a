/**
 * The Zipkin HTTP reporter (zipkin-go's reporter/http, as CoreDNS 1.15.0 configures it): finished
 * spans are batched and POSTed as a JSON array to the collector's `/api/v2/spans`.
 *
 * - A batch is sent when it holds `batchSize` spans (`zipkin_max_batch_size`, 100) or
 *   `batchInterval` (`zipkin_max_batch_interval`, 1 s) after the last send, one request at a time.
 * - Spans beyond `maxBacklog` (`zipkin_max_backlog_size`, 1000) are dropped oldest first, with
 *   zipkin-go's warning.
 * - A request that fails (no connection, 5 s timeout) keeps its spans for the next send; one the
 *   collector answers with a non-2xx status drops them — both logged as zipkin-go logs them, as
 *   warnings of `plugin/trace`.
 * - Requests carry `b3: 0` so that a service mesh does not trace the reporting itself.
 *
 * Unlike zipkin-go, the timer runs only while spans wait, and `close` sends what is left once.
 */
import type * as http from 'node:http';
import type { SpanModel, SpanRecorder } from '../../src/tracing/span.js';
import { nodeHttp, nodeHttps } from '../../src/util/require.js';

export interface ReporterOptions {
  readonly url: string;
  readonly batchSize: number;
  readonly batchIntervalMs: number;
  readonly maxBacklog: number;
  /** zipkin-go's request timeout. */
  readonly timeoutMs: number;
  /** Where zipkin-go's logger lines go (CoreDNS logs them as warnings of the plugin). */
  readonly warn: (msg: string) => void;
}

export const REPORTER_DEFAULTS = { batchSize: 100, batchIntervalMs: 1000, maxBacklog: 1000, timeoutMs: 5000 };

export class ZipkinReporter implements SpanRecorder {
  private batch: SpanModel[] = [];
  private sending = false;
  private timer: NodeJS.Timeout | null = null;
  private nextSend = 0;
  private closed = false;
  private readonly agent: http.Agent;
  private readonly target: URL;

  constructor(private readonly o: ReporterOptions) {
    this.target = new URL(o.url);
    // node:https (and TLS) only for an https:// collector (src/util/require.ts).
    this.agent =
      this.target.protocol === 'https:'
        ? new (nodeHttps().Agent)({ keepAlive: true })
        : new nodeHttp.Agent({ keepAlive: true });
  }

  record(span: SpanModel): void {
    if (this.closed) return;
    this.batch.push(span);
    if (this.batch.length > this.o.maxBacklog) {
      const dispose = this.batch.length - this.o.maxBacklog;
      this.o.warn(`backlog too long, disposing ${dispose} spans`);
      this.batch.splice(0, dispose);
    }
    if (this.batch.length >= this.o.batchSize) {
      this.nextSend = Date.now() + this.o.batchIntervalMs;
      void this.send();
    } else this.arm();
  }

  /** Stop the timer and send the spans still waiting, once. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    while (this.sending) await new Promise((r) => setTimeout(r, 10));
    if (this.batch.length > 0) await this.send(true);
    this.agent.destroy();
  }

  /** zipkin-go checks ten times per interval whether the interval since the last send has passed. */
  private arm(): void {
    if (this.timer !== null || this.closed) return;
    if (this.nextSend === 0) this.nextSend = Date.now() + this.o.batchIntervalMs;
    this.timer = setInterval(
      () => {
        if (Date.now() < this.nextSend) return;
        this.nextSend = Date.now() + this.o.batchIntervalMs;
        if (this.batch.length === 0) {
          clearInterval(this.timer!);
          this.timer = null;
          this.nextSend = 0;
          return;
        }
        void this.send();
      },
      Math.max(1, this.o.batchIntervalMs / 10),
    );
    this.timer.unref();
  }

  private async send(final = false): Promise<void> {
    if (this.sending && !final) return;
    const n = this.batch.length;
    if (n === 0) return;
    this.sending = true;
    try {
      const body = Buffer.from(JSON.stringify(this.batch.slice(0, n)));
      const status = await this.post(body).catch((e: unknown) => {
        this.o.warn(`failed to send the request: Post ${JSON.stringify(this.o.url)}: ${goNetError(e, this.target)}`);
        return -1;
      });
      if (status < 0) return;
      if (status < 200 || status > 299) this.o.warn(`failed the request with status code ${status}`);
      this.batch.splice(0, n);
    } finally {
      this.sending = false;
    }
  }

  private post(body: Buffer): Promise<number> {
    return new Promise((resolve, reject) => {
      const mod = this.target.protocol === 'https:' ? nodeHttps() : nodeHttp;
      const req = mod.request(
        this.target,
        {
          method: 'POST',
          agent: this.agent,
          timeout: this.o.timeoutMs,
          headers: { 'content-type': 'application/json', b3: '0', 'content-length': body.length },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error('context deadline exceeded')));
      req.on('error', reject);
      req.end(body);
    });
  }
}

/** A connection error worded as Go's net/http words the common ones. */
function goNetError(e: unknown, target: URL): string {
  const err = e as NodeJS.ErrnoException;
  const port = target.port || (target.protocol === 'https:' ? '443' : '80');
  // URL keeps an IPv6 host in brackets, as Go prints it in an address.
  const addr = `${target.hostname}:${port}`;
  if (err.code === 'ECONNREFUSED') return `dial tcp ${addr}: connect: connection refused`;
  if (err.code === 'ENOTFOUND') return `dial tcp: lookup ${target.hostname.replace(/^\[|\]$/g, '')}: no such host`;
  return err.message;
}
