/**
 * Record logic of the kubernetes plugin, following CoreDNS 1.14.7 (plugin/kubernetes/{handler,
 * kubernetes,parse,reverse,ns}.go and plugin/backend_lookup.go) as specified by
 * docs/records.md. Pure and synchronous: it reads the Store through a `View` that records
 * which objects an answer depended on, so the answer cache can drop exactly the affected answers
 * when those objects change. Upstream lookups for ExternalName targets outside the zone are left as
 * `External` markers for the handler to fill in.
 */
import { isIP } from 'node:net';
import type { Answer } from 'dns-packet';
import { Qtype } from '../../src/dns/constants.js';
import { ipFromReverseName, isSubdomain, toPacketName } from '../../src/dns/name.js';
import { addressAt, addressCount, addressIs } from './addresses.js';
import { changeKey, type ChangeKey } from './changekeys.js';
import { serviceKey, type IndexReader } from './store.js';
import type { ImportRec, McSliceRec, PodMode, PortRec, ServiceRec, SliceRec } from './types.js';

export interface ResolveConfig {
  /** Plugin zones, lower-case absolute. */
  readonly zones: readonly string[];
  /** First non-reverse zone (PTR targets). */
  readonly primaryZone: string;
  readonly ttl: number;
  readonly podMode: PodMode;
  readonly endpointPodNames: boolean;
  /** `namespaces` option, or null for all. */
  readonly namespaces: ReadonlySet<string> | null;
  readonly ignoreEmptyService: boolean;
  /** `zonal`: topology-zone names for headless services (§8.3). */
  readonly zonal?: boolean;
  /** The server's own non-loopback IPs (NS records, §3.2). */
  readonly localIPs: readonly string[];
  /** `multicluster` zones (§8.4), lower-case absolute; each is one of `zones`. */
  readonly multiclusterZones?: readonly string[];
}

/** Index access that records the change keys an answer read (changekeys.ts). */
export class View {
  constructor(
    readonly index: IndexReader,
    readonly deps: Set<ChangeKey> | null,
  ) {}

  private dep(k: ChangeKey): void {
    this.deps?.add(k);
  }

  service(name: string, ns: string): ServiceRec | undefined {
    const k = serviceKey(name, ns);
    this.dep(changeKey.service(k));
    return this.index.serviceByKey(k);
  }

  slicesOf(name: string, ns: string): SliceRec[] {
    const k = serviceKey(name, ns);
    this.dep(changeKey.slices(k));
    return this.index.slicesOfService(k);
  }

  namespaceExists(ns: string): boolean {
    this.dep(changeKey.namespace(ns));
    return this.index.hasNamespace(ns);
  }

  servicesByIP(ip: string): ServiceRec[] {
    this.dep(changeKey.address(ip));
    return this.index.servicesWithIP(ip);
  }

  slicesByAddr(ip: string): SliceRec[] {
    this.dep(changeKey.address(ip));
    return this.index.slicesWithAddress(ip);
  }

  serviceImport(name: string, ns: string): ImportRec | undefined {
    const k = serviceKey(name, ns);
    this.dep(changeKey.import(k));
    return this.index.importByKey(k);
  }

  mcSlicesOf(name: string, ns: string): McSliceRec[] {
    const k = serviceKey(name, ns);
    this.dep(changeKey.mcslices(k));
    return this.index.mcSlicesOfImport(k);
  }

  podNamespacesByIP(ip: string): string[] {
    this.dep(changeKey.pod(ip));
    return this.index.podsWithIP(ip).map((p) => p.namespace);
  }
}

/** A CNAME to a target outside the zone, to be completed by an upstream lookup (§2.6). */
export interface External {
  readonly kind: 'external';
  readonly cname: Answer;
  readonly target: string;
  readonly qtype: number;
}

export type Item = Answer | External;

export interface Outcome {
  /** Name error (NXDOMAIN before fallthrough / sync checks). */
  readonly nameError: boolean;
  readonly answers: Item[];
  readonly extra: Answer[];
}

/** msg.Service of CoreDNS: one (host, port) entry with the DNS name it belongs to. */
interface Entry {
  readonly host: string;
  readonly port: number;
  /** Absolute name the entry lives at (SRV target / PTR target). */
  readonly target: string;
}

interface Lookup {
  readonly entries: Entry[];
  readonly err: boolean;
  /** The name exists even without entries (a `zonal` pin with no endpoint in the zone). */
  readonly exists?: boolean;
}

const OK_EMPTY: Lookup = { entries: [], err: false };
const NX: Lookup = { entries: [], err: true };

export interface Parsed {
  podOrSvc: string;
  namespace: string;
  service: string;
  endpoint: string;
  /** The cluster ID of a multicluster endpoint name (`<endpoint>.<cluster>.<svc>…`, §8.4), else ''. */
  cluster: string;
  port: string;
  protocol: string;
  /** `zonal` names: the topology zone and the directive (`pin`/`prefer`), else ''. */
  topoZone: string;
  zoneMode: '' | 'pin' | 'prefer';
}

/** `a` under `zone` (both absolute; `zone` may be `.`). */
export function join(rel: string, zone: string): string {
  return zone === '.' ? `${rel}.` : `${rel}.${zone}`;
}

/** An endpoint named by its address: `10-0-0-1`, `fd00--1` (`::` ends in `-0`). */
export function addressLabel(addr: string): string {
  if (addr.includes('.')) return addr.replaceAll('.', '-');
  const h = addr.replaceAll(':', '-');
  return h.endsWith('-') ? `${h}0` : h;
}

/** The part of `lname` left of `zone`, without the separating dot ('' at the apex). */
export function baseOf(lname: string, zone: string): string {
  if (lname.length === zone.length) return '';
  if (zone === '.') return lname.slice(0, -1);
  return lname.slice(0, lname.length - zone.length - 1);
}

function stripUnderscore(s: string): string {
  return s.startsWith('_') ? s.slice(1) : s;
}

/**
 * parse.go `parseRequest`: null = errInvalidRequest. In a multicluster zone two labels left of the
 * service are `<endpoint>.<cluster>` unless either starts with `_`, and zonal names are not defined.
 */
export function parse(base: string, zonal: boolean, multicluster = false): Parsed | null {
  const r: Parsed = {
    podOrSvc: '',
    namespace: '',
    service: '',
    endpoint: '',
    cluster: '',
    port: '',
    protocol: '',
    topoZone: '',
    zoneMode: '',
  };
  if (base === '' || base === 'svc' || base === 'pod') return r;
  const segs = base.split('.');
  let last = segs.length - 1;
  r.podOrSvc = segs[last]!;
  if (r.podOrSvc !== 'pod' && r.podOrSvc !== 'svc') return null;
  if (--last < 0) return r;
  r.namespace = segs[last]!;
  if (--last < 0) return r;
  r.service = segs[last]!;
  if (--last < 0) return r;
  if (last === 0) r.endpoint = segs[0]!;
  else if (last === 1) {
    if (!multicluster || segs[1]!.startsWith('_') || segs[0]!.startsWith('_')) {
      r.protocol = stripUnderscore(segs[1]!);
      r.port = stripUnderscore(segs[0]!);
    } else {
      r.cluster = segs[1]!;
      r.endpoint = segs[0]!;
    }
  } else if (
    zonal &&
    !multicluster &&
    segs[last] === '_zone' &&
    (segs[last - 1] === 'pin' || segs[last - 1] === 'prefer') &&
    r.podOrSvc === 'svc'
  ) {
    r.zoneMode = segs[last - 1] as 'pin' | 'prefer';
    r.topoZone = segs.slice(0, last - 1).join('.');
  } else return null;
  return r;
}

function matchPortAndProtocol(aPort: string, b: PortRec, aProto: string): boolean {
  return (aPort === '' || aPort === b.name.toLowerCase()) && (aProto === '' || aProto === b.protocol.toLowerCase());
}

const NO_PORTS: readonly PortRec[] = [{ name: '', port: -1, protocol: '' }];

function isReverseName(lname: string): boolean {
  return (
    lname.endsWith('.in-addr.arpa.') ||
    lname.endsWith('.ip6.arpa.') ||
    lname === 'in-addr.arpa.' ||
    lname === 'ip6.arpa.'
  );
}

export class Resolver {
  constructor(readonly cfg: ResolveConfig) {}

  /** The endpoint label of entry `i` of a slice: hostname, pod name (`endpoint_pod_names`) or dashed address. */
  endpointName(s: SliceRec, i: number): string {
    return this.endpointOwnName(s, i) ?? addressLabel(addressAt(s.addresses, i));
  }

  /**
   * The endpoint's own name: its hostname, or with `endpoint_pod_names` its pod's name; null when
   * it is named by its address ({@link addressLabel}).
   */
  endpointOwnName(s: SliceRec, i: number): string | null {
    const hostname = s.hostnames?.[i];
    if (hostname) return hostname;
    const podName = this.cfg.endpointPodNames ? s.podNames?.[i] : undefined;
    if (podName && podName.length < 64) return podName;
    return null;
  }

  private exposed(v: View, ns: string): boolean {
    if (this.cfg.namespaces && !this.cfg.namespaces.has(ns)) return false;
    return v.namespaceExists(ns);
  }

  /** `zone` (one of the plugin's zones) is a multicluster zone or inside one (CoreDNS's Zones.Contains). */
  isMulticluster(zone: string): boolean {
    const mc = this.cfg.multiclusterZones;
    return mc !== undefined && mc.length > 0 && mc.some((z) => isSubdomain(zone, z));
  }

  /** kubernetes.go `Records`. */
  records(v: View, lname: string, zone: string, zoneText: string): Lookup {
    const multicluster = this.isMulticluster(zone);
    const r = parse(baseOf(lname, zone), this.cfg.zonal === true, multicluster);
    if (!r) return NX;
    if (r.podOrSvc === '') return OK_EMPTY;
    if (isReverseName(lname)) return NX;
    if (!this.exposed(v, r.namespace)) return NX;
    if (r.podOrSvc === 'pod') return this.findPods(v, r, zoneText);
    return multicluster ? this.findImports(v, r, zoneText) : this.findServices(v, r, zoneText);
  }

  /**
   * kubernetes.go `findMultiClusterServices` (§8.4): a ClusterSetIP import answers its IPs, a
   * headless one (and an endpoint name under either) the ready endpoints of its multicluster
   * EndpointSlices, named `<endpoint>.<cluster>.<svc>.<ns>.svc.<zone>`.
   */
  private findImports(v: View, r: Parsed, zoneText: string): Lookup {
    if (r.service === '') return OK_EMPTY;
    const imp = v.serviceImport(r.service, r.namespace);
    if (!imp) return NX;
    const headless = imp.type === 'Headless';
    let slices: McSliceRec[] | null = null;
    if (this.cfg.ignoreEmptyService && !headless) {
      slices = v.mcSlicesOf(imp.name, imp.namespace);
      if (!slices.some((s) => addressCount(s.addresses) > 0)) return NX;
    }
    const entries: Entry[] = [];
    let found = false;
    if (headless || r.endpoint !== '') {
      slices ??= v.mcSlicesOf(imp.name, imp.namespace);
      for (const s of slices) {
        const ports = s.ports.length ? s.ports : NO_PORTS;
        if (r.endpoint !== '' && r.cluster !== s.clusterId.toLowerCase()) continue;
        for (let i = 0; i < addressCount(s.addresses); i++) {
          const epName = this.endpointName(s, i);
          if (r.endpoint !== '' && r.endpoint !== epName.toLowerCase()) continue;
          const target = join(`${epName}.${s.clusterId}.${imp.name}.${imp.namespace}.svc`, zoneText);
          for (const p of ports) {
            if (!matchPortAndProtocol(r.port, p, r.protocol)) continue;
            found = true;
            entries.push({ host: addressAt(s.addresses, i), port: p.port, target });
          }
        }
      }
      return found ? { entries, err: false } : NX;
    }
    const svcName = join(`${imp.name}.${imp.namespace}.svc`, zoneText);
    for (const p of imp.ports) {
      if (!matchPortAndProtocol(r.port, p, r.protocol)) continue;
      found = true;
      for (const ip of imp.ips) entries.push({ host: ip, port: p.port, target: svcName });
    }
    return found ? { entries, err: false } : NX;
  }

  private findPods(v: View, r: Parsed, zoneText: string): Lookup {
    if (this.cfg.podMode === 'disabled') return NX;
    const podname = r.service;
    if (podname === '') return OK_EMPTY;
    const ip =
      podname.split('-').length - 1 === 3 && !podname.includes('--')
        ? podname.replaceAll('-', '.')
        : podname.replaceAll('-', ':');
    const target = join(`${podname}.${r.namespace}.pod`, zoneText);
    if (this.cfg.podMode === 'insecure') {
      if (isIP(ip) === 0) return NX;
      return { entries: [{ host: ip, port: 0, target }], err: false };
    }
    const entries: Entry[] = [];
    for (const ns of v.podNamespacesByIP(ip)) if (ns === r.namespace) entries.push({ host: ip, port: 0, target });
    return entries.length ? { entries, err: false } : NX;
  }

  private findServices(v: View, r: Parsed, zoneText: string): Lookup {
    if (r.service === '') return OK_EMPTY;
    const svc = v.service(r.service, r.namespace);
    if (!svc) return NX;
    const isExt = svc.type === 'ExternalName';
    let slices: SliceRec[] | null = null;
    if (this.cfg.ignoreEmptyService && !isExt && !svc.headless) {
      slices = v.slicesOf(svc.name, svc.namespace);
      if (!slices.some((s) => addressCount(s.addresses) > 0)) return NX;
    }
    const svcName = join(`${svc.name}.${svc.namespace}.svc`, zoneText);
    if (r.zoneMode !== '') return this.findZonal(v, r, svc, zoneText);
    if (isExt) {
      if (r.endpoint !== '' || r.port !== '' || r.protocol !== '') return NX;
      if (isIP(svc.externalName) !== 0) return NX;
      return { entries: [{ host: svc.externalName, port: 0, target: svcName }], err: false };
    }
    const entries: Entry[] = [];
    let found = false;
    if (svc.headless || r.endpoint !== '') {
      slices ??= v.slicesOf(svc.name, svc.namespace);
      for (const s of slices) {
        const ports = s.ports.length ? s.ports : NO_PORTS;
        for (let i = 0; i < addressCount(s.addresses); i++) {
          const addr = addressAt(s.addresses, i);
          const epName = this.endpointName(s, i);
          if (r.endpoint !== '' && r.endpoint !== epName.toLowerCase()) continue;
          for (const p of ports) {
            if (!matchPortAndProtocol(r.port, p, r.protocol)) continue;
            found = true;
            entries.push({
              host: addr,
              port: p.port,
              target: join(`${epName}.${svc.name}.${svc.namespace}.svc`, zoneText),
            });
          }
        }
      }
      return found ? { entries, err: false } : NX;
    }
    for (const p of svc.ports) {
      if (!matchPortAndProtocol(r.port, p, r.protocol)) continue;
      found = true;
      for (const ip of svc.clusterIPs) entries.push({ host: ip, port: p.port, target: svcName });
    }
    return found ? { entries, err: false } : NX;
  }

  /** `<zone>.pin._zone.<svc>…` / `<zone>.prefer._zone.<svc>…` of a headless service (§8.3). */
  private findZonal(v: View, r: Parsed, svc: ServiceRec, zoneText: string): Lookup {
    if (!svc.headless || svc.type === 'ExternalName') return NX;
    const all: Entry[] = [];
    const inZone: Entry[] = [];
    for (const s of v.slicesOf(svc.name, svc.namespace)) {
      const ports = s.ports.length ? s.ports : NO_PORTS;
      for (let i = 0; i < addressCount(s.addresses); i++) {
        const local = (s.zones?.[i] ?? '').toLowerCase() === r.topoZone;
        const target = join(`${this.endpointName(s, i)}.${svc.name}.${svc.namespace}.svc`, zoneText);
        for (const p of ports) {
          const entry = { host: addressAt(s.addresses, i), port: p.port, target };
          all.push(entry);
          if (local) inZone.push(entry);
        }
      }
    }
    const entries = r.zoneMode === 'pin' || inZone.length > 0 ? inZone : all;
    return { entries, err: false, exists: true };
  }

  /** The server's own names and addresses (ns.go `nsAddrs`). */
  nsAddrs(v: View, zoneText: string): { name: string; ip: string }[] {
    const out: { name: string; ip: string }[] = [];
    let found = false;
    for (const local of this.cfg.localIPs) {
      for (const slice of v.slicesByAddr(local)) {
        const svc = v.service(slice.service, slice.namespace);
        if (!svc) continue;
        if (svc.headless) {
          for (let i = 0; i < addressCount(slice.addresses); i++) {
            out.push({
              name: join(`${this.endpointName(slice, i)}.${svc.name}.${svc.namespace}.svc`, zoneText),
              ip: addressAt(slice.addresses, i),
            });
          }
          found = true;
          continue;
        }
        for (const ip of svc.clusterIPs) out.push({ name: join(`${svc.name}.${svc.namespace}.svc`, zoneText), ip });
        found = true;
      }
    }
    if (!found) for (const ip of this.cfg.localIPs) out.push({ name: join('ns.dns', zoneText), ip });
    return out;
  }

  /** kubernetes.go `Services` for qtypes other than TXT. */
  services(v: View, lname: string, zone: string, zoneText: string, qtype: number): Lookup {
    if (lname === join('ns.dns', zone)) {
      const entries: Entry[] = [];
      for (const a of this.nsAddrs(v, zoneText)) {
        const fam = isIP(a.ip);
        if ((fam === 4 && qtype === Qtype.A) || (fam === 6 && qtype === Qtype.AAAA))
          entries.push({ host: a.ip, port: 0, target: a.name });
      }
      return { entries, err: false };
    }
    const s = this.records(v, lname, zone, zoneText);
    if (qtype !== Qtype.SRV || s.err) return s;
    return { entries: s.entries.filter((e) => isIP(e.host) !== 0), err: false };
  }

  soa(zoneText: string, serial: number): Answer {
    return {
      name: toPacketName(zoneText),
      type: 'SOA',
      class: 'IN',
      ttl: Math.min(this.cfg.ttl, 300),
      data: {
        mname: toPacketName(join('ns.dns', zoneText)),
        rname: toPacketName(join('hostmaster', zoneText)),
        serial,
        refresh: 7200,
        retry: 1800,
        expire: 86400,
        minimum: this.cfg.ttl,
      },
    };
  }

  /**
   * Resolve one question (handler.go `ServeDNS` minus fallthrough/sync handling). `qname` is the
   * owner to use (question as spelled or lower-cased), `zoneText` the zone as it should appear in
   * generated names.
   */
  resolve(
    v: View,
    qname: string,
    lname: string,
    qtype: number,
    zone: string,
    zoneText: string,
    serial: number,
  ): Outcome {
    switch (qtype) {
      case Qtype.A:
      case Qtype.AAAA: {
        const a = this.address(v, qname, lname, qtype, zone, zoneText, [], false);
        return { nameError: a.err, answers: a.records, extra: [] };
      }
      case Qtype.TXT:
        return this.txt(v, qname, lname, zone, zoneText);
      case Qtype.CNAME: {
        const s = this.services(v, lname, zone, zoneText, qtype);
        if (s.err) return { nameError: true, answers: [], extra: [] };
        const first = s.entries[0];
        const answers: Item[] = first && isIP(first.host) === 0 ? [this.cname(qname, first.host)] : [];
        return { nameError: false, answers, extra: [] };
      }
      case Qtype.PTR:
        return this.ptr(v, qname, lname, zone, zoneText);
      case Qtype.MX: {
        const s = this.services(v, lname, zone, zoneText, qtype);
        return { nameError: s.err, answers: [], extra: [] };
      }
      case Qtype.SRV:
        return this.srv(v, qname, lname, zone, zoneText);
      case Qtype.SOA:
        return { nameError: false, answers: lname === zone ? [this.soa(zoneText, serial)] : [], extra: [] };
      case Qtype.NS:
        if (lname === zone) return this.ns(v, zoneText);
        return this.existence(v, qname, lname, zone, zoneText);
      default:
        return this.existence(v, qname, lname, zone, zoneText);
    }
  }

  /** The "fake A lookup" deciding NODATA vs NXDOMAIN for other qtypes (§6.2). */
  private existence(v: View, qname: string, lname: string, zone: string, zoneText: string): Outcome {
    const a = this.address(v, qname, lname, Qtype.A, zone, zoneText, [], true);
    return { nameError: a.err, answers: [], extra: [] };
  }

  private cname(owner: string, target: string): Answer {
    const t = target.endsWith('.') ? target : `${target}.`;
    return { name: toPacketName(owner), type: 'CNAME', class: 'IN', ttl: this.cfg.ttl, data: toPacketName(t) };
  }

  /** backend_lookup.go `A`/`AAAA`. */
  private address(
    v: View,
    qname: string,
    lname: string,
    qtype: number,
    zone: string,
    zoneText: string,
    prev: Answer[],
    existenceOnly: boolean,
  ): { records: Item[]; err: boolean } {
    const s = this.services(v, lname, zone, zoneText, qtype);
    if (s.err) return { records: [], err: true };
    if (existenceOnly) return { records: [], err: false };
    const records: Item[] = [];
    const dup = new Set<string>();
    const want = qtype === Qtype.A ? 4 : 6;
    for (const e of s.entries) {
      const fam = isIP(e.host);
      if (fam === 0) {
        const target = e.host.endsWith('.') ? e.host : `${e.host}.`;
        const tl = target.toLowerCase();
        if (isSubdomain(tl, lname)) continue; // x CNAME x (or below) is a loop
        if (prev.length > 7) continue;
        const rec = this.cname(qname, target);
        if (
          prev.some(
            (p) =>
              p.type === 'CNAME' &&
              p.name.toLowerCase() === rec.name.toLowerCase() &&
              String((p as { data: unknown }).data).toLowerCase() ===
                String((rec as { data: unknown }).data).toLowerCase(),
          )
        )
          continue;
        if (isSubdomain(tl, zone)) {
          const next = this.address(v, target, tl, qtype, zone, zoneText, [...prev, rec], false);
          if (!next.err && next.records.length > 0) records.push(rec, ...next.records);
          continue;
        }
        records.push({ kind: 'external', cname: rec, target, qtype });
        continue;
      }
      if (fam !== want || dup.has(e.host)) continue;
      dup.add(e.host);
      records.push({
        name: toPacketName(qname),
        type: want === 4 ? 'A' : 'AAAA',
        class: 'IN',
        ttl: this.cfg.ttl,
        data: e.host,
      });
    }
    return { records, err: false };
  }

  private txt(v: View, qname: string, lname: string, zone: string, zoneText: string): Outcome {
    if (baseOf(lname, zone) === 'dns-version') {
      return {
        nameError: false,
        answers: [{ name: toPacketName(qname), type: 'TXT', class: 'IN', ttl: 28800, data: ['1.1.0'] }],
        extra: [],
      };
    }
    const s = this.records(v, lname, zone, zoneText);
    return { nameError: s.entries.length === 0 && s.exists !== true, answers: [], extra: [] };
  }

  private srv(v: View, qname: string, lname: string, zone: string, zoneText: string): Outcome {
    const s = this.services(v, lname, zone, zoneText, Qtype.SRV);
    if (s.err) return { nameError: true, answers: [], extra: [] };
    const n = s.entries.length;
    let weight = Math.floor((100 / (100 * n)) * 100);
    if (weight === 0) weight = 1;
    const answers: Answer[] = [];
    const extra: Answer[] = [];
    const dup = new Set<string>();
    for (const e of s.entries) {
      if (e.port === -1) continue;
      const fam = isIP(e.host);
      const k1 = `${e.target.toLowerCase()}|${e.port}`;
      if (!dup.has(k1)) {
        dup.add(k1);
        answers.push({
          name: toPacketName(qname),
          type: 'SRV',
          class: 'IN',
          ttl: this.cfg.ttl,
          data: { priority: 0, weight, port: e.port, target: toPacketName(e.target) },
        });
      }
      const k2 = `${e.target.toLowerCase()}|${e.host}|addr`;
      if (!dup.has(k2)) {
        dup.add(k2);
        extra.push({
          name: toPacketName(e.target),
          type: fam === 4 ? 'A' : 'AAAA',
          class: 'IN',
          ttl: this.cfg.ttl,
          data: e.host,
        });
      }
    }
    return { nameError: false, answers, extra };
  }

  private ptr(v: View, qname: string, lname: string, zone: string, zoneText: string): Outcome {
    const ip = ipFromReverseName(lname);
    if (ip === undefined) {
      const s = this.records(v, lname, zone, zoneText);
      return { nameError: s.err, answers: [], extra: [] };
    }
    const targets: string[] = [];
    const filter = this.cfg.namespaces;
    for (const svc of v.servicesByIP(ip)) {
      if (filter && !this.exposed(v, svc.namespace)) continue;
      targets.push(join(`${svc.name}.${svc.namespace}.svc`, this.cfg.primaryZone));
      break;
    }
    if (targets.length === 0) {
      for (const slice of v.slicesByAddr(ip)) {
        if (slice.service === '') continue;
        if (filter && !this.exposed(v, slice.namespace)) continue;
        for (let i = 0; i < addressCount(slice.addresses); i++) {
          if (!addressIs(slice.addresses, i, ip)) continue;
          const t = join(
            `${this.endpointName(slice, i)}.${slice.service}.${slice.namespace}.svc`,
            this.cfg.primaryZone,
          );
          if (!targets.includes(t)) targets.push(t);
        }
      }
    }
    if (targets.length === 0) return { nameError: true, answers: [], extra: [] };
    return {
      nameError: false,
      answers: targets.map((t) => ({
        name: toPacketName(qname),
        type: 'PTR',
        class: 'IN',
        ttl: this.cfg.ttl,
        data: toPacketName(t),
      })),
      extra: [],
    };
  }

  private ns(v: View, zoneText: string): Outcome {
    const answers: Answer[] = [];
    const extra: Answer[] = [];
    const names = new Set<string>();
    const seen = new Set<string>();
    for (const a of this.nsAddrs(v, zoneText)) {
      const ln = a.name.toLowerCase();
      if (!names.has(ln)) {
        names.add(ln);
        answers.push({
          name: toPacketName(zoneText),
          type: 'NS',
          class: 'IN',
          ttl: this.cfg.ttl,
          data: toPacketName(a.name),
        });
      }
      const fam = isIP(a.ip);
      const k = `${ln}|${fam}|${a.ip}`;
      if (seen.has(k)) continue;
      seen.add(k);
      extra.push({
        name: toPacketName(a.name),
        type: fam === 4 ? 'A' : 'AAAA',
        class: 'IN',
        ttl: this.cfg.ttl,
        data: a.ip,
      });
    }
    return { nameError: false, answers, extra };
  }
}
