/**
 * hosts-format parsing and the lookup maps (docs/plugins.md, hosts): names → addresses per family,
 * wildcard names (`*.example.com`, exactly one extra label), and address → names for PTR.
 */
import { isIP } from 'node:net';
import { canonicalIP, fqdn, isDomainName, matchZone } from '../../src/dns/name.js';

export class HostsMap {
  readonly name4 = new Map<string, string[]>();
  readonly name6 = new Map<string, string[]>();
  /** Canonical address → names (no wildcards). */
  readonly addr = new Map<string, string[]>();

  /** Addresses in the map (what `coredns_hosts_entries` counts). */
  get size(): number {
    let n = 0;
    for (const v of this.name4.values()) n += v.length;
    for (const v of this.name6.values()) n += v.length;
    return n;
  }
}

/** An address as hosts files write it: zone stripped, IPv4-mapped IPv6 → IPv4. */
export function parseHostsIP(text: string): { ip: string; family: 4 | 6 } | undefined {
  const pct = text.indexOf('%');
  const s = pct >= 0 ? text.slice(0, pct) : text;
  const fam = isIP(s);
  if (fam === 4) return { ip: s, family: 4 };
  if (fam !== 6) return undefined;
  const c = canonicalIP(s)!;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(c) ?? /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(c);
  if (mapped) {
    if (mapped.length === 2) return { ip: mapped[1]!, family: 4 };
    const hi = parseInt(mapped[1]!, 16);
    const lo = parseInt(mapped[2]!, 16);
    return { ip: `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`, family: 4 };
  }
  return { ip: c, family: 6 };
}

/** Parse hosts-format text into `map`, keeping only names inside `zones`. */
export function parseHosts(
  text: string,
  zones: readonly string[],
  autoReverse: boolean,
  map = new HostsMap(),
): HostsMap {
  for (const raw of text.split('\n')) {
    const hash = raw.indexOf('#');
    const line = hash >= 0 ? raw.slice(0, hash) : raw;
    const f = line.trim().split(/\s+/);
    if (f.length < 2 || f[0] === '') continue;
    const addr = parseHostsIP(f[0]!);
    if (!addr) continue;
    for (let i = 1; i < f.length; i++) {
      const name = fqdn(f[i]!.toLowerCase());
      if (!isDomainName(name) || matchZone(zones, name) === undefined) continue;
      const m = addr.family === 4 ? map.name4 : map.name6;
      const list = m.get(name);
      if (list) list.push(addr.ip);
      else m.set(name, [addr.ip]);
      if (!autoReverse || name.startsWith('*.')) continue;
      const names = map.addr.get(addr.ip);
      if (names) names.push(name);
      else map.addr.set(addr.ip, [name]);
    }
  }
  return map;
}

/** Addresses of `lname` in `m` (exact first; else a `*.parent` wildcard one label up). */
export function lookupHost(m: Map<string, string[]>, lname: string, exactOther: Map<string, string[]>): string[] {
  const exact = m.get(lname);
  if (exact) return exact;
  if (exactOther.has(lname)) return []; // the name exists exactly (other family): wildcards do not apply
  const dot = lname.indexOf('.');
  if (dot < 0 || dot === lname.length - 1) return [];
  return m.get(`*.${lname.slice(dot + 1)}`) ?? [];
}
