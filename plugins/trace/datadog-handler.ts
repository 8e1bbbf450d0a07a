/**
 * The trace handler for `trace datadog` (CoreDNS 1.15.0's `serveDNSDatadog`): one query in
 * `every` gets one span `servedns`, the root of a new trace, tagged with the query when the chain
 * is done and handed to the process's Datadog tracer (datadog.ts: the block that started last
 * names the service for all). Unlike the Zipkin path there are no
 * per-plugin child spans — CoreDNS's chain makes them only from an OpenTracing span, and its
 * Datadog span is not one — and no trace context is taken from a DoH request.
 */
import { randomFillSync } from 'node:crypto';
import { isServerWrittenRcode, qtypeName } from '../../src/dns/constants.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { currentTracer, type DatadogSpan, processTags, RUNTIME_ID } from './datadog.js';
import { rcodeString, TRACE_ID_LABEL, TRACE_ID_PENDING } from './handler.js';

/** The tag names CoreDNS uses for Datadog (`tagByProvider["datadog"]`). */
export const DATADOG_TAGS = {
  name: 'coredns.io@name',
  type: 'coredns.io@type',
  rcode: 'coredns.io@rcode',
  proto: 'coredns.io@proto',
  remote: 'coredns.io@remote',
} as const;

export interface DatadogHandlerOptions {
  readonly every: number;
  /** The block has the metadata plugin: publish `trace/traceid`. */
  readonly metadata: boolean;
}

const PROCESS_TAGS = processTags();

/** Wall-clock nanoseconds: the epoch at load plus the monotonic clock since. */
const WALL0 = BigInt(Date.now()) * 1_000_000n;
const HR0 = process.hrtime.bigint();

/** Random 63-bit ids (dd-trace-go's generateSpanID), drawn from a pooled buffer. */
const idPool = Buffer.allocUnsafe(8 * 128);
let idNext = idPool.length;
function randomId(): bigint {
  if (idNext === idPool.length) {
    randomFillSync(idPool);
    idNext = 0;
  }
  const v = idPool.readBigUInt64BE(idNext) & 0x7fffffffffffffffn;
  idNext += 8;
  return v === 0n ? randomId() : v;
}

export class DatadogTraceHandler implements Handler {
  readonly name = 'trace';
  /** Queries seen, for `every` (CoreDNS's atomic counter; per query thread here). */
  private count = 0;

  constructor(
    private readonly o: DatadogHandlerOptions,
    private readonly next: Handler | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    let sample = false;
    if (this.o.every > 0) sample = ++this.count % this.o.every === 0;
    if (!sample) {
      if (this.o.metadata && q.metaValue(TRACE_ID_LABEL) === TRACE_ID_PENDING) q.meta.delete(TRACE_ID_LABEL);
      return nextOrFailure(this.name, this.next, q);
    }
    const hr = process.hrtime.bigint();
    const start = WALL0 + (hr - HR0);
    // dd-trace-go's 128-bit trace id: the start's Unix seconds in the top 32 bits, the root
    // span's id in the low 64.
    const spanId = randomId();
    const high = (start / 1_000_000_000n) << 32n;
    const highHex = high.toString(16).padStart(16, '0');
    if (this.o.metadata && q.metaValue(TRACE_ID_LABEL) === TRACE_ID_PENDING)
      q.meta.set(TRACE_ID_LABEL, highHex + spanId.toString(16).padStart(16, '0'));
    const finish = (status: number): number => {
      this.finish(q, status, { spanId, start, hr, highHex });
      return status;
    };
    let r: number | Promise<number>;
    try {
      r = nextOrFailure(this.name, this.next, q);
    } catch (e) {
      this.finish(q, null, { spanId, start, hr, highHex });
      throw e;
    }
    if (typeof r === 'number') return finish(r);
    return r.then(finish, (e: unknown) => {
      this.finish(q, null, { spanId, start, hr, highHex });
      throw e;
    });
  }

  /** Tag the span as CoreDNS's setDatadogSpanTags does and report it (status null: the chain threw). */
  private finish(
    q: Query,
    status: number | null,
    t: { spanId: bigint; start: bigint; hr: bigint; highHex: string },
  ): void {
    const duration = Number(process.hrtime.bigint() - t.hr);
    const tracer = currentTracer();
    if (tracer === null) return;
    const { rate, keep } = tracer.reporter.priority(tracer.service, t.spanId);
    const meta = new Map<string, string>();
    if (keep) meta.set('_dd.p.dm', '-1');
    meta.set('_dd.p.tid', t.highHex);
    meta.set('_dd.tags.process', PROCESS_TAGS);
    if (status !== null) {
      meta.set(DATADOG_TAGS.name, q.lname);
      meta.set(DATADOG_TAGS.type, qtypeName(q.qtype));
      meta.set(DATADOG_TAGS.proto, q.proto);
      meta.set(DATADOG_TAGS.remote, q.transport.remoteAddress);
      // The written reply's RCODE; the returned one when the chain left the reply to the server.
      const rc = isServerWrittenRcode(status) ? status : q.reply === null ? 0 : q.reply.rcode;
      meta.set(DATADOG_TAGS.rcode, rcodeString(rc));
    }
    // The tracer's global tag (CoreDNS's WithGlobalTag(ext.SpanTypeDNS, true)) and its own.
    meta.set('dns', 'true');
    meta.set('language', 'javascript');
    meta.set('runtime-id', RUNTIME_ID);
    const error = q.error !== null;
    if (q.error !== null) {
      meta.set('error.message', q.error.message);
      meta.set('error.type', 'dns_error');
    }
    const metrics = new Map<string, number>([
      ['_dd.agent_psr', rate],
      ['_dd.profiling.enabled', 0],
      ['_dd.top_level', 1],
      ['_dd.trace_span_attribute_schema', 0],
      ['_sampling_priority_v1', keep ? 1 : 0],
      ['process_id', process.pid],
    ]);
    const span: DatadogSpan = {
      service: tracer.service,
      name: 'servedns',
      resource: 'servedns',
      traceId: t.spanId,
      spanId: t.spanId,
      parentId: 0n,
      start: t.start,
      duration,
      error,
      meta,
      metrics,
      type: '',
    };
    tracer.reporter.record([span]);
  }
}
