/**
 * The query handler: zone match, then a precomputed reply from the AnswerCache (synchronous), or a
 * fresh resolution that is cached for the next query. Fallthrough and the "not yet synced" SERVFAIL
 * are applied per query on top of the cached outcome (docs/records.md §4.7, §6.4).
 */
import type { Answer } from 'dns-packet';
import { Flag, Qtype, Rcode, qclassName } from '../../src/dns/constants.js';
import { matchZone } from '../../src/dns/name.js';
import { fallsThrough } from '../../src/fallthrough.js';
import { LOOKUP_REFUSED, nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Message } from '../../src/dns/message.js';
import type { Query } from '../../src/query.js';
import { AnswerCache, fitEntry, buildMessage, makeEntry, materialize, negativeEntry, type Entry } from './answers.js';
import { Resolver, View, join, type External, type Item, type ResolveConfig } from './resolve.js';
import { EVERYTHING, type ChangeKey, type ChangeSet } from './changekeys.js';
import type { IndexReader } from './store.js';
import { sizeLimit } from '../../src/server/reply.js';

export interface HandlerConfig extends ResolveConfig {
  /** Zones for fallthrough (`.` = all), or null when fallthrough is off. */
  readonly fallthrough: readonly string[] | null;
  /** Search domains of the server's own resolv.conf (autopath, §9.2). */
  readonly searchDomains: readonly string[];
}

/**
 * Lookup of a name through the server (ExternalName targets outside the zone, §2.6): resolves
 * with the reply, null when no reply came back, or LOOKUP_REFUSED for an ExternalName cycle
 * (SelfLookup). Without one, the next plugin is asked.
 */
export type UpstreamLookup = (sub: Query) => Promise<Message | null | typeof LOOKUP_REFUSED>;

export const PLUGIN = 'kubernetes';

function isExternal(i: Item): i is External {
  return (i as External).kind === 'external';
}

export class KubernetesHandler implements Handler {
  readonly name = PLUGIN;
  readonly resolver: Resolver;
  readonly cache = new AnswerCache();
  private readonly unsubscribe: () => void;
  /**
   * The plugin's zones that are multicluster zones (§8.4), whose SOA carries the multicluster
   * serial; null without `multicluster`, so that the cluster zone's replies cost one test more.
   */
  private readonly multiclusterZones: ReadonlySet<string> | null;

  constructor(
    readonly cfg: HandlerConfig,
    readonly store: IndexReader,
    /** True when every watch has completed its first list. */
    readonly synced: () => boolean,
    readonly next: Handler | null,
    readonly upstream: UpstreamLookup | null,
  ) {
    this.resolver = new Resolver(cfg);
    const mc = cfg.zones.filter((z) => this.resolver.isMulticluster(z));
    this.multiclusterZones = mc.length ? new Set(mc) : null;
    this.unsubscribe = store.subscribe((deps) => this.onChange(deps));
  }

  /** Replies dropped while in use, to rebuild: `qtype lname` → (qtype, lname). */
  private readonly rewarm = new Map<string, { qtype: number; lname: string }>();
  private rewarmScheduled = false;
  private closed = false;

  /**
   * A store change: drop the answers computed from the changed objects, and recompute those that
   * were in use right away (after the current batch of events), so the next query is still a hit.
   */
  private onChange(deps: ChangeSet): void {
    if (deps === EVERYTHING) {
      this.cache.clear();
      return;
    }
    for (const k of this.cache.invalidate(deps)) this.rewarm.set(`${k.qtype} ${k.lname}`, k);
    if (this.rewarm.size === 0 || this.rewarmScheduled) return;
    this.rewarmScheduled = true;
    setImmediate(() => {
      this.rewarmScheduled = false;
      if (this.closed) return;
      const keys = [...this.rewarm.values()];
      this.rewarm.clear();
      for (const { qtype, lname } of keys) {
        if (this.cache.get(qtype, lname)) continue;
        const zone = matchZone(this.cfg.zones, lname);
        if (zone !== undefined) this.build(lname, qtype, zone);
      }
    });
  }

  /** The SOA serial of `zone` (one of the plugin's zones, lower-case). */
  serialOf(zone: string): number {
    return this.multiclusterZones?.has(zone) === true ? this.store.multiclusterSerial : this.store.serial;
  }

  /** Stop following store changes (instance replaced). */
  close(): void {
    this.closed = true;
    this.unsubscribe();
    this.cache.clear();
    this.rewarm.clear();
  }

  /** Compute and cache the reply for a lower-cased name (undefined when it needs an upstream lookup). */
  private build(lname: string, qtype: number, zone: string): Entry | undefined {
    const deps = new Set<ChangeKey>();
    const out = this.resolver.resolve(new View(this.store, deps), lname, lname, qtype, zone, zone, 0);
    let e: Entry | undefined;
    if (out.nameError || out.answers.length === 0) {
      e = negativeEntry(lname, qtype, zone, Math.min(this.cfg.ttl, 300), this.cfg.ttl, out.nameError);
    } else if (!out.answers.some(isExternal)) {
      e = makeEntry(this.message(0, 0, lname, qtype, 'IN', zone, false, out.answers as Answer[], out.extra), false);
    }
    if (e) this.cache.set(qtype, lname, e, deps);
    return e;
  }

  serve(q: Query): number | Promise<number> {
    const lname = q.lname;
    const zone = matchZone(this.cfg.zones, lname);
    if (zone === undefined) return nextOrFailure(PLUGIN, this.next, q);
    const qtype = q.qtype;
    if (qtype === Qtype.AXFR || qtype === Qtype.IXFR) return Rcode.REFUSED;
    const zoneText = q.name.slice(q.name.length - zone.length);
    // Fast path: everything but SRV targets (uncompressed, zone spelled as in the query) is
    // independent of the query's letter case once the question bytes are copied in.
    const cacheable = !lname.includes('\\') && (qtype !== Qtype.SRV || zoneText === zone);
    if (cacheable) {
      const e = this.cache.lookup(qtype, lname) ?? this.build(lname, qtype, zone);
      if (e && q.req.questionEnd - 12 === e.qlen) {
        if (e.nameError && fallsThrough(this.cfg.fallthrough, lname)) return nextOrFailure(PLUGIN, this.next, q);
        const rcode = e.nameError ? (this.synced() ? Rcode.NXDOMAIN : Rcode.SERVFAIL) : Rcode.NOERROR;
        // UDP: the copy is cut to the client's buffer here, once per entry and size (see fitEntry),
        // leaving room for the OPT record the server appends.
        const fit =
          q.proto === 'udp'
            ? fitEntry(e, sizeLimit(q.req, 'udp') - (q.req.edns ? 11 + q.req.edns.options.length : 0))
            : e;
        const serial = this.multiclusterZones === null ? this.store.serial : this.serialOf(zone);
        q.writeWire(materialize(fit, q.id, q.req.flags, q.raw, q.req.questionEnd, rcode, serial), PLUGIN);
        return rcode;
      }
    }
    return this.serveSlow(q, zone, zoneText);
  }

  /** Reply as a message: SOA authority for NODATA/NXDOMAIN. */
  private message(
    id: number,
    flags: number,
    qname: string,
    qtype: number,
    qclass: string,
    zoneText: string,
    nameError: boolean,
    answers: Answer[],
    extra: Answer[],
  ) {
    const rcode = nameError ? Rcode.NXDOMAIN : Rcode.NOERROR;
    if (nameError || answers.length === 0) {
      return buildMessage(
        id,
        flags,
        qname,
        qtype,
        qclass,
        rcode,
        [],
        [this.resolver.soa(zoneText, this.serialOf(zoneText.toLowerCase()))],
        [],
      );
    }
    return buildMessage(id, flags, qname, qtype, qclass, rcode, answers, [], extra);
  }

  private serveSlow(q: Query, zone: string, zoneText: string): number | Promise<number> {
    const out = this.resolver.resolve(
      new View(this.store, null),
      q.name,
      q.lname,
      q.qtype,
      zone,
      zoneText,
      this.serialOf(zone),
    );
    if (out.nameError) {
      if (fallsThrough(this.cfg.fallthrough, q.lname)) return nextOrFailure(PLUGIN, this.next, q);
      // Not yet synced: the plugin writes the SERVFAIL itself, with the SOA (as CoreDNS's
      // BackendError does), and returns the RCODE it wrote, like every reply it writes.
      const rcode = this.synced() ? Rcode.NXDOMAIN : Rcode.SERVFAIL;
      const msg = this.message(q.id, q.req.flags, q.name, q.qtype, qclassName(q.qclass), zoneText, true, [], []);
      msg.flags = ((msg.flags ?? 0) & ~0xf) | rcode;
      q.write(msg, PLUGIN);
      return rcode;
    }
    if (!out.answers.some(isExternal)) {
      q.write(
        this.message(
          q.id,
          q.req.flags,
          q.name,
          q.qtype,
          qclassName(q.qclass),
          zoneText,
          false,
          out.answers as Answer[],
          out.extra,
        ),
        PLUGIN,
      );
      return Rcode.NOERROR;
    }
    return this.completeExternal(q, zoneText, out.answers, out.extra);
  }

  /** Fill in upstream answers for CNAMEs to names outside the zone (§2.6). */
  private async completeExternal(q: Query, zoneText: string, items: Item[], extra: Answer[]): Promise<number> {
    const answers: Answer[] = [];
    let truncated = false;
    for (const it of items) {
      if (!isExternal(it)) {
        answers.push(it);
        continue;
      }
      const m = await this.lookup(q, it.target, it.qtype);
      // A cycle of ExternalNames (through any zone or block): the query fails (docs/corefile.md §11).
      if (m === LOOKUP_REFUSED)
        return q.fail(new Error(`plugin/kubernetes: lookup of ${it.target} is a cycle`), Rcode.SERVFAIL);
      if (!m) continue; // lookup failed outright: drop the CNAME
      answers.push(it.cname);
      answers.push(...m.answers.filter((r) => r.type !== 'OPT'));
      if (((m.flags ?? 0) & Flag.TC) !== 0) truncated = true;
    }
    const msg = this.message(q.id, q.req.flags, q.name, q.qtype, qclassName(q.qclass), zoneText, false, answers, extra);
    if (truncated) msg.flags = (msg.flags ?? 0) | Flag.TC;
    q.write(msg, PLUGIN);
    return Rcode.NOERROR;
  }

  private async lookup(q: Query, target: string, qtype: number): Promise<Message | null | typeof LOOKUP_REFUSED> {
    const sub = q.derive(target, qtype);
    try {
      if (this.upstream) return await this.upstream(sub);
      if (!this.next) return null;
      await this.next.serve(sub);
      return sub.reply ? sub.reply.peek() : null;
    } catch {
      return null;
    }
  }

  /**
   * The search path of the client of `q` for autopath (§9.2): `[<ns>.svc.<zone>, svc.<zone>,
   * <zone>, <resolv.conf search>..., '']`, or null when the pod mode is not `verified`, the query is
   * outside the zones, or the client IP is not a known pod.
   */
  autoPath(q: Query): string[] | null {
    if (this.cfg.podMode !== 'verified') return null;
    const zone = matchZone(this.cfg.zones, q.lname);
    if (zone === undefined) return null;
    let ip = q.transport.remoteAddress;
    if (ip.startsWith('::ffff:') && ip.includes('.')) ip = ip.slice(7);
    const ns = this.store.podsWithIP(ip)[0]?.namespace;
    if (ns === undefined) return null;
    return [join(`${ns}.svc`, zone), join('svc', zone), zone, ...this.cfg.searchDomains, ''];
  }
}
