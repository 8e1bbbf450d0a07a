/**
 * The query-path part of prometheus: times the rest of the chain and records one set of
 * `coredns_dns_*` observations per query (plugins.md, prometheus).
 *
 * Hot path: one cell per label set (server, zone, proto, family, type / rcode, plugin), found with
 * two or three Map lookups and no string building; cells accumulate plain numbers and are flushed
 * into prom-client when the metrics are read (batch.ts). A synchronous `next.serve()` result is
 * recorded inline without a promise.
 */
import { performance } from 'node:perf_hooks';
import { isServerWrittenRcode, qtypeName, Rcode, rcodeName } from '../../src/dns/constants.js';
import { isSubdomain, matchZone } from '../../src/dns/name.js';
import * as m from '../../src/metrics/dns.js';
import { nextOrFailure, type Handler, type Rcode as RcodeT } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { CounterCell, flushOnCollect, HistCell } from '../../src/metrics/batch.js';

/** The batched cells of the `coredns_dns_*` metrics, read on every scrape. */
for (const metric of [m.requestsTotal, m.requestDuration, m.requestSize, m.responseSize, m.responsesTotal, m.doRequestsTotal]) flushOnCollect(metric);

class ProtoCells {
  readonly reqSize: HistCell;
  readonly respSize: HistCell;
  /** (family << 16 | qtype) → requests counter cell. */
  private readonly requests = new Map<number, CounterCell>();

  constructor(private readonly server: string, private readonly zone: string, private readonly proto: string) {
    this.reqSize = new HistCell(m.requestSize, { server, zone, view: '', proto });
    this.respSize = new HistCell(m.responseSize, { server, zone, view: '', proto });
  }

  request(family: number, qtype: number): CounterCell {
    const key = (family << 16) | qtype;
    let c = this.requests.get(key);
    if (c === undefined) {
      const labels = { server: this.server, zone: this.zone, view: '', proto: this.proto, family: String(family), type: m.typeLabel(qtypeName(qtype)) };
      c = new CounterCell(m.requestsTotal, labels);
      this.requests.set(key, c);
    }
    return c;
  }
}

class ZoneCells {
  readonly duration: HistCell;
  readonly doRequests: CounterCell;
  readonly udp: ProtoCells;
  readonly tcp: ProtoCells;
  /** rcode → plugin → responses counter cell. */
  private readonly responses = new Map<number, Map<string, CounterCell>>();

  constructor(private readonly server: string, private readonly zone: string) {
    this.duration = new HistCell(m.requestDuration, { server, zone, view: '' });
    this.doRequests = new CounterCell(m.doRequestsTotal, { server, zone, view: '' });
    this.udp = new ProtoCells(server, zone, 'udp');
    this.tcp = new ProtoCells(server, zone, 'tcp');
  }

  response(rcode: number, plugin: string): CounterCell {
    let byPlugin = this.responses.get(rcode);
    if (byPlugin === undefined) {
      byPlugin = new Map();
      this.responses.set(rcode, byPlugin);
    }
    let c = byPlugin.get(plugin);
    if (c === undefined) {
      c = new CounterCell(m.responsesTotal, { server: this.server, zone: this.zone, view: '', rcode: rcodeName(rcode), plugin });
      byPlugin.set(plugin, c);
    }
    return c;
  }
}

/** Process-wide cache: server label → zone label → cells (cells survive reloads and metric resets). */
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
