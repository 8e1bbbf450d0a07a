/**
 * The query-path part of prometheus: times the rest of the chain and records one set of
 * `coredns_dns_*` observations per query (plugins.md, prometheus).
 *
 * Hot path: label children are resolved once per (server, zone, proto, family, type) and
 * (rcode, plugin) and kept in Maps, so a query does two or three Map lookups per metric and no
 * string building. A synchronous `next.serve()` result is recorded inline without a promise.
 */
import { performance } from 'node:perf_hooks';
import { isServerWrittenRcode, qtypeName, Rcode, rcodeName } from '../../src/dns/constants.js';
import { isSubdomain, matchZone } from '../../src/dns/name.js';
import * as m from '../../src/metrics/dns.js';
import { nextOrFailure, type Handler, type Rcode as RcodeT } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';

interface Inc { inc(v?: number): void }
interface Observe { observe(v: number): void }

class ProtoCells {
  readonly reqSize: Observe;
  readonly respSize: Observe;
  /** (family << 16 | qtype) → requests counter child. */
  private readonly requests = new Map<number, Inc>();

  constructor(private readonly server: string, private readonly zone: string, private readonly proto: string) {
    this.reqSize = m.requestSize.labels(server, zone, '', proto);
    this.respSize = m.responseSize.labels(server, zone, '', proto);
  }

  request(family: number, qtype: number): Inc {
    const key = (family << 16) | qtype;
    let c = this.requests.get(key);
    if (c === undefined) {
      c = m.requestsTotal.labels(this.server, this.zone, '', this.proto, String(family), m.typeLabel(qtypeName(qtype)));
      this.requests.set(key, c);
    }
    return c;
  }
}

class ZoneCells {
  readonly duration: Observe;
  readonly doRequests: Inc;
  readonly udp: ProtoCells;
  readonly tcp: ProtoCells;
  /** rcode → plugin → responses counter child. */
  private readonly responses = new Map<number, Map<string, Inc>>();

  constructor(private readonly server: string, private readonly zone: string) {
    this.duration = m.requestDuration.labels(server, zone, '');
    this.doRequests = m.doRequestsTotal.labels(server, zone, '');
    this.udp = new ProtoCells(server, zone, 'udp');
    this.tcp = new ProtoCells(server, zone, 'tcp');
  }

  response(rcode: number, plugin: string): Inc {
    let byPlugin = this.responses.get(rcode);
    if (byPlugin === undefined) {
      byPlugin = new Map();
      this.responses.set(rcode, byPlugin);
    }
    let c = byPlugin.get(plugin);
    if (c === undefined) {
      c = m.responsesTotal.labels(this.server, this.zone, '', rcodeName(rcode), plugin);
      byPlugin.set(plugin, c);
    }
    return c;
  }
}

/** Process-wide cache: server label → zone label → children (children stay valid across metric resets). */
const cells = new Map<string, Map<string, ZoneCells>>();

function cellsFor(server: string, zone: string): ZoneCells {
  let byZone = cells.get(server);
  if (byZone === undefined) {
    byZone = new Map();
    cells.set(server, byZone);
  }
  let z = byZone.get(zone);
  if (z === undefined) {
    z = new ZoneCells(server, zone);
    byZone.set(zone, z);
  }
  return z;
}

/** Size of the bare reply the server writes when no plugin wrote one: header + question (+ OPT). */
function bareReplySize(q: Query): number {
  return q.req.questionEnd + (q.req.edns ? 11 : 0);
}

export class MetricsHandler implements Handler {
  readonly name = 'prometheus';
  constructor(private readonly zones: readonly string[], private readonly next: Handler | null) {}

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
    const z = cellsFor(t.server, this.zoneOf(q));
    const p = t.proto === 'tcp' ? z.tcp : z.udp;
    p.request(t.family, q.req.qtype).inc();
    if (q.req.edns !== null && q.req.edns.do) z.doRequests.inc();
    z.duration.observe((performance.now() - t0) / 1000);
    p.reqSize.observe(q.raw.length);
    const reply = failed ? null : q.reply;
    if (reply !== null) {
      p.respSize.observe(reply.wire().length);
      z.response(reply.rcode, reply.plugin).inc();
    } else {
      p.respSize.observe(bareReplySize(q));
      z.response(isServerWrittenRcode(rc) ? rc : Rcode.SERVFAIL, '').inc();
    }
  }
}
