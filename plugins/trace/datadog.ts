/**
 * The Datadog exporter (`trace datadog`): spans go to the Datadog agent's trace API as
 * dd-trace-go v2.10.1 (CoreDNS 1.15.0's tracer) sends them on its v0.4 protocol (README.md,
 * "Datadog"):
 *
 * - `POST http://ENDPOINT/v0.4/traces`, msgpack: an array of traces, each an array of spans, each
 *   a map of service, name, resource, trace_id, span_id, parent_id, start, duration, error, meta,
 *   metrics, type; headers `Content-Type: application/msgpack`, `X-Datadog-Trace-Count` and the
 *   `Datadog-Meta-*` ones naming the tracer (this one: Node.js).
 * - Finished traces wait in one payload that is sent every 2 s, or at once when it passes
 *   4.75 MiB (dd-trace-go's flushInterval and payloadSizeLimit); at most 100 sends at a time.
 *   A send that fails is not retried (DD_TRACE_SEND_RETRIES 0): its traces are lost and logged.
 * - Priority sampling as dd-trace-go's default: every trace is sent, with
 *   `_sampling_priority_v1` 1 (keep) or 0 by the agent's rate for the service (the agent answers
 *   each send with `rate_by_service`; 1 until it has), decided on the trace id as dd-trace-go
 *   decides (Knuth's multiplicative hash).
 * - `close` sends what waits and waits for the sends (dd-trace-go's tracer.Stop).
 *
 * dd-trace-go's other traffic (the /info poll, telemetry, client stats, remote configuration,
 * DogStatsD health metrics) is not sent: the traces are the whole of what the plugin is for.
 */
import { randomUUID } from 'node:crypto';
import type * as http from 'node:http';
import { basename, dirname } from 'node:path';
import { MsgpackWriter } from '../../src/msgpack.js';
import { nodeHttp } from '../../src/util/require.js';
import { VERSION } from '../../src/version.js';

/**
 * The process's Datadog tracer. CoreDNS's is dd-trace-go's global one: every block's
 * `tracer.Start` replaces it, so all blocks' spans go to the agent and carry the service of the
 * block that started last, and a traced query of any block counts only for its own `every`.
 * clusterdns does the same per query thread. Unlike CoreDNS, a block's shutdown stops only its
 * own tracer, and the tracers started and not stopped are kept in order: a reload's old blocks do
 * not stop the new tracer, and a reload that fails after the new blocks started (their shutdown
 * runs) gives the spans back to the old configuration's tracer, which keeps serving.
 */
export interface DatadogTracer {
  readonly reporter: DatadogReporter;
  readonly service: string;
}

/** Started and not stopped, oldest first; the last one is the tracer. */
const running: DatadogTracer[] = [];

/** dd-trace-go's tracer.Start: `t` becomes the tracer. */
export function startTracer(t: DatadogTracer): void {
  const i = running.indexOf(t);
  if (i >= 0) running.splice(i, 1);
  running.push(t);
}

/** dd-trace-go's tracer.Stop, for the block whose tracer `t` is: it sends what waits and stops. */
export async function stopTracer(t: DatadogTracer): Promise<void> {
  const i = running.indexOf(t);
  if (i >= 0) running.splice(i, 1);
  await t.reporter.close();
}

/** The tracer spans go to now; null when none runs (a traced query then reports nothing). */
export function currentTracer(): DatadogTracer | null {
  return running.length > 0 ? running[running.length - 1]! : null;
}

/** One Datadog span (the agent's pb.Span), ids unsigned 64-bit. */
export interface DatadogSpan {
  readonly service: string;
  readonly name: string;
  readonly resource: string;
  readonly traceId: bigint;
  readonly spanId: bigint;
  readonly parentId: bigint;
  /** Nanoseconds since the epoch. */
  readonly start: bigint;
  /** Nanoseconds. */
  readonly duration: number;
  readonly error: boolean;
  readonly meta: Map<string, string>;
  readonly metrics: Map<string, number>;
  readonly type: string;
}

export interface DatadogReporterOptions {
  /** The agent's `host:port` (CoreDNS's WithAgentAddr: http://ENDPOINT). */
  readonly agent: string;
  readonly warn: (msg: string) => void;
  /** dd-trace-go's values unless a test shortens them. */
  readonly flushIntervalMs?: number;
}

export const DATADOG_DEFAULTS = {
  flushIntervalMs: 2000,
  /** dd-trace-go's payloadSizeLimit: half of the agent's 9.5 MB. */
  payloadSizeLimit: (9.5 * 1024 * 1024) / 2,
  concurrentSends: 100,
  /** dd-trace-go's defaultHTTPTimeout. */
  timeoutMs: 10_000,
  /** dd-trace-go logs its errors at most once a minute, counting the ones skipped. */
  errorLogIntervalMs: 60_000,
};

/** One per process, as dd-trace-go's runtime-id (each query thread loads its own). */
export const RUNTIME_ID = randomUUID();

/** The agent's trace intake path (dd-trace-go's tracesAPIPath). */
export const TRACES_PATH = '/v0.4/traces';

/**
 * dd-trace-go's process tags (`_dd.tags.process`): the program's name, the folder it is in
 * (not `bin`), its kind, the working folder, and `svc.user:true` (CoreDNS always names the
 * service). Node runs a script, so the program is the script clusterdns started from.
 */
export function processTags(script = process.argv[1] ?? '', cwd = process.cwd()): string {
  const tags = new Map<string, string>();
  const folder = (d: string): string | null => {
    const b = basename(d);
    return b === '' || b === 'bin' || b === '/' ? null : b;
  };
  if (script !== '') {
    tags.set('entrypoint.name', basename(script).replace(/\.(c|m)?js$/, ''));
    const base = folder(dirname(script));
    if (base !== null) tags.set('entrypoint.basedir', base);
    tags.set('entrypoint.type', 'script');
  }
  const wd = folder(cwd);
  if (wd !== null) tags.set('entrypoint.workdir', wd);
  tags.set('svc.user', 'true');
  return [...tags.keys()]
    .sort()
    .map((k) => normalizeTag(`${k}:${tags.get(k)!}`))
    .join(',');
}

/** Datadog's tag normalisation, for the characters a file name brings: lower case, `_` for others. */
function normalizeTag(t: string): string {
  return t
    .toLowerCase()
    .replace(/[^a-z0-9_:./-]/g, '_')
    .replace(/_+/g, '_');
}

const KNUTH_FACTOR = 1111111111111111111n;
const U64 = 0xffffffffffffffffn;

/** dd-trace-go's sampledByRate: keep the trace whose id, hashed, falls under the rate. */
export function sampledByRate(traceIdLow: bigint, rate: number): boolean {
  if (rate === 1) return true;
  if (rate === 0) return false;
  return ((traceIdLow * KNUTH_FACTOR) & U64) <= BigInt(Math.min(Math.trunc(rate * 2 ** 64), 2 ** 64 - 1));
}

export class DatadogReporter {
  private payload = new MsgpackWriter(4096);
  private traces = 0;
  private timer: NodeJS.Timeout | null = null;
  private inFlight = new Set<Promise<void>>();
  private closed = false;
  /** The agent's sampling rates by `service:NAME,env:ENV` (its last answer). */
  private rates = new Map<string, number>();
  private readonly agentHttp: http.Agent;
  private readonly url: URL;
  private readonly flushIntervalMs: number;
  private lastErrorLog = 0;
  private skippedErrors = 0;

  constructor(private readonly o: DatadogReporterOptions) {
    this.url = new URL(`http://${o.agent}${TRACES_PATH}`);
    this.agentHttp = new nodeHttp.Agent({ keepAlive: true });
    this.flushIntervalMs = o.flushIntervalMs ?? DATADOG_DEFAULTS.flushIntervalMs;
  }

  /** The agent's rate for the service, and whether it keeps the trace (dd-trace-go's priority sampler). */
  priority(service: string, traceIdLow: bigint): { rate: number; keep: boolean } {
    const rate = this.rates.get(`service:${service},env:`) ?? this.rates.get('service:,env:') ?? 1;
    return { rate, keep: sampledByRate(traceIdLow, rate) };
  }

  /** Queue one finished trace (its spans). */
  record(trace: readonly DatadogSpan[]): void {
    if (this.closed) return;
    encodeTrace(this.payload, trace);
    this.traces++;
    if (this.payload.length > DATADOG_DEFAULTS.payloadSizeLimit) this.flush();
    else this.arm();
  }

  /** Send what waits, then wait for every send. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.flush();
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
    this.agentHttp.destroy();
  }

  private arm(): void {
    if (this.timer !== null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush();
    }, this.flushIntervalMs);
    this.timer.unref();
  }

  private flush(): void {
    const n = this.traces;
    if (n === 0) return;
    const body = Buffer.concat([new MsgpackWriter(5).arrayHeader(n).bytes(), this.payload.bytes()]);
    this.payload = new MsgpackWriter(Math.min(body.length + 1024, 1 << 20));
    this.traces = 0;
    if (this.inFlight.size >= DATADOG_DEFAULTS.concurrentSends) {
      this.error(`lost ${n} traces: ${DATADOG_DEFAULTS.concurrentSends} sends already wait for the agent`);
      return;
    }
    const p = this.send(body, n).finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  private async send(body: Buffer, n: number): Promise<void> {
    try {
      const res = await this.post(body, n);
      if (res.status >= 400) {
        const text = res.body.subarray(0, 1000).toString();
        const status = nodeHttp.STATUS_CODES[res.status] ?? String(res.status);
        this.error(`lost ${n} traces: ${text !== '' ? `${text} (Status: ${status})` : status}`);
        return;
      }
      this.readRates(res.body);
    } catch (e) {
      this.error(`lost ${n} traces: Post ${JSON.stringify(this.url.href)}: ${goNetError(e, this.url)}`);
    }
  }

  /** The agent's `{"rate_by_service": {"service:NAME,env:ENV": RATE}}`; anything else keeps the rates. */
  private readRates(body: Buffer): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString());
    } catch {
      return;
    }
    const rbs = (parsed as { rate_by_service?: unknown } | null)?.rate_by_service;
    if (rbs === null || typeof rbs !== 'object') return;
    const rates = new Map<string, number>();
    for (const [k, v] of Object.entries(rbs as Record<string, unknown>)) {
      if (typeof v === 'number' && v >= 0 && v <= 1) rates.set(k, v);
    }
    this.rates = rates;
  }

  /** dd-trace-go's error log: the first at once, then at most one a minute with the count skipped. */
  private error(msg: string): void {
    const now = Date.now();
    if (this.lastErrorLog !== 0 && now - this.lastErrorLog < DATADOG_DEFAULTS.errorLogIntervalMs) {
      this.skippedErrors++;
      return;
    }
    const skipped = this.skippedErrors > 0 ? `, ${this.skippedErrors} additional messages skipped` : '';
    this.lastErrorLog = now;
    this.skippedErrors = 0;
    this.o.warn(`Datadog exporter ERROR: ${msg}${skipped}`);
  }

  private post(body: Buffer, traces: number): Promise<{ status: number; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const req = nodeHttp.request(
        this.url,
        {
          method: 'POST',
          agent: this.agentHttp,
          headers: {
            'Content-Type': 'application/msgpack',
            'Content-Length': body.length,
            'X-Datadog-Trace-Count': String(traces),
            'Datadog-Meta-Lang': 'nodejs',
            'Datadog-Meta-Lang-Version': process.versions.node,
            'Datadog-Meta-Lang-Interpreter': 'v8',
            'Datadog-Meta-Tracer-Version': `clusterdns-${VERSION}`,
            // The spans carry _dd.top_level, as dd-trace-go's do.
            'Datadog-Client-Computed-Top-Level': 't',
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            // The agent answers a few hundred bytes (rate_by_service); more is not an agent.
            size += c.length;
            if (size > MAX_AGENT_REPLY_BYTES) req.destroy(new Error('agent reply too large'));
            else chunks.push(c);
          });
          res.on('end', () => {
            clearTimeout(deadline);
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) });
          });
          res.on('error', reject);
        },
      );
      // The whole exchange, as Go's http.Client.Timeout bounds it (a socket idle timeout would let
      // an agent that trickles its reply hold a send, and the shutdown, as long as it likes).
      const deadline = setTimeout(
        () => req.destroy(new Error('context deadline exceeded')),
        DATADOG_DEFAULTS.timeoutMs,
      );
      deadline.unref();
      req.on('error', (e) => {
        clearTimeout(deadline);
        reject(e);
      });
      req.end(body);
    });
  }
}

/** One trace as the agent's pb.Trace: an array of span maps, the fields dd-trace-go writes. */
/** The largest agent reply read (a real one is a small JSON object of sampling rates). */
const MAX_AGENT_REPLY_BYTES = 64 * 1024;

export function encodeTrace(w: MsgpackWriter, trace: readonly DatadogSpan[]): void {
  w.arrayHeader(trace.length);
  for (const s of trace) {
    w.mapHeader(12);
    w.str('service').str(s.service);
    w.str('name').str(s.name);
    w.str('resource').str(s.resource);
    w.str('trace_id').int(s.traceId);
    w.str('span_id').int(s.spanId);
    w.str('parent_id').int(s.parentId);
    w.str('start').int(s.start);
    w.str('duration').int(s.duration);
    w.str('error').int(s.error ? 1 : 0);
    w.str('meta').mapHeader(s.meta.size);
    for (const [k, v] of s.meta) w.str(k).str(v);
    w.str('metrics').mapHeader(s.metrics.size);
    for (const [k, v] of s.metrics) w.str(k).float64(v);
    w.str('type').str(s.type);
  }
}

/** A connection error worded as Go's net/http words the common ones. */
function goNetError(e: unknown, target: URL): string {
  const err = e as NodeJS.ErrnoException;
  const addr = `${target.hostname}:${target.port || '80'}`;
  if (err.code === 'ECONNREFUSED') return `dial tcp ${addr}: connect: connection refused`;
  if (err.code === 'ENOTFOUND') return `dial tcp: lookup ${target.hostname.replace(/^\[|\]$/g, '')}: no such host`;
  return err.message;
}
