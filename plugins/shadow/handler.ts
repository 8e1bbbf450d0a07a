/**
 * The shadow handler: passes every query down the chain untouched and, for a sample of them,
 * copies the query and the reply the chain wrote once the chain is done. The copy is queued for
 * the reference (exchange.ts) and compared when the reference answers; the client's reply is
 * neither delayed nor changed: the exchange is sent after the server has replied, and nothing
 * the shadow side does can throw into the chain.
 *
 * Sampling is Bernoulli with probability `fraction`, drawn as the number of queries to skip
 * before the next sampled one (geometric), so an unsampled query costs one counter decrement.
 */
import { Opcode, Qtype } from '../../src/dns/constants.js';
import { encodeMessage } from '../../src/dns/encode.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import type { ShadowClient } from './exchange.js';
import { shadowMetrics } from './metrics.js';

/** Draws the number of queries skipped before the next sampled one. */
export class Sampler {
  private readonly logKeep: number;

  constructor(
    readonly fraction: number,
    private readonly random: () => number = Math.random,
  ) {
    this.logKeep = Math.log1p(-fraction);
  }

  /** Geometric on {0, 1, …} with success probability `fraction` (0 when fraction is 1). */
  skip(): number {
    if (this.fraction >= 1) return 0;
    const u = 1 - this.random(); // (0, 1]
    const n = Math.floor(Math.log(u) / this.logKeep);
    return n > 0 ? Math.min(n, Number.MAX_SAFE_INTEGER) : 0;
  }
}

export class ShadowHandler implements Handler {
  readonly name = 'shadow';
  /** Queries still to pass before the next sampled one. */
  private toSkip: number;
  private readonly dropped = shadowMetrics().droppedCell;

  constructor(
    private readonly next: Handler | null,
    private readonly sampler: Sampler,
    private readonly client: ShadowClient,
    private readonly onCaptureError: (e: unknown) => void,
  ) {
    this.toSkip = sampler.skip();
  }

  serve(q: Query): number | Promise<number> {
    if (this.toSkip > 0) {
      this.toSkip--;
      return nextOrFailure(this.name, this.next, q);
    }
    // Only plain queries: no zone transfers (TCP, several messages) and nothing that could change
    // the reference's data (UPDATE, NOTIFY). The sample stays for the next eligible query.
    if (q.req.opcode !== Opcode.QUERY || q.qtype === Qtype.AXFR || q.qtype === Qtype.IXFR) {
      return nextOrFailure(this.name, this.next, q);
    }
    this.toSkip = this.sampler.skip();
    const r = nextOrFailure(this.name, this.next, q);
    if (typeof r === 'number') {
      this.capture(q, r);
      return r;
    }
    return r.then((rc) => {
      this.capture(q, rc);
      return rc;
    });
  }

  /** Copy the query and our reply for the reference, if there is room. Never throws. */
  private capture(q: Query, rcode: number): void {
    try {
      if (!this.client.reserve()) {
        this.dropped.inc();
        return;
      }
      const reply = q.reply;
      let ours: Buffer | null = null;
      try {
        // A copy: the server may still adjust the buffer or message it sends (id, OPT).
        if (reply !== null) ours = reply.isWire ? Buffer.from(reply.wire()) : encodeMessage(reply.peek());
      } catch (e) {
        this.client.release();
        throw e;
      }
      // Copies hold no reference into the listener's buffers (a TCP read chunk can be 64 KiB).
      const edns = q.req.edns;
      const req = edns === null ? q.req : { ...q.req, edns: { ...edns, options: Buffer.from(edns.options) } };
      this.client.submit({ raw: Buffer.from(q.raw), req, rcode, ours });
    } catch (e) {
      this.onCaptureError(e);
    }
  }
}
