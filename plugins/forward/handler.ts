/**
 * The forward handler (docs/plugins.md, forward, "Per-query algorithm"): one instance per `forward`
 * line, chained in file order. Replies are passed to the client byte for byte, with only the id
 * (and the question's letter case) put back to the client's.
 */
import { performance } from 'node:perf_hooks';
import { Flag, Rcode } from '../../src/dns/constants.js';
import { replyMatches } from '../../src/dns/match.js';
import { isSubdomain } from '../../src/dns/name.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { untraced } from '../../src/tracing/chain.js';
import type { ForwarderTap } from '../../src/dnstap/forwarder.js';
import type { LocalAddress } from './localaddress.js';
import * as m from './metrics.js';
import { orderUpstreams, type PolicyState } from '../../src/upstreampolicy.js';
import type { Proxy } from './proxy.js';
import type { ForwardConfig } from './setup.js';
import { restoreClientHeader } from './wire.js';

/**
 * Overall budget per query across all attempts. CoreDNS 1.15.0 starts attempts until 5 s
 * (`defaultTimeout`) have passed but lets the last one run its whole read timeout, so its
 * SERVFAIL can come after 6 s, when glibc, musl and Go resolvers (5 s per try) have given up.
 * Here no attempt outlives the budget (its read timeout is cut to what is left), and the budget
 * is 4 s: two whole attempts at the default 2 s read timeout, as CoreDNS makes, with a second of
 * headroom for the network and a loaded event loop before the client's 5 s run out.
 */
export const QUERY_BUDGET_MS = 4000;

/** Timers and Date.now() tick apart by up to a millisecond (see the attempt loop). */
const CLOCK_SLACK_MS = 2;
export class ForwardHandler implements Handler {
  readonly name = 'forward';
  private inflight = 0;
  private readonly policy: PolicyState = { counter: 0 };
  private readonly limitError: Error;

  constructor(
    readonly cfg: ForwardConfig,
    /** Upstreams in configured order (hostname TOs are appended once resolved). */
    readonly proxies: Proxy[],
    readonly next: Handler | null,
    /** The block's dnstap, once the startup hook found it (null: no dnstap, nothing is tapped). */
    private readonly tap: { current: ForwarderTap | null } = { current: null },
  ) {
    this.limitError = new Error(`concurrent queries exceeded maximum ${cfg.maxConcurrent}`);
  }

  /** Is `lname` forwarded by this instance: inside FROM and not excepted (FROM itself always is). */
  match(lname: string): boolean {
    if (!isSubdomain(lname, this.cfg.from)) return false;
    if (lname === this.cfg.from) return true;
    for (const e of this.cfg.except) if (isSubdomain(lname, e)) return false;
    return true;
  }

  serve(q: Query): number | Promise<number> {
    if (!this.match(q.lname)) return nextOrFailure(this.name, this.next, q);
    const max = this.cfg.maxConcurrent;
    if (max > 0) {
      if (this.inflight >= max) {
        m.maxConcurrentRejects.inc();
        return q.fail(this.limitError, Rcode.REFUSED);
      }
      this.inflight++;
      return this.forward(q).finally(() => {
        this.inflight--;
      });
    }
    return this.forward(q);
  }

  /** Queries in flight (for tests and the max_concurrent accounting). */
  get inFlight(): number {
    return this.inflight;
  }

  private async forward(q: Query): Promise<number> {
    const proxies = this.proxies;
    const n = proxies.length;
    if (n === 0) return q.fail(new Error('no healthy proxies'), Rcode.SERVFAIL);
    const list = orderUpstreams(proxies, this.cfg.policy, this.policy);
    const cap = this.cfg.maxConnectAttempts ?? 2 * n;
    // The `cancel` plugin's deadline (performance.now() based) can shorten the budget.
    const deadline = Date.now() + Math.min(QUERY_BUDGET_MS, q.deadline - performance.now());
    const question = { lname: q.lname, qtype: q.qtype, qclass: q.qclass };
    let proto: 'udp' | 'tcp' = this.cfg.forceTcp ? 'tcp' : this.cfg.preferUdp ? 'udp' : q.proto;
    let upstreamErr: Error | null = null;
    let lastReply: Buffer | null = null;
    let fails = 0;
    let i = 0;
    let attempts = 0;
    const tap = this.tap.current;
    const startMs = tap !== null ? performance.timeOrigin + performance.now() : 0;
    // A budget with less than CLOCK_SLACK_MS left is spent: an attempt cut to the remaining budget
    // ends on a timer that may fire a millisecond before Date.now() reaches the deadline, and must
    // not be followed by a 1 ms attempt.
    while (deadline - Date.now() > CLOCK_SLACK_MS && (cap === 0 || attempts < cap)) {
      if (i >= list.length) {
        i = 0;
        fails = 0;
      }
      let proxy = list[i++]!;
      if (proxy.down(this.cfg.maxFails)) {
        fails++;
        if (fails < n) continue;
        m.healthcheckBroken.inc();
        if (this.cfg.failfastAllUnhealthy) break;
        // Health checking looks broken: try a random upstream anyway.
        proxy = proxies[Math.floor(Math.random() * n)]!;
      }
      attempts++;
      const timeout = Math.max(1, Math.min(this.cfg.readTimeoutMs, deadline - Date.now()));
      let reply: Buffer;
      const local: LocalAddress | undefined = tap !== null ? { address: '', port: 0 } : undefined;
      // CoreDNS's `connect` span per attempt, when the query is traced (src/tracing/).
      const span = q.span === null ? null : q.span.child('connect');
      span?.tag('peer.address', proxy.to);
      try {
        reply = await proxy.exchange(q.raw, question, proto, timeout, local);
      } catch (e) {
        span?.finish();
        if (tap !== null) this.tapAttempt(tap, q, proxy, proto, local!, startMs, null);
        upstreamErr = e as Error;
        if (this.cfg.maxFails !== 0) proxy.healthcheck();
        if (fails < n) continue;
        break;
      }
      span?.finish();
      if (tap !== null) this.tapAttempt(tap, q, proxy, proto, local!, startMs, reply);
      if (!replyMatches(reply, question)) {
        // A reply for another question: FORMERR to the client (CoreDNS `state.Match`).
        q.writeWire(formerrFor(q), this.name);
        return Rcode.FORMERR;
      }
      const flags = reply.readUInt16BE(2);
      if ((flags & Flag.TC) !== 0 && proto === 'udp' && this.cfg.preferUdp && !this.cfg.forceTcp) {
        // prefer_udp: repeat the truncated query over TCP to the same upstream (not a new attempt).
        proto = 'tcp';
        i--;
        attempts--;
        continue;
      }
      const rcode = flags & 0xf;
      if (this.cfg.failover.includes(rcode) && fails < n) {
        lastReply = reply;
        fails++;
        continue;
      }
      const next = this.next;
      if (
        next !== null &&
        untraced(next) instanceof ForwardHandler &&
        (this.cfg.next.includes(rcode) ||
          (this.cfg.nextOnNodata && rcode === Rcode.NOERROR && reply.readUInt16BE(6) === 0))
      ) {
        return next.serve(q);
      }
      return this.write(q, reply);
    }
    if (lastReply) return this.write(q, lastReply);
    return q.fail(upstreamErr ?? new Error('no healthy proxies'), Rcode.SERVFAIL);
  }

  /** One attempt to dnstap: FORWARDER_QUERY, and FORWARDER_RESPONSE when a reply came. */
  private tapAttempt(
    tap: ForwarderTap,
    q: Query,
    proxy: Proxy,
    proto: 'udp' | 'tcp',
    local: LocalAddress,
    startMs: number,
    reply: Buffer | null,
  ): void {
    tap.tapForwarder({
      query: q,
      upstreamHost: proxy.addr.host,
      upstreamPort: proxy.addr.port,
      // CoreDNS's proxy reaches a TLS or HTTPS upstream over TCP.
      proto: proxy.addr.scheme === 'dns' ? proto : 'tcp',
      localHost: local.address !== '' ? local.address : null,
      localPort: local.port,
      startMs,
      reply,
    });
  }

  private write(q: Query, reply: Buffer): number {
    restoreClientHeader(reply, q.id, q.raw, q.req.questionEnd);
    q.writeWire(reply, this.name);
    return reply[3]! & 0xf;
  }
}

/** FORMERR reply to `q`: header from the query (id, opcode, RD, CD), QR=1, the question. */
function formerrFor(q: Query): Buffer {
  const out = Buffer.from(q.raw.subarray(0, q.req.questionEnd));
  const keep = q.req.flags & (0x7800 | Flag.RD | Flag.CD);
  out.writeUInt16BE(Flag.QR | keep | Rcode.FORMERR, 2);
  out.writeUInt16BE(1, 4);
  out.writeUInt32BE(0, 6);
  out.writeUInt16BE(0, 10);
  return out;
}
