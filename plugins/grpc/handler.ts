/**
 * The grpc handler (README.md), as CoreDNS 1.15.0's plugin/grpc/grpc.go: a query inside FROM and
 * not excepted goes to the upstreams in policy order until one answers, within 5 s; the reply is
 * written as the upstream sent it. A reply for another question is a FORMERR; an NXDOMAIN (or,
 * with every upstream failing, the failure) falls through to the next plugin for the
 * `fallthrough` zones.
 */
import { performance } from 'node:perf_hooks';
import { Flag, Rcode } from '../../src/dns/constants.js';
import { replyMatches } from '../../src/dns/match.js';
import { isSubdomain } from '../../src/dns/name.js';
import { fallsThrough } from '../../src/fallthrough.js';
import type { Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { orderUpstreams, type PolicyState } from '../../src/upstreampolicy.js';
import type { GrpcProxy } from './proxy.js';
import type { GrpcConfig } from './setup.js';

/** CoreDNS's defaultTimeout: no attempt starts after 5 s, and none outlives them. */
export const QUERY_BUDGET_MS = 5000;

export class GrpcHandler implements Handler {
  readonly name = 'grpc';
  private readonly policy: PolicyState = { counter: 0 };

  constructor(
    readonly cfg: GrpcConfig,
    readonly proxies: readonly GrpcProxy[],
    readonly next: Handler | null,
  ) {}

  /** Inside FROM and not excepted (FROM itself always is). */
  match(lname: string): boolean {
    if (!isSubdomain(lname, this.cfg.from)) return false;
    if (lname === this.cfg.from) return true;
    for (const e of this.cfg.except) if (isSubdomain(lname, e)) return false;
    return true;
  }

  serve(q: Query): number | Promise<number> {
    if (!this.match(q.lname)) return this.next !== null ? this.next.serve(q) : Rcode.SERVFAIL;
    return this.forward(q);
  }

  private async forward(q: Query): Promise<number> {
    const list = orderUpstreams(this.proxies, this.cfg.policy, this.policy);
    const deadline = performance.now() + Math.min(QUERY_BUDGET_MS, q.deadline - performance.now());
    const question = { lname: q.lname, qtype: q.qtype, qclass: q.qclass };
    let err: Error | null = null;
    for (let i = 0; i < list.length && performance.now() < deadline; i++) {
      let reply: Buffer | null;
      try {
        reply = await list[i]!.query(q.raw, deadline - performance.now());
      } catch (e) {
        err = e as Error;
        continue;
      }
      // NotFound from the upstream: an NXDOMAIN reply to the query (CoreDNS's proxy.query).
      reply ??= bareReply(q, Rcode.NXDOMAIN);
      if (!replyMatches(reply, question)) {
        q.writeWire(bareReply(q, Rcode.FORMERR), this.name);
        return Rcode.FORMERR;
      }
      const rcode = reply[3]! & 0xf;
      if (rcode === Rcode.NXDOMAIN && this.next !== null && fallsThrough(this.cfg.fallthrough, q.lname)) {
        return this.next.serve(q);
      }
      q.writeWire(reply, this.name);
      return rcode;
    }
    if (this.next !== null && fallsThrough(this.cfg.fallthrough, q.lname)) return this.next.serve(q);
    return q.fail(err ?? new Error('no healthy gRPC proxies'), Rcode.SERVFAIL);
  }

  close(): void {
    for (const p of this.proxies) p.close();
  }
}

/** miekg's SetRcode(req, rcode): the query's id, opcode, RD and CD, QR set, the question only. */
function bareReply(q: Query, rcode: number): Buffer {
  const out = Buffer.from(q.raw.subarray(0, q.req.questionEnd));
  const keep = q.req.flags & (0x7800 | Flag.RD | Flag.CD);
  out.writeUInt16BE(Flag.QR | keep | rcode, 2);
  out.writeUInt16BE(1, 4);
  out.writeUInt32BE(0, 6);
  out.writeUInt16BE(0, 10);
  return out;
}
