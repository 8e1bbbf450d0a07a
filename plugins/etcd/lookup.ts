/**
 * The etcd plugin's lookups, as CoreDNS 1.15.0 builds them (plugin/etcd/etcd.go Records and TTL,
 * plugin/backend_lookup.go A, AAAA, SRV, MX, CNAME, TXT, PTR, NS, SOA and checkForApex), over the
 * in-memory index (kvtable.ts) instead of a range read per lookup. Record order, duplicate rules,
 * CNAME chains inside the zone, lookups through the whole server for names outside it, SRV weights
 * and `targetstrip` follow the Go code line by line; comments name the Go function.
 */
import type { Answer } from 'dns-packet';
import { Flag, Qtype } from '../../src/dns/constants.js';
import type { Message } from '../../src/dns/message.js';
import { isSubdomain, lowerName, toPacketName } from '../../src/dns/name.js';
import type { Query } from '../../src/query.js';
import type { KvEntry, KvView } from './kvtable.js';
import {
  decodeService,
  fqdnOf,
  groupServices,
  hostType,
  isAddress,
  joinLabels,
  keyDomain,
  namePath,
  namePathWithWildcard,
  serviceTarget,
  split255,
  type Service,
} from './service.js';

const DEFAULT_PRIORITY = 10;
const DEFAULT_TTL = 300;
const MAX_CNAME_CHAIN = 10;
/** SOA minimum and TTL (etcd's MinTTL). */
export const SOA_MIN_TTL = 30;

/** errKeyNotFound: the name has no key (NXDOMAIN, or fallthrough). */
export class KeyNotFound extends Error {
  constructor() {
    super('key not found');
  }
}

export interface BackendConfig {
  /** The `path` option as written (`skydns`, `/skydns`). */
  readonly pathPrefix: string;
  readonly noApexFallback: boolean;
  readonly minLeaseTtl: number;
  readonly maxLeaseTtl: number;
}

/** A lookup through the whole server (upstream.Lookup); null when it gave nothing. */
export type Upstream = (q: Query, name: string, qtype: number) => Promise<Message | null>;

/** The question a lookup is for: the name as asked (owner names keep its case) and its type. */
interface Question {
  /** Absolute, as asked (request.QName). */
  readonly qname: string;
  /** Lower case (request.Name). */
  readonly lname: string;
  readonly qtype: number;
}

function question(qname: string, qtype: number): Question {
  const n = fqdnOf(qname);
  return { qname: n, lname: lowerName(n), qtype };
}

function rr(name: string, type: Answer['type'], ttl: number, data: unknown): Answer {
  return { name: toPacketName(name), type, class: 'IN', ttl, data } as Answer;
}

/** newAddress. */
function address(s: Service, name: string, t: { type: 'A' | 'AAAA'; ip: string }): Answer {
  return rr(name, t.type, s.ttl, t.ip);
}

/** The answers of a lookup through the server (m1.Answer), and its TC bit. */
function answersOf(m: Message): { answers: Answer[]; truncated: boolean } {
  return { answers: (m.answers ?? []) as Answer[], truncated: ((m.flags ?? 0) & Flag.TC) !== 0 };
}

export interface Found {
  readonly records: Answer[];
  readonly extra: Answer[];
  readonly truncated: boolean;
}

export class Backend {
  constructor(
    private readonly cfg: BackendConfig,
    private readonly view: KvView,
    private readonly upstream: Upstream,
  ) {}

  /** Etcd.get: the subtree below `path` (else the key itself), or the key alone. */
  private get(path: string, recursive: boolean): KvEntry[] {
    if (recursive) {
      const p = path.endsWith('/') ? path : `${path}/`;
      const below = this.view.below(p.slice(0, -1));
      if (below.length > 0) return below;
      const one = this.view.get(p.slice(0, -1));
      if (!one) throw new KeyNotFound();
      return [one];
    }
    const one = this.view.get(path);
    if (!one) throw new KeyNotFound();
    return [one];
  }

  /** Etcd.Records with loopNodes: the services at (or, unless exact, below) a name, wildcards matched. */
  records(q: Question, exact: boolean): Service[] {
    const { path, star } = namePathWithWildcard(q.lname, this.cfg.pathPrefix);
    const kvs = this.get(path, !exact);
    const segments = namePath(q.lname, this.cfg.pathPrefix).split('/');
    const out: Service[] = [];
    nodes: for (const kv of kvs) {
      if (star) {
        const keyParts = kv.key.split('/');
        for (let i = 0; i < segments.length; i++) {
          if (i > keyParts.length - 1) continue nodes;
          const n = segments[i]!;
          if (n === '*' || n === 'any') continue;
          if (keyParts[i] !== n) continue nodes;
        }
      }
      const s = decodeService(kv.key, kv.value);
      const serv: Service = {
        ...s,
        ttl: this.ttl(kv, s),
        priority: s.priority === 0 ? DEFAULT_PRIORITY : s.priority,
      };
      // shouldInclude: only TXT answers come from a value without a host.
      if ((q.qtype === Qtype.TXT && serv.text !== '') || serv.host !== '') out.push(serv);
    }
    return out;
  }

  /** Etcd.TTL: the smaller of the lease's remaining TTL (clamped) and the value's, 300 s when neither is set. */
  private ttl(kv: KvEntry, s: Service): number {
    let etcdTtl = 0;
    if (kv.lease !== '0') {
      const left = this.view.leaseTtl(kv.lease);
      if (left > 0) etcdTtl = Math.min(Math.max(left, this.cfg.minLeaseTtl), this.cfg.maxLeaseTtl);
    }
    if (etcdTtl === 0 && s.ttl === 0) return DEFAULT_TTL;
    if (etcdTtl === 0) return s.ttl;
    if (s.ttl === 0) return etcdTtl;
    return Math.min(etcdTtl, s.ttl);
  }

  /** Etcd.Services (and Reverse): the records, grouped. */
  services(q: Question, exact: boolean): readonly Service[] {
    return groupServices(this.records(q, exact));
  }

  /** checkForApex: at the zone's name, the `apex.dns` entries first (then the zone's own subtree, unless no_apex_fallback). */
  private apexOrServices(zone: string, q: Question): readonly Service[] {
    if (q.lname !== zone) return this.services(q, false);
    try {
      return this.services({ ...q, lname: joinLabels(['apex.dns', zone]) }, false);
    } catch (e) {
      if (!(e instanceof KeyNotFound) || this.cfg.noApexFallback) throw e;
    }
    return this.services(q, false);
  }

  /** plugin.A and plugin.AAAA (one function: `want` is the record type answered). */
  async address(
    client: Query,
    zone: string,
    q: Question,
    want: 'A' | 'AAAA',
    previous: readonly Answer[] = [],
  ): Promise<{ records: Answer[]; truncated: boolean }> {
    const services = this.apexOrServices(zone, q);
    const records: Answer[] = [];
    const dup = new Set<string>();
    let truncated = false;
    for (const serv of services) {
      const t = hostType(serv);
      if (t.type === 'CNAME') {
        const step = await this.followCname(client, zone, q, serv, previous, true, (host, chain) =>
          this.address(client, zone, question(host, q.qtype), want, chain),
        );
        if (step.truncated) truncated = true;
        records.push(...step.records);
        continue;
      }
      if (t.type === want && !dup.has(serv.host)) {
        dup.add(serv.host);
        records.push(rr(q.qname, want, serv.ttl, t.ip));
      }
    }
    return { records, truncated };
  }

  /** plugin.TXT. */
  async txt(
    client: Query,
    zone: string,
    q: Question,
    previous: readonly Answer[] = [],
  ): Promise<{ records: Answer[]; truncated: boolean }> {
    const services = this.services(q, false);
    const records: Answer[] = [];
    const dup = new Set<string>();
    let truncated = false;
    for (const serv of services) {
      const t = hostType(serv);
      if (t.type === 'CNAME') {
        const step = await this.followCname(client, zone, q, serv, previous, false, (host, chain) =>
          this.txt(client, zone, question(host, q.qtype), chain),
        );
        if (step.truncated) truncated = true;
        records.push(...step.records);
        continue;
      }
      if (t.type === 'TXT' && !dup.has(serv.text)) {
        dup.add(serv.text);
        records.push(rr(q.qname, 'TXT', serv.ttl, split255(serv.text)));
      }
    }
    return { records, truncated };
  }

  /**
   * One CNAME record of plugin.A/AAAA/TXT: skipped when it points at the name itself or below it
   * (a loop in SkyDNS's recursive results), when the chain is too long or repeats a target; a
   * target inside the zone is looked up again (`inZone`, whose errors drop the CNAME, as the Go
   * code ignores them); one outside it through the whole server. Only plugin.A passes an
   * upstream reply's truncation on (`upstreamTruncates`), as in backend_lookup.go.
   */
  private async followCname(
    client: Query,
    zone: string,
    q: Question,
    serv: Service,
    previous: readonly Answer[],
    upstreamTruncates: boolean,
    inZone: (host: string, chain: Answer[]) => Promise<{ records: Answer[]; truncated: boolean }>,
  ): Promise<{ records: Answer[]; truncated: boolean }> {
    const none = { records: [], truncated: false };
    const host = fqdnOf(serv.host);
    if (isSubdomain(lowerName(host), q.lname)) return none;
    const cname = rr(q.qname, 'CNAME', serv.ttl, toPacketName(host));
    if (previous.length > MAX_CNAME_CHAIN) return none;
    const target = (cname as { data?: unknown }).data;
    if (previous.some((r) => r.type === 'CNAME' && (r as { data?: unknown }).data === target)) return none;
    if (isSubdomain(lowerName(host), zone)) {
      try {
        const next = await inZone(host, [...previous, cname]);
        return { records: next.records.length > 0 ? [cname, ...next.records] : [], truncated: next.truncated };
      } catch {
        return none;
      }
    }
    const m = await this.upstream(client, host, q.qtype);
    if (!m) return none;
    const a = answersOf(m);
    return { records: [cname, ...a.answers], truncated: upstreamTruncates && a.truncated };
  }

  /** The addresses of a SRV or MX target for the additional section (outside the zone: through the server). */
  private async targetAddresses(client: Query, zone: string, target: string): Promise<Answer[]> {
    if (!isSubdomain(lowerName(target), zone)) {
      const extra: Answer[] = [];
      const a = await this.upstream(client, target, Qtype.A);
      if (a) extra.push(...answersOf(a).answers);
      const aaaa = await this.upstream(client, target, Qtype.AAAA);
      // CNAMEs seen in the A lookup are assumed to be there already.
      if (aaaa) extra.push(...answersOf(aaaa).answers.filter((r) => r.type !== 'CNAME'));
      return extra;
    }
    // Internal name: its A records (the Go code has a TODO for AAAA).
    try {
      return (await this.address(client, zone, question(target, Qtype.A), 'A')).records;
    } catch {
      return [];
    }
  }

  /** plugin.SRV. */
  async srv(client: Query, zone: string, q: Question): Promise<Found> {
    const services = this.services(q, false);
    const records: Answer[] = [];
    const extra: Answer[] = [];
    const dup = new Set<string>();
    const looked = new Set<string>();
    const w = new Map<number, number>();
    for (const s of services) {
      const weight = s.weight !== 0 ? s.weight : 100;
      w.set(s.priority, (w.get(s.priority) ?? 0) + weight);
    }
    for (const serv of services) {
      if (serv.port === -1) continue;
      let w1 = 100.0 / w.get(serv.priority)!;
      w1 *= serv.weight === 0 ? 100 : serv.weight;
      let weight = Math.floor(w1) & 0xffff;
      if (weight === 0) weight = 1;
      const t = hostType(serv);
      if (t.type === 'CNAME') {
        const target = serviceTarget(serv);
        records.push(this.srvRecord(q, serv, weight, target));
        if (looked.has(target)) continue;
        looked.add(target);
        extra.push(...(await this.targetAddresses(client, zone, target)));
      } else if (t.type === 'A' || t.type === 'AAAA') {
        const target = serviceTarget({ host: keyDomain(serv.key), targetStrip: serv.targetStrip });
        const port = serv.port & 0xffff;
        if (first(dup, `${target} ${port}`)) records.push(this.srvRecord(q, serv, weight, target));
        if (first(dup, `${target} ${serv.host}`)) extra.push(address(serv, target, t));
      }
    }
    return { records, extra, truncated: false };
  }

  private srvRecord(q: Question, s: Service, weight: number, target: string): Answer {
    return rr(q.qname, 'SRV', s.ttl, {
      priority: s.priority & 0xffff,
      weight,
      port: s.port & 0xffff,
      target: toPacketName(target),
    });
  }

  /** plugin.MX. */
  async mx(client: Query, zone: string, q: Question): Promise<Found> {
    const services = this.services(q, false);
    const records: Answer[] = [];
    const extra: Answer[] = [];
    const dup = new Set<string>();
    const looked = new Set<string>();
    for (const serv of services) {
      if (!serv.mail) continue;
      const t = hostType(serv);
      if (t.type === 'CNAME') {
        const target = serviceTarget(serv);
        records.push(
          rr(q.qname, 'MX', serv.ttl, { preference: serv.priority & 0xffff, exchange: toPacketName(target) }),
        );
        if (looked.has(target)) continue;
        looked.add(target);
        extra.push(...(await this.targetAddresses(client, zone, target)));
      } else if (t.type === 'A' || t.type === 'AAAA') {
        const host = keyDomain(serv.key);
        const target = serviceTarget({ host, targetStrip: serv.targetStrip });
        const pref = serv.priority & 0xffff;
        if (first(dup, `${target} ${pref}`))
          records.push(rr(q.qname, 'MX', serv.ttl, { preference: pref, exchange: toPacketName(target) }));
        // The address is named after the unstripped host, as the Go code does.
        if (first(dup, `${host} ${serv.host}`)) extra.push(address(serv, host, t));
      }
    }
    return { records, extra, truncated: false };
  }

  /** plugin.CNAME: the exact key's host when it is a name. */
  cname(q: Question): Answer[] {
    const services = this.services(q, true);
    const s = services[0];
    if (s && !isAddress(s.host)) return [rr(q.qname, 'CNAME', s.ttl, toPacketName(fqdnOf(s.host)))];
    return [];
  }

  /** plugin.PTR: the exact key's hosts that are names. */
  ptr(q: Question): Answer[] {
    const dup = new Set<string>();
    const out: Answer[] = [];
    for (const s of this.services(q, true)) {
      if (isAddress(s.host) || dup.has(s.host)) continue;
      dup.add(s.host);
      out.push(rr(q.qname, 'PTR', s.ttl, toPacketName(fqdnOf(s.host))));
    }
    return out;
  }

  /** plugin.NS: the addresses under `ns.dns.<zone>`, named after their keys. */
  ns(zone: string, q: Question): Found {
    const services = this.services({ ...q, lname: joinLabels(['ns.dns.', zone]) }, false);
    const records: Answer[] = [];
    const extra: Answer[] = [];
    const seen = new Set<string>();
    for (const serv of services) {
      const t = hostType(serv);
      if (t.type === 'CNAME') throw new Error(`NS record must be an IP address: ${serv.host}`);
      if (t.type !== 'A' && t.type !== 'AAAA') continue;
      const target = serviceTarget({ host: keyDomain(serv.key), targetStrip: serv.targetStrip });
      extra.push(address(serv, target, t));
      if (seen.has(target)) continue;
      seen.add(target);
      records.push(rr(q.qname, 'NS', serv.ttl, toPacketName(target)));
    }
    return { records, extra, truncated: false };
  }

  /** plugin.SOA: built, never stored; the serial is the current time. */
  soa(zone: string): Answer {
    return rr(zone, 'SOA', Math.min(SOA_MIN_TTL, 300), {
      mname: toPacketName(joinLabels(['ns.dns', zone])),
      rname: toPacketName(joinLabels(['hostmaster', zone])),
      serial: Math.floor(Date.now() / 1000) >>> 0,
      refresh: 7200,
      retry: 1800,
      expire: 86400,
      minimum: SOA_MIN_TTL,
    });
  }
}

/** isDuplicate: true the first time `k` is seen. */
function first(seen: Set<string>, k: string): boolean {
  if (seen.has(k)) return false;
  seen.add(k);
  return true;
}

export { question };
