/**
 * The query-path part of prometheus: times the rest of the chain and records one set of
 * `coredns_dns_*` observations per query (docs/plugins.md, prometheus).
 *
 * Hot path: one cell per label set (server, zone, proto, family, type / rcode, plugin), found with
 * two or three Map lookups and no string building (`dnsCells`, src/metrics/dns.ts); cells
 * accumulate plain numbers and are flushed into prom-client when the metrics are read (batch.ts). A synchronous `next.serve()` result is
 * recorded inline without a promise.
 */
import { performance } from 'node:perf_hooks';
import { bareReplyRcode, Rcode } from '../../src/dns/constants.js';
import { isSubdomain, matchZone } from '../../src/dns/name.js';
import { dnsCells } from '../../src/metrics/dns.js';
import { nextOrFailure, type Handler, type Rcode as RcodeT } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';

/** Size of the bare reply the server writes when no plugin wrote one: header + question (+ OPT). */
function bareReplySize(q: Query): number {
  return q.req.questionEnd + (q.req.edns ? 11 : 0);
}

export class MetricsHandler implements Handler {
  readonly name = 'prometheus';
  constructor(
    private readonly zones: readonly string[],
    private readonly next: Handler | null,
    /** The block's view name, the `view` label ('' without a view). */
    private readonly view = '',
  ) {}

  serve(q: Query): RcodeT | Promise<RcodeT> {
    const t0 = performance.now();
    let r: RcodeT | Promise<RcodeT>;
    try {
      r = this.next ? this.next.serve(q) : nextOrFailure(this.name, null, q);
    } catch (e) {
      this.record(q, Rcode.SERVFAIL, t0, true);
      throw e;
    }
    if (typeof r === 'number') {
      this.record(q, r, t0, false);
      return r;
    }
    return r.then(
      (rc) => {
        this.record(q, rc, t0, false);
        return rc;
      },
      (e: unknown) => {
        this.record(q, Rcode.SERVFAIL, t0, true);
        throw e;
      },
    );
  }

  /** The `zone` label: the longest key of this block containing the name, `.` if none. */
  zoneOf(q: Query): string {
    const zones = this.zones;
    if (zones.length === 1) return isSubdomain(q.lname, zones[0]!) ? zones[0]! : '.';
    return matchZone(zones, q.lname) ?? '.';
  }

  private record(q: Query, rc: number, t0: number, failed: boolean): void {
    const t = q.transport;
    const z = dnsCells(t.server, this.zoneOf(q), this.view);
    const p = t.proto === 'tcp' ? z.tcp : z.udp;
    p.request(t.family, q.req.qtype).inc();
    if (q.req.edns !== null && q.req.edns.do) z.doRequests.inc();
    z.duration.observe((performance.now() - t0) / 1000);
    p.reqSize.observe(q.raw.length);
    const reply = failed ? null : q.reply;
    if (reply !== null) {
      p.respSize.observe(reply.wire().length);
      z.response(reply.rcode, reply.plugin).inc();
    } else if (q.dropped && !failed) {
      // Dropped on purpose (acl): nothing sent; CoreDNS's recorder reports NOERROR of size 0.
      p.respSize.observe(0);
      z.response(Rcode.NOERROR, '').inc();
    } else {
      p.respSize.observe(bareReplySize(q));
      z.response(bareReplyRcode(rc), '').inc();
    }
  }
}
