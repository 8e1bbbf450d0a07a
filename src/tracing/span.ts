/**
 * A span of a traced query (docs/plugins.md, trace): the Zipkin v2 span model, as CoreDNS 1.15.0
 * builds it with zipkin-go through its OpenTracing bridge. The *trace* plugin starts the root span
 * (`servedns`); the chain adds one child per plugin a query is passed to (src/tracing/chain.ts),
 * and forward and grpc one per upstream attempt. A finished span goes to its tracer's recorder,
 * which batches it for the collector.
 *
 * The span travels on the query (`Query.span`), so code that does not trace pays one null check.
 */
import { randomFillSync } from 'node:crypto';

/** The Zipkin endpoint of the server (`localEndpoint`): its service name, and address with `bind`. */
export interface Endpoint {
  readonly serviceName?: string;
  readonly ipv4?: string;
  readonly ipv6?: string;
  readonly port?: number;
}

/** A span as Zipkin's v2 JSON API takes it (`POST /api/v2/spans`). */
export interface SpanModel {
  traceId: string;
  id: string;
  parentId?: string;
  name: string;
  kind?: 'SERVER' | 'CLIENT';
  /** Microseconds since the Unix epoch. */
  timestamp: number;
  /** Microseconds; at least 1 (zipkin-go reports sub-microsecond spans as 1). */
  duration: number;
  shared?: true;
  debug?: true;
  localEndpoint?: Endpoint;
  annotations?: { timestamp: number; value: string }[];
  tags?: Record<string, string>;
}

/** Where finished spans go (the HTTP reporter of src/tracing/zipkin.ts, or a test's array). */
export interface SpanRecorder {
  record(span: SpanModel): void;
}

/** What the tracer shares with every span it starts. */
export interface TracerState {
  readonly recorder: SpanRecorder;
  readonly localEndpoint: Endpoint | undefined;
}

/** The ids and flags a span continues from: an extracted B3 context or the parent span. */
export interface SpanContext {
  /** 16 or 32 lower-case hex digits. */
  readonly traceId: string;
  readonly spanId: string;
  readonly parentId?: string;
  /** undefined: no decision yet (the tracer samples); false: not recorded. */
  readonly sampled?: boolean;
  readonly debug?: boolean;
}

const pool = Buffer.alloc(8 * 512);
let poolOff = pool.length;

/**
 * A random 63-bit id as 16 hex digits: zipkin-go's ids are `rand.Int63()`, never 0. Drawn from a
 * refilled CSPRNG pool so that a traced query does not pay for a crypto call.
 */
export function randomSpanId(): string {
  for (;;) {
    if (poolOff >= pool.length) {
      randomFillSync(pool);
      poolOff = 0;
    }
    const hi = pool.readUInt32BE(poolOff) & 0x7fffffff;
    const lo = pool.readUInt32BE(poolOff + 4);
    poolOff += 8;
    if (hi === 0 && lo === 0) continue;
    return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
  }
}

/** Microseconds since the epoch, from the high-resolution clock. */
function nowMicros(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

export class Span {
  private readonly model: SpanModel;
  /** performance.now() at the start, for a sub-millisecond duration. */
  private readonly startedAt: number;
  private finished = false;

  constructor(
    private readonly tracer: TracerState,
    name: string,
    ctx: SpanContext,
    /** The span records nothing (an extracted context said `sampled: false`); its children neither. */
    readonly sampled: boolean,
    extra?: { kind?: 'SERVER' | 'CLIENT'; shared?: boolean },
  ) {
    this.startedAt = performance.now();
    this.model = {
      traceId: ctx.traceId,
      id: ctx.spanId,
      // zipkin-go lower-cases span names when it writes them.
      name: name.toLowerCase(),
      timestamp: nowMicros(),
      duration: 0,
    };
    if (ctx.parentId !== undefined) this.model.parentId = ctx.parentId;
    if (extra?.kind) this.model.kind = extra.kind;
    if (extra?.shared) this.model.shared = true;
    if (ctx.debug) this.model.debug = true;
    if (tracer.localEndpoint) this.model.localEndpoint = tracer.localEndpoint;
  }

  get traceId(): string {
    return this.model.traceId;
  }

  get id(): string {
    return this.model.id;
  }

  /** A span started now as this one's child (OpenTracing's ChildOf): same trace, new id. */
  child(name: string): Span {
    const ctx: SpanContext = { traceId: this.model.traceId, spanId: randomSpanId(), parentId: this.model.id };
    return new Span(this.tracer, name, this.model.debug ? { ...ctx, debug: true } : ctx, this.sampled);
  }

  /** Set a tag (values are strings in Zipkin: Go's fmt.Sprint of the OpenTracing value). */
  tag(key: string, value: string): void {
    (this.model.tags ??= {})[key] = value;
  }

  /** Add an annotation (OpenTracing's log fields, each as `key:value`). */
  annotate(value: string): void {
    (this.model.annotations ??= []).push({ timestamp: nowMicros(), value });
  }

  /** End the span and hand it to the recorder (once; a second call does nothing). */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.model.duration = Math.max(1, Math.round((performance.now() - this.startedAt) * 1000));
    if (this.sampled) this.tracer.recorder.record(this.model);
  }
}
