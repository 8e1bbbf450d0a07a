/** Parsing `siit { ipv6_prefix IPV6PREFIX; eam IPV4 IPV6 }` with CoreDNS 1.15.0's checks and wording. */
import { isIP } from 'node:net';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, option, str } from '../../src/corefile/options.js';
import { BareSetupError, type ConfigError } from '../../src/corefile/types.js';
import { bytesToIPv6, ipv6ToBytes } from '../../src/dns/name.js';

export const SIIT_OPTIONS = directive('siit', {
  args: { max: 0 },
  options: [
    option('ipv6_prefix', {
      args: [str('IPV6PREFIX')],
      summary: 'the RFC 6052 prefix of translatable addresses (default 64:ff9b::/96)',
    }),
    option('eam', { args: [str('IPV4'), str('IPV6')], repeat: 'all', summary: 'an explicit IPv6 to IPv4 mapping' }),
  ],
});

export interface SiitConfig {
  /** 16 bytes, the bits after `length` zero. */
  readonly prefix: Uint8Array;
  readonly length: number;
  /** Explicit address mappings (RFC 7757): canonical IPv6 text → IPv4 text. */
  readonly eam: ReadonlyMap<string, string>;
}

const LENGTHS = [32, 40, 48, 56, 64, 96];

/** Go's ParseIP: an IPv4 address for a dotted quad or an IPv4-mapped IPv6 address (To4), else IPv6 bytes. */
function parseIP(text: string): { v4: string | null; v6: Uint8Array | null } | null {
  if (isIP(text) === 4) return { v4: text, v6: null };
  const b = text.includes('%') ? undefined : ipv6ToBytes(text);
  if (b === undefined) return null;
  const mapped = b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;
  return mapped ? { v4: `${b[12]}.${b[13]}.${b[14]}.${b[15]}`, v6: null } : { v4: null, v6: b };
}

/** The text of an IPv4 network `addr/n` after masking, as Go prints an *IPNet. */
function maskedV4(addr: string, n: number): string {
  return `${addr
    .split('.')
    .map((o, i) => Number(o) & ((0xff << Math.max(0, Math.min(8, 8 * (i + 1) - n))) & 0xff))
    .join('.')}/${n}`;
}

/** Go's net.ParseCIDR, then CoreDNS's RFC 6052 checks (siit's parseIpv6Prefix). */
export function parseIpv6Prefix(text: string, d: Dispenser): { prefix: Uint8Array; length: number } {
  const bare = (msg: string): ConfigError => new BareSetupError(msg, d.file(), d.line(), 'siit');
  const slash = text.indexOf('/');
  const addr = slash >= 0 ? text.slice(0, slash) : '';
  const bits = slash >= 0 ? text.slice(slash + 1) : '';
  const fam = isIP(addr);
  const max = fam === 4 ? 32 : 128;
  if (fam === 0 || addr.includes('%') || !/^\d{1,3}$/.test(bits) || Number(bits) > max)
    throw bare(`invalid CIDR address: ${text}`);
  const n = Number(bits);
  if (fam === 4) throw d.err(`invalid netmask 32 IPv6 address: ${JSON.stringify(maskedV4(addr, n))}`);
  const bytes = ipv6ToBytes(addr)!;
  const masked = new Uint8Array(16);
  for (let i = 0; i < 16; i++) {
    const keep = Math.max(0, Math.min(8, n - 8 * i));
    masked[i] = bytes[i]! & ((0xff << (8 - keep)) & 0xff);
  }
  const shown = JSON.stringify(`${bytesToIPv6(masked)}/${n}`);
  if (!LENGTHS.includes(n)) throw d.err(`invalid prefix length ${shown}: must be one of /32, /40, /48, /56, /64, /96`);
  // RFC 6052 §2.2: the "u" octet (byte 8) is reserved and must be zero.
  if (masked[8] !== 0) throw d.err(`invalid prefix ${shown}: reserved octet (byte 8) must be zero`);
  return { prefix: masked, length: n };
}

/** `eam IPV4 IPV6`: CoreDNS's checks, which quote Go's nil IP as "<nil>" when an address does not parse. */
function parseEam(d: Dispenser): [string, string] {
  const args = d.remainingArgs();
  if (args.length !== 2) throw d.argErr();
  const a = parseIP(args[0]!);
  if (a === null) throw d.err('invalid IP address: "<nil>"');
  if (a.v4 === null) throw d.err(`invalid IPv4 address: ${JSON.stringify(bytesToIPv6(a.v6!))}`);
  const b = parseIP(args[1]!);
  if (b === null) throw d.err('invalid IP address: "<nil>"');
  if (b.v4 !== null) throw d.err(`invalid IPv6 address: ${JSON.stringify(b.v4)}`);
  return [a.v4, bytesToIPv6(b.v6!)];
}

/** Every occurrence, token for token as CoreDNS's siitParse: a later prefix wins, mappings accumulate. */
export function parseSiit(d: Dispenser): SiitConfig {
  let prefix: { prefix: Uint8Array; length: number } = {
    prefix: new Uint8Array([0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
    length: 96,
  };
  const eam = new Map<string, string>();
  while (d.next()) {
    if (d.remainingArgs().length > 0) throw d.argErr();
    while (d.nextBlock()) {
      const kw = d.val();
      if (kw === 'ipv6_prefix') {
        if (!d.nextArg()) throw d.argErr();
        prefix = parseIpv6Prefix(d.val(), d);
      } else if (kw === 'eam') {
        const [v4, v6] = parseEam(d);
        eam.set(v6, v4);
      } else {
        throw d.err(`unknown property '${kw}'`);
      }
    }
  }
  return { ...prefix, eam };
}
