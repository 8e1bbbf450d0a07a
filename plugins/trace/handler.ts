/**
 * The trace handler (CoreDNS 1.15.0's `serveDNSZipkin`): one query in `every` gets a root span
 * `servedns` (kind SERVER), continued from a DoH client's B3 headers when it sent them; the chain
 * below adds a span per plugin (src/tracing/chain.ts). When the chain is done the root span gets
 * the query's tags and is finished, which hands it to the reporter.
 */
import { qtypeName, rcodeName, isServerWrittenRcode } from '../../src/dns/constants.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { randomSpanId, Span, type SpanContext, type TracerState } from '../../src/tracing/span.js';
import { extractB3 } from './b3.js';

/** The metadata label CoreDNS's trace publishes (README, "Metadata"). */
export const TRACE_ID_LABEL = 'trace/traceid';
/**
 * What the metadata provider writes before trace runs: the query is in the metadata plugin's
 * zones, so trace may publish its trace id (CoreDNS's SetValueFunc works only then).
 */
export const TRACE_ID_PENDING = '\u0000pending';

/** The tag names CoreDNS uses for Zipkin (`tagByProvider["default"]`). */
export const TAGS = {
  name: 'coredns.io/name',
  type: 'coredns.io/type',
  rcode: 'coredns.io/rcode',
  proto: 'coredns.io/proto',
  remote: 'coredns.io/remote',
} as const;

export interface TraceHandlerOptions {
  readonly every: number;
  /** `client_server`: a DoH client's span is joined (same id, `shared`) instead of getting a child. */
  readonly clientServer: boolean;
  readonly tracer: TracerState;
  /** The block has the metadata plugin: publish `trace/traceid`. */
  readonly metadata: boolean;
}

export class TraceHandler implements Handler {
  readonly name = 'trace';
  /** Queries seen, for `every` (CoreDNS's atomic counter; per query thread here). */
  private count = 0;

  constructor(
    private readonly o: TraceHandlerOptions,
    private readonly next: Handler | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    let sample = false;
    if (this.o.every > 0) sample = ++this.count % this.o.every === 0;
    if (!sample || q.span !== null) {
      if (this.o.metadata) clearPending(q);
      return nextOrFailure(this.name, this.next, q);
    }
    const span = this.startSpan(q);
    q.span = span;
    if (this.o.metadata) {
      if (q.metaValue(TRACE_ID_LABEL) === TRACE_ID_PENDING) q.meta.set(TRACE_ID_LABEL, span.traceId);
    }
    let r: number | Promise<number>;
    try {
      r = nextOrFailure(this.name, this.next, q);
    } catch (e) {
      q.span = null;
      span.finish();
      throw e;
    }
    if (typeof r === 'number') return this.done(q, span, r);
    return r.then(
      (rc) => this.done(q, span, rc),
      (e: unknown) => {
        q.span = null;
        span.finish();
        throw e;
      },
    );
  }

  /** The root span: a new trace, or the DoH client's continued (otext.RPCServerOption). */
  private startSpan(q: Query): Span {
    const headers = q.transport.httpHeaders;
    const ext = headers === undefined ? null : extractB3(headers);
    let ctx: SpanContext;
    let shared = false;
    if (ext !== null && ext.traceId !== undefined && ext.spanId !== undefined) {
      if (this.o.clientServer) {
        // zipkin-go's shared spans: a SERVER span joins the client's span.
        ctx = { ...ext, traceId: ext.traceId, spanId: ext.spanId };
        shared = true;
      } else {
        const { parentId: _, ...rest } = ext;
        ctx = { ...rest, traceId: ext.traceId, spanId: randomSpanId(), parentId: ext.spanId };
      }
    } else {
      // A new trace: zipkin-go's 64-bit generator gives the root span the trace id's value.
      const id = randomSpanId();
      ctx = { traceId: id, spanId: id };
      if (ext?.sampled !== undefined) ctx = { ...ctx, sampled: ext.sampled };
      if (ext?.debug) ctx = { ...ctx, debug: true };
    }
    const recorded = ctx.debug === true || ctx.sampled !== false;
    return new Span(this.o.tracer, 'servedns', ctx, recorded, { kind: 'SERVER', shared });
  }

  private done(q: Query, span: Span, status: number): number {
    q.span = null;
    span.tag(TAGS.name, q.lname);
    span.tag(TAGS.type, qtypeName(q.qtype));
    span.tag(TAGS.proto, q.proto);
    span.tag(TAGS.remote, q.transport.remoteAddress);
    // The written reply's RCODE; the returned one when the chain left the reply to the server
    // (plugin.ClientWrite), as the server answers with it.
    const rc = isServerWrittenRcode(status) ? status : q.reply === null ? 0 : q.reply.rcode;
    span.tag(TAGS.rcode, rcodeString(rc));
    if (q.error !== null) {
      span.tag('error', 'true');
      span.annotate('event:error');
      span.annotate(`error.object:${q.error.message}`);
    }
    span.finish();
    return status;
  }
}

/** Drop the provider's placeholder: this query publishes no trace id. */
function clearPending(q: Query): void {
  if (q.metaValue(TRACE_ID_LABEL) === TRACE_ID_PENDING) q.meta.delete(TRACE_ID_LABEL);
}

/** CoreDNS's rcode.ToString: miekg/dns's mnemonic, or `RCODE<n>`. */
export function rcodeString(rc: number): string {
  if (rc === 16) return 'BADSIG';
  const n = rcodeName(rc);
  return /^\d+$/.test(n) ? `RCODE${n}` : n;
}
