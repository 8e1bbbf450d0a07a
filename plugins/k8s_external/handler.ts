/**
 * The k8s_external handler (CoreDNS 1.15.0 plugin/k8s_external: external.go, apex.go,
 * msg_to_dns.go, and plugin/kubernetes/external.go for the service lookup). Queries outside the
 * zones cost one zone match and go on; inside them, the reply is built from the kubernetes plugin's
 * index (src/kubernetes/external.ts) on every query: the external zone is small and rarely asked.
 */
import { isIP } from 'node:net';
import type { Answer } from 'dns-packet';
import { Flag, Qtype, Rcode } from '../../src/dns/constants.js';
import { replyTo, setRcode, type Message } from '../../src/dns/message.js';
import { ipFromReverseName, isSubdomain, matchZone, toPacketName } from '../../src/dns/name.js';
import { fallsThrough } from '../../src/fallthrough.js';
import type { KubernetesExternal } from '../../src/kubernetes/external.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import type { ExternalConfig } from './setup.js';

export const PLUGIN = 'k8s_external';

/** msg.Service of CoreDNS: one (host, port) with the DNS name (its key) it lives at. */
interface Entry {
  /** IP address, or a hostname (a load balancer's). */
  readonly host: string;
  readonly port: number;
  /** `svc.ns.<zone>` or `ep.svc.ns.<zone>` (SRV targets). */
  readonly domain: string;
}

interface Found {
  readonly entries: Entry[];
  readonly rcode: number;
}

/** `a.b` + `zone.` (zone `.` gives `a.b.`). */
function join(rel: string, zone: string): string {
  return zone === '.' ? `${rel}.` : `${rel}.${zone}`;
}

/** Name without the zone and the dot before it ('' at the apex). */
function trimZone(lname: string, zone: string): string {
  if (lname.length === zone.length) return '';
  if (zone === '.') return lname.slice(0, -1);
  return lname.slice(0, lname.length - zone.length - 1);
}

function stripUnderscore(s: string): string {
  return s.startsWith('_') ? s.slice(1) : s;
}

function matchPortAndProtocol(port: string, pName: string, protocol: string, pProto: string): boolean {
  return (port === '' || port === pName.toLowerCase()) && (protocol === '' || protocol === pProto.toLowerCase());
}

/** msg.Service HostType: the record type a host gives (an IPv4-mapped IPv6 address is IPv4, as Go's To4). */
function hostType(host: string): { type: 'A' | 'AAAA'; ip: string } | null {
  const fam = isIP(host);
  if (fam === 4) return { type: 'A', ip: host };
  if (fam === 6) {
    const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(host);
    return m ? { type: 'A', ip: m[1]! } : { type: 'AAAA', ip: host };
  }
  return null;
}

function fqdn(n: string): string {
  return n.endsWith('.') ? n : `${n}.`;
}

export class ExternalHandler implements Handler {
  readonly name = PLUGIN;
  /** `<apex>.<zone>` per zone, lower case. */
  private readonly apexNames: string[];

  constructor(
    private readonly cfg: ExternalConfig,
    private readonly k8s: KubernetesExternal,
    private readonly next: Handler | null,
  ) {
    this.apexNames = cfg.zones.map((z) => join(cfg.apex.toLowerCase(), z));
  }

  serve(q: Query): number | Promise<number> {
    const zone = matchZone(this.cfg.zones, q.lname);
    if (zone === undefined) return nextOrFailure(PLUGIN, this.next, q);
    const zones = this.cfg.zones;
    for (let i = 0; i < zones.length; i++) {
      if (q.lname === zones[i]) return this.serveApex(q, zone);
      if (isSubdomain(q.lname, this.apexNames[i]!)) return this.serveSubApex(q, zone);
    }
    const found = this.external(q, zone);
    if (found.entries.length === 0) {
      if (found.rcode === Rcode.NXDOMAIN && fallsThrough(this.cfg.fallthrough, q.lname))
        return nextOrFailure(PLUGIN, this.next, q);
      return this.reply(q, zone, found.rcode, [], []);
    }
    switch (q.qtype) {
      case Qtype.A:
      case Qtype.AAAA:
        return this.address(q, zone, found.entries);
      case Qtype.SRV:
        return this.srv(q, zone, found.entries);
      case Qtype.PTR:
        return this.reply(q, zone, Rcode.NOERROR, this.ptr(q, found.entries), []);
      default:
        return this.reply(q, zone, Rcode.NOERROR, [], []);
    }
  }

  /** Write the reply: answers, or the zone's SOA in the authority section when there are none. */
  private reply(q: Query, zone: string, rcode: number, answers: Answer[], extra: Answer[], truncated = false): number {
    const msg: Message = replyTo(q.request, 0, true);
    setRcode(msg, rcode);
    if (truncated) msg.flags = (msg.flags ?? 0) | Flag.TC;
    msg.answers = answers;
    msg.additionals = extra;
    if (answers.length === 0) msg.authorities = [this.soa(zone)];
    q.write(msg, PLUGIN);
    return rcode;
  }

  private soa(zone: string): Answer {
    const apex = this.cfg.apex;
    return {
      name: toPacketName(zone),
      type: 'SOA',
      class: 'IN',
      ttl: this.cfg.ttl,
      data: {
        mname: toPacketName(join(`ns1.${apex}`, zone)),
        rname: toPacketName(join(`hostmaster.${apex}`, zone)),
        serial: this.k8s.serial() >>> 0,
        refresh: 7200,
        retry: 1800,
        expire: 86400,
        minimum: this.cfg.ttl,
      },
    };
  }

  /** A/AAAA records for the server's own external addresses, named `owner`. */
  private nsAddresses(owner: string, want: number): Answer[] {
    const out: Answer[] = [];
    for (const ip of this.k8s.dnsAddresses(this.cfg.headless)) {
      const t = hostType(ip);
      if (!t) continue; // a load balancer hostname is not an address record
      if (want !== 0 && (t.type === 'A' ? Qtype.A : Qtype.AAAA) !== want) continue;
      out.push({ name: toPacketName(owner), type: t.type, class: 'IN', ttl: this.cfg.ttl, data: t.ip });
    }
    return out;
  }

  /** apex.go serveApex: SOA, NS (with the name server's addresses), else NODATA. */
  private serveApex(q: Query, zone: string): number {
    if (q.qtype === Qtype.SOA) return this.reply(q, zone, Rcode.NOERROR, [this.soa(zone)], []);
    if (q.qtype === Qtype.NS) {
      const ns: Answer = {
        name: toPacketName(zone),
        type: 'NS',
        class: 'IN',
        ttl: this.cfg.ttl,
        data: toPacketName(join(`ns1.${this.cfg.apex}`, zone)),
      };
      return this.reply(q, zone, Rcode.NOERROR, [ns], this.nsAddresses(join(`ns1.${this.cfg.apex}`, q.name), 0));
    }
    return this.reply(q, zone, Rcode.NOERROR, [], []);
  }

  /** apex.go serveSubApex: `dns.<zone>` is an empty non-terminal, `ns1.dns.<zone>` the name server. */
  private serveSubApex(q: Query, zone: string): number {
    const base = trimZone(q.lname, zone);
    const labels = base === '' ? 0 : base.split('.').length;
    if (labels === 1) return this.reply(q, zone, Rcode.NOERROR, [], []);
    if (labels !== 2 || !base.startsWith('ns1.')) return this.reply(q, zone, Rcode.NXDOMAIN, [], []);
    const want = q.qtype === Qtype.A || q.qtype === Qtype.AAAA ? q.qtype : -1;
    return this.reply(q, zone, Rcode.NOERROR, want === -1 ? [] : this.nsAddresses(q.name, want), []);
  }

  /** plugin/kubernetes/external.go External: the entries a name stands for, and the rcode without any. */
  private external(q: Query, zone: string): Found {
    const k8s = this.k8s;
    if (q.qtype === Qtype.PTR) {
      const ip = ipFromReverseName(q.lname);
      if (ip !== undefined) {
        const svcs = k8s.servicesByExternalIP(ip);
        if (svcs.length === 0) return { entries: [], rcode: Rcode.NXDOMAIN };
        return {
          entries: svcs.map((s) => ({ host: `${s.name}.${s.namespace}`, port: 0, domain: '' })),
          rcode: Rcode.NOERROR,
        };
      }
    }
    const base = trimZone(q.lname, zone);
    if (base === '') return { entries: [], rcode: Rcode.SERVFAIL };
    const segs = base.split('.');
    let last = segs.length - 1;
    const namespace = segs[last]!;
    if (!k8s.namespaceExposed(namespace)) return { entries: [], rcode: Rcode.NXDOMAIN };
    last--;
    if (last < 0) return { entries: [], rcode: Rcode.NOERROR };
    const service = segs[last]!;
    last--;
    let endpoint = '';
    let port = '';
    let protocol = '';
    if (last === 0) {
      endpoint = stripUnderscore(segs[0]!);
      last--;
    } else if (last === 1) {
      protocol = stripUnderscore(segs[1]!);
      port = stripUnderscore(segs[0]!);
      last -= 2;
    }
    if (last !== -1) return { entries: [], rcode: Rcode.NXDOMAIN };

    const entries: Entry[] = [];
    let rcode: number = Rcode.NXDOMAIN;
    const svc = k8s.service(service, namespace);
    if (svc) {
      const svcDomain = join(`${svc.name}.${svc.namespace}`, zone);
      if (this.cfg.headless && svc.externalIPs.length === 0 && (svc.headless || endpoint !== '')) {
        for (const ep of k8s.endpoints(svc.name, svc.namespace)) {
          if (endpoint !== '' && endpoint !== ep.hostname.toLowerCase()) continue;
          for (const p of ep.ports) {
            if (!matchPortAndProtocol(port, p.name, protocol, p.protocol)) continue;
            rcode = Rcode.NOERROR;
            entries.push({ host: ep.address, port: p.port, domain: `${ep.hostname}.${svcDomain}` });
          }
        }
      } else {
        for (const ip of svc.externalIPs) {
          for (const p of svc.ports) {
            if (!matchPortAndProtocol(port, p.name, protocol, p.protocol)) continue;
            rcode = Rcode.NOERROR;
            entries.push({ host: ip, port: p.port, domain: svcDomain });
          }
        }
      }
    }
    if (q.qtype === Qtype.PTR) return { entries: [], rcode };
    return { entries, rcode };
  }

  /** msg_to_dns.go a/aaaa: address records, and CNAMEs to load-balancer hostnames followed upstream. */
  private address(q: Query, zone: string, entries: Entry[]): number | Promise<number> {
    for (const e of entries) if (hostType(e.host) === null) return this.addressWithLookups(q, zone, entries);
    const want = q.qtype === Qtype.A ? 'A' : 'AAAA';
    const answers: Answer[] = [];
    const dup = new Set<string>();
    for (const e of entries) {
      const t = hostType(e.host)!;
      if (t.type !== want || dup.has(e.host)) continue;
      dup.add(e.host);
      answers.push({ name: toPacketName(q.name), type: want, class: 'IN', ttl: this.cfg.ttl, data: t.ip });
    }
    return this.reply(q, zone, Rcode.NOERROR, answers, []);
  }

  /** `address` when a load-balancer hostname needs a lookup through the server. */
  private async addressWithLookups(q: Query, zone: string, entries: Entry[]): Promise<number> {
    const want = q.qtype === Qtype.A ? 'A' : 'AAAA';
    const answers: Answer[] = [];
    const dup = new Set<string>();
    let truncated = false;
    for (const e of entries) {
      const t = hostType(e.host);
      if (!t) {
        const target = fqdn(e.host);
        answers.push({
          name: toPacketName(q.name),
          type: 'CNAME',
          class: 'IN',
          ttl: this.k8s.ttl,
          data: toPacketName(target),
        });
        const m = await this.lookup(q, target, q.qtype);
        if (m) {
          answers.push(...m.answers.filter((r) => r.type !== 'OPT'));
          if (((m.flags ?? 0) & Flag.TC) !== 0) truncated = true;
        }
        continue;
      }
      if (t.type !== want || dup.has(e.host)) continue;
      dup.add(e.host);
      answers.push({ name: toPacketName(q.name), type: want, class: 'IN', ttl: this.cfg.ttl, data: t.ip });
    }
    return this.reply(q, zone, Rcode.NOERROR, answers, [], truncated);
  }

  /** msg_to_dns.go srv: one SRV per (target, port), the targets' addresses in the additional section. */
  private async srv(q: Query, zone: string, entries: Entry[]): Promise<number> {
    // Every entry has priority 0 and no weight: CoreDNS shares 100 per entry.
    let weight = Math.floor((100.0 / (100 * entries.length)) * 100);
    if (weight === 0) weight = 1;
    const answers: Answer[] = [];
    const extra: Answer[] = [];
    const dup = new Set<string>();
    const first = (k: string): boolean => {
      if (dup.has(k)) return false;
      dup.add(k);
      return true;
    };
    for (const e of entries) {
      if (e.port === -1) continue;
      const t = hostType(e.host);
      const target = t ? e.domain : fqdn(e.host);
      if (first(`${target}\n${e.port}\n`)) {
        answers.push({
          name: toPacketName(q.name),
          type: 'SRV',
          class: 'IN',
          ttl: this.k8s.ttl,
          data: { priority: 0, weight, port: e.port & 0xffff, target: toPacketName(target) },
        });
      }
      if (!first(`${target}\n0\n${t ? e.host : target}`)) continue;
      if (t) {
        extra.push({ name: toPacketName(target), type: t.type, class: 'IN', ttl: this.cfg.ttl, data: t.ip });
        continue;
      }
      for (const qt of [Qtype.A, Qtype.AAAA]) {
        const m = await this.lookup(q, target, qt);
        if (m) extra.push(...m.answers.filter((r) => r.type !== 'OPT'));
      }
    }
    return this.reply(q, zone, Rcode.NOERROR, answers, extra);
  }

  /** msg_to_dns.go ptr: `name.namespace.<first zone>`. */
  private ptr(q: Query, entries: Entry[]): Answer[] {
    const out: Answer[] = [];
    const dup = new Set<string>();
    for (const e of entries) {
      if (dup.has(e.host)) continue;
      dup.add(e.host);
      out.push({
        name: toPacketName(q.name),
        type: 'PTR',
        class: 'IN',
        ttl: this.cfg.ttl,
        data: toPacketName(join(e.host, this.cfg.zones[0]!)),
      });
    }
    return out;
  }

  private async lookup(q: Query, name: string, qtype: number): Promise<Message | null> {
    try {
      return await this.k8s.upstream(q, name, qtype);
    } catch {
      return null;
    }
  }
}
