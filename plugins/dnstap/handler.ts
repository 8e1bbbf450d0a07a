/**
 * The dnstap handler: a CLIENT_QUERY record before the rest of the chain runs and a
 * CLIENT_RESPONSE after it (CoreDNS 1.15.0 plugin/dnstap/handler.go, writer.go). When the chain
 * wrote nothing and returned an RCODE the server answers itself, the response record describes
 * that bare reply, as CoreDNS does since #6532. Each output encodes a record into its next batch
 * as it is handed over (src/dnstap/output.ts), so the wire messages are passed as they are, not
 * copied: the query's and the reply's buffers are only read during `tap`.
 */
import { performance } from 'node:perf_hooks';
import { Flag, isServerWrittenRcode, Rcode } from '../../src/dns/constants.js';
import type { ForwarderAttempt, ForwarderTap } from '../../src/dnstap/forwarder.js';
import { MessageType } from '../../src/dnstap/message.js';
import type { TapSink } from '../../src/dnstap/output.js';
import type { Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { compileTemplate, literalOf, renderTemplate, type Template } from '../../src/replacer.js';

/** One configured tap: its output and what goes into its records. */
export interface Tap {
  readonly output: TapSink;
  readonly full: boolean;
  /** The `extra` field, or null (no `extra`, or an empty one: CoreDNS then sends none). */
  readonly extra: Extra | null;
}

/** `extra` compiled at setup: its bytes when it has no placeholder, else the template. */
export type Extra = { readonly bytes: Buffer } | { readonly template: Template };

/**
 * Compiles `extra` with CoreDNS's replacer (src/replacer.ts). CoreDNS renders it with no recorder
 * for every record (`repl.Replace(ctx, state, nil, …)`), so the reply placeholders stay `-`.
 */
export function compileExtra(s: string): Extra | null {
  if (s === '') return null;
  const template = compileTemplate(s);
  const literal = literalOf(template);
  return literal !== null ? { bytes: Buffer.from(literal) } : { template };
}

/** The `extra` bytes of one record for `q` (the request as the client sent it to this block). */
export function renderExtra(e: Extra, q: Query): Buffer {
  return 'bytes' in e ? e.bytes : Buffer.from(renderTemplate(e.template, { q, recorded: null }));
}

/** The bare reply the server writes for a server-written RCODE (`SetRcode(req, rcode)`). */
function bareReply(q: Query, rcode: number): Buffer {
  const out = Buffer.from(q.raw.subarray(0, q.req.questionEnd));
  const opcode = q.req.opcode;
  const copied = opcode === 0 ? q.req.flags & (Flag.RD | Flag.CD) : 0;
  out.writeUInt16BE(Flag.QR | (opcode << 11) | copied | (rcode & 0xf), 2);
  out.writeUInt16BE(1, 4);
  out.writeUInt32BE(0, 6);
  out.writeUInt16BE(0, 10);
  return out;
}

function now(): number {
  return performance.timeOrigin + performance.now();
}

/** Each attempt of *forward* in the block, to every tap (CoreDNS's forward/dnstap.go). */
export function forwarderTap(taps: readonly Tap[]): ForwarderTap {
  return {
    tapForwarder(a: ForwarderAttempt): void {
      const responseTimeMs = a.reply !== null ? now() : 0;
      let reply: Buffer | undefined;
      if (a.reply !== null) {
        // CoreDNS packs the reply after restoring the client's message id.
        reply = Buffer.from(a.reply);
        reply.writeUInt16BE(a.query.id, 0);
      }
      for (const t of taps) {
        const base = {
          proto: a.proto,
          address: a.localHost ?? undefined,
          port: a.localHost !== null ? a.localPort : undefined,
          responseAddress: a.upstreamHost,
          responsePort: a.upstreamPort,
          queryTimeMs: a.startMs,
        };
        const extra = t.extra === null ? undefined : renderExtra(t.extra, a.query);
        t.output.tap({
          ...base,
          type: MessageType.FORWARDER_QUERY,
          queryMessage: t.full ? a.query.raw : undefined,
          extra,
        });
        if (reply !== undefined) {
          t.output.tap({
            ...base,
            type: MessageType.FORWARDER_RESPONSE,
            responseTimeMs,
            responseMessage: t.full ? reply : undefined,
            extra,
          });
        }
      }
    },
  };
}

export class DnstapHandler implements Handler {
  readonly name = 'dnstap';
  /** Some tap wants the wire bytes. */
  private readonly full: boolean;
  constructor(
    private readonly next: Handler | null,
    private readonly taps: readonly Tap[],
  ) {
    this.full = taps.some((t) => t.full);
  }

  serve(q: Query): number | Promise<number> {
    // When the packet was read (CoreDNS takes the time as its handler starts, microseconds later).
    const queryTimeMs = performance.timeOrigin + q.start;
    const proto = q.transport.proto;
    const address = q.transport.remoteAddress;
    const port = q.transport.remotePort;
    for (const t of this.taps) {
      t.output.tap({
        type: MessageType.CLIENT_QUERY,
        proto,
        address,
        port,
        queryTimeMs,
        queryMessage: t.full ? q.raw : undefined,
        extra: t.extra === null ? undefined : renderExtra(t.extra, q),
      });
    }
    if (!this.next) return Rcode.SERVFAIL;
    const r = this.next.serve(q);
    if (typeof r === 'number') {
      this.tapResponse(q, r, queryTimeMs);
      return r;
    }
    return r.then((rc) => {
      this.tapResponse(q, rc, queryTimeMs);
      return rc;
    });
  }

  private tapResponse(q: Query, rcode: number, queryTimeMs: number): void {
    if (q.dropped) return;
    if (q.reply === null) {
      // The server writes a bare reply: tap it as CoreDNS's deferred `SetRcode(req, rcode)`.
      if (isServerWrittenRcode(rcode)) this.tapReply(q, queryTimeMs, this.full ? bareReply(q, rcode) : undefined);
      return;
    }
    if (q.streamed) {
      // A zone transfer went out already; its last message stands for the response.
      this.tapReply(q, queryTimeMs, this.full ? q.reply.wire() : undefined);
      return;
    }
    // CoreDNS taps the message as its writer sent it (OPT added, truncated): wait for those bytes.
    q.onSend = (wire) => this.tapReply(q, queryTimeMs, this.full ? wire : undefined);
  }

  private tapReply(q: Query, queryTimeMs: number, wire: Buffer | undefined): void {
    const responseTimeMs = now();
    for (const t of this.taps) {
      t.output.tap({
        type: MessageType.CLIENT_RESPONSE,
        proto: q.transport.proto,
        address: q.transport.remoteAddress,
        port: q.transport.remotePort,
        queryTimeMs,
        responseTimeMs,
        responseMessage: t.full ? wire : undefined,
        extra: t.extra === null ? undefined : renderExtra(t.extra, q),
      });
    }
  }
}
