/**
 * Domain-name helpers. Convention used throughout clusterdns: names are absolute with a trailing
 * dot (`cluster.local.`, root is `.`), and "lname" means the lower-cased form. dns-packet uses
 * names without the trailing dot; convert only at that boundary (`toPacketName`/`fromPacketName`).
 */
import { isIP } from 'node:net';

/** `example.org` → `example.org.`; `.` and `` → `.`. */
export function fqdn(name: string): string {
  if (name === '' || name === '.') return '.';
  return name.endsWith('.') ? name : `${name}.`;
}

/** dns-packet name (no trailing dot, root = '') from an absolute name. */
export function toPacketName(name: string): string {
  if (name === '.' || name === '') return '.';
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** Absolute name from a dns-packet name. */
export function fromPacketName(name: string): string {
  return fqdn(name);
}

/**
 * ASCII lower case: DNS names compare case-insensitively over ASCII letters only (RFC 4343), so
 * other letters a zone file spells (`Ä`) keep their case. Names without an upper-case ASCII letter
 * are returned as they are, without a copy (most names on the query path).
 */
export function lowerName(name: string): string {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 65 && c <= 90)
      return NON_ASCII.test(name) ? name.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : name.toLowerCase();
  }
  return name;
}

const NON_ASCII = /[^\x00-\x7f]/;

/** True when `name` equals `zone` or lies below it. Both lower-case and absolute. */
export function isSubdomain(name: string, zone: string): boolean {
  if (zone === '.') return true;
  if (name.length < zone.length) return false;
  if (name.length === zone.length) return name === zone;
  return name.endsWith(zone) && name.charCodeAt(name.length - zone.length - 1) === 46; /* '.' */
}

/** Longest zone of `zones` that contains `lname`, or undefined. */
export function matchZone(zones: readonly string[], lname: string): string | undefined {
  let best: string | undefined;
  for (const z of zones) {
    if (isSubdomain(lname, z) && (best === undefined || z.length > best.length)) best = z;
  }
  return best;
}

/** Labels of an absolute name, leftmost first (`a.b.` → ['a','b']; `.` → []). */
export function labels(name: string): string[] {
  if (name === '.' || name === '') return [];
  return (name.endsWith('.') ? name.slice(0, -1) : name).split('.');
}

/** Number of labels in an absolute name. */
export function countLabels(name: string): number {
  return labels(name).length;
}

/**
 * Is `name` (absolute) a syntactically valid domain name on the wire: labels 1..63 octets, whole
 * name at most 255 octets. Any octet is allowed in a label (as miekg/dns's IsDomainName).
 */
export function isDomainName(name: string): boolean {
  if (name === '.') return true;
  if (!name.endsWith('.')) name = `${name}.`;
  if (Buffer.byteLength(name) > 254) return false; // 255 wire octets incl. the root length byte
  const parts = name.slice(0, -1).split('.');
  for (const p of parts) {
    const len = Buffer.byteLength(p);
    if (len === 0 || len > 63) return false;
  }
  return true;
}

/** `10.0.0.1` → `1.0.0.10.in-addr.arpa.`; IPv6 → nibble form under ip6.arpa. */
export function reverseName(ip: string): string | undefined {
  const fam = isIP(ip);
  if (fam === 4) return `${ip.split('.').reverse().join('.')}.in-addr.arpa.`;
  if (fam === 6) {
    const bytes = ipv6ToBytes(ip);
    if (!bytes) return undefined;
    const nibbles: string[] = [];
    for (let i = bytes.length - 1; i >= 0; i--) {
      const b = bytes[i] ?? 0;
      nibbles.push((b & 0xf).toString(16), (b >> 4).toString(16));
    }
    return `${nibbles.join('.')}.ip6.arpa.`;
  }
  return undefined;
}

/** `1.0.0.10.in-addr.arpa.` → `10.0.0.1`; full 32-nibble ip6.arpa names → canonical IPv6. */
export function ipFromReverseName(lname: string): string | undefined {
  if (lname.endsWith('.in-addr.arpa.')) {
    const parts = lname.slice(0, -'.in-addr.arpa.'.length).split('.');
    if (parts.length !== 4) return undefined;
    for (const p of parts) if (!/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > 255) return undefined;
    return parts.reverse().join('.');
  }
  if (lname.endsWith('.ip6.arpa.')) {
    const parts = lname.slice(0, -'.ip6.arpa.'.length).split('.');
    if (parts.length !== 32) return undefined;
    const bytes = new Uint8Array(16);
    for (let i = 0; i < 32; i++) {
      const nib = parts[31 - i] ?? '';
      if (!/^[0-9a-f]$/.test(nib)) return undefined;
      const v = parseInt(nib, 16);
      const byte = i >> 1;
      bytes[byte] = (bytes[byte] ?? 0) | (i % 2 === 0 ? v << 4 : v);
    }
    return bytesToIPv6(bytes);
  }
  return undefined;
}

/** Parse an IPv6 text address into 16 bytes (accepts embedded IPv4 and `%zone`, which is dropped). */
export function ipv6ToBytes(ip: string): Uint8Array | undefined {
  const pct = ip.indexOf('%');
  if (pct >= 0) ip = ip.slice(0, pct);
  if (isIP(ip) !== 6) return undefined;
  let head = ip;
  let v4tail: number[] = [];
  const lastColon = ip.lastIndexOf(':');
  const tail = ip.slice(lastColon + 1);
  if (tail.includes('.')) {
    v4tail = tail.split('.').map(Number);
    head = `${ip.slice(0, lastColon + 1)}0:0`;
  }
  const halves = head.split('::');
  const left = halves[0] ? halves[0].split(':') : [];
  const right = halves.length > 1 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - left.length - right.length;
  const groups = [...left, ...Array<string>(halves.length > 1 ? missing : 0).fill('0'), ...right];
  if (groups.length !== 8) return undefined;
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  });
  if (v4tail.length === 4) out.set(v4tail, 12);
  return out;
}

/** RFC 5952 canonical text for 16 bytes: lower case, longest run (≥2) of zero groups compressed. */
export function bytesToIPv6(bytes: Uint8Array): string {
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0));
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  const left = hex.slice(0, bestStart).join(':');
  const right = hex.slice(bestStart + bestLen).join(':');
  return `${left}::${right}`;
}

/** Canonical text form of any IP (IPv4 unchanged, IPv6 per RFC 5952); undefined if not an IP. */
export function canonicalIP(ip: string): string | undefined {
  const fam = isIP(ip);
  if (fam === 4) return ip;
  if (fam === 6) {
    const b = ipv6ToBytes(ip);
    if (!b) return undefined;
    // IPv4-mapped addresses are kept in IPv6 form.
    return bytesToIPv6(b);
  }
  return undefined;
}

/**
 * Expand a CIDR to the reverse zones that cover it (docs/corefile.md §6.3): IPv4 rounded up to octets,
 * IPv6 to nibbles. Returns undefined when `cidr` is not a CIDR at all; throws on an invalid one.
 */
export function reverseZonesFromCidr(cidr: string): string[] | undefined {
  const slash = cidr.indexOf('/');
  if (slash < 0) return undefined;
  const addr = cidr.slice(0, slash);
  const lenText = cidr.slice(slash + 1);
  const fam = isIP(addr);
  if (fam === 0 || !/^\d{1,3}$/.test(lenText)) {
    if (addr.includes(':') || /^\d+\.\d+\.\d+\.\d+$/.test(addr)) throw new Error(`invalid CIDR ${cidr}`);
    return undefined;
  }
  const prefix = Number(lenText);
  if (fam === 4) {
    if (prefix > 32) throw new Error(`invalid CIDR ${cidr}`);
    const octets = addr.split('.').map(Number);
    const bytes = octets.map((o, i) => {
      const bitsHere = Math.max(0, Math.min(8, prefix - i * 8));
      return o & (0xff << (8 - bitsHere)) & 0xff;
    });
    const rounded = Math.ceil(prefix / 8) * 8;
    const count = 1 << (rounded - prefix);
    const nOctets = rounded / 8;
    const zones: string[] = [];
    for (let k = 0; k < count; k++) {
      const b = bytes.slice(0, nOctets);
      if (nOctets > 0) b[nOctets - 1] = (b[nOctets - 1] ?? 0) + k;
      zones.push(b.length ? `${b.reverse().join('.')}.in-addr.arpa.` : 'in-addr.arpa.');
    }
    return zones;
  }
  if (addr.startsWith(':') || /^0+:/.test(addr)) throw new Error(`invalid CIDR ${cidr}`);
  if (prefix > 128) throw new Error(`invalid CIDR ${cidr}`);
  const bytes = ipv6ToBytes(addr);
  if (!bytes) throw new Error(`invalid CIDR ${cidr}`);
  const nibbles: number[] = [];
  for (const b of bytes) nibbles.push(b >> 4, b & 0xf);
  for (let i = 0; i < 32; i++) {
    const bitsHere = Math.max(0, Math.min(4, prefix - i * 4));
    nibbles[i] = (nibbles[i] ?? 0) & (0xf << (4 - bitsHere)) & 0xf;
  }
  const rounded = Math.ceil(prefix / 4) * 4;
  const count = 1 << (rounded - prefix);
  const n = rounded / 4;
  const zones: string[] = [];
  for (let k = 0; k < count; k++) {
    const nib = nibbles.slice(0, n);
    if (n > 0) nib[n - 1] = (nib[n - 1] ?? 0) + k;
    zones.push(
      n
        ? `${nib
            .reverse()
            .map((x) => x.toString(16))
            .join('.')}.ip6.arpa.`
        : 'ip6.arpa.',
    );
  }
  return zones;
}

/**
 * Normalise a zone argument of a plugin (docs/corefile.md §10): strip `scheme://` and `:port`, expand a
 * CIDR, lower-case, make absolute. Returns [] when the argument does not normalise (it is dropped).
 */
export function normalizeZoneArg(arg: string): string[] {
  let s = arg;
  const scheme = s.indexOf('://');
  if (scheme >= 0) s = s.slice(scheme + 3);
  // A port follows the last colon only when the remainder is not an IPv6 CIDR/address.
  if (!s.includes('/') && isIP(s) !== 6) {
    const colon = s.lastIndexOf(':');
    if (colon >= 0 && /^\d+$/.test(s.slice(colon + 1))) s = s.slice(0, colon);
  } else if (s.includes('/')) {
    const slash = s.indexOf('/');
    const after = s.slice(slash);
    const colon = after.lastIndexOf(':');
    if (colon >= 0 && /^\d+$/.test(after.slice(colon + 1))) s = s.slice(0, slash + colon);
  }
  try {
    const rev = reverseZonesFromCidr(s);
    if (rev) return rev;
  } catch {
    return [];
  }
  const z = fqdn(s.toLowerCase());
  if (!isDomainName(z) || z.includes('/')) return [];
  return [z];
}

/** Normalise a list of zone arguments; duplicates removed, order kept. */
export function normalizeZoneArgs(args: readonly string[]): string[] {
  const out: string[] = [];
  for (const a of args) for (const z of normalizeZoneArg(a)) if (!out.includes(z)) out.push(z);
  return out;
}
