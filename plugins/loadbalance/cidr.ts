/** CIDR membership for `prefer` (IPv4 and IPv6, byte-wise). */
import { isIP } from 'node:net';
import { ipv6ToBytes } from '../../src/dns/name.js';

export interface Cidr {
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

export function ipBytes(ip: string): Uint8Array | undefined {
  const fam = isIP(ip);
  if (fam === 4) return Uint8Array.from(ip.split('.').map(Number));
  if (fam === 6) return ipv6ToBytes(ip);
  return undefined;
}

/** `10.0.0.0/8`, `2001:db8::/32`, or a bare address (a host prefix). */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const addr = slash >= 0 ? text.slice(0, slash) : text;
  const bytes = ipBytes(addr);
  if (!bytes) return undefined;
  const max = bytes.length * 8;
  if (slash < 0) return { bytes, prefix: max };
  const p = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(p) || Number(p) > max) return undefined;
  return { bytes, prefix: Number(p) };
}

/** Is the address in `buf[off..off+len)` (4 or 16 bytes) inside `c`? */
export function contains(c: Cidr, addr: Uint8Array): boolean {
  if (addr.length !== c.bytes.length) return false;
  let bits = c.prefix;
  for (let i = 0; i < addr.length && bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((addr[i]! & mask) !== (c.bytes[i]! & mask)) return false;
  }
  return true;
}
