/** Parsing `dns64 [PREFIX] { prefix PREFIX; translate_all; allow_ipv4 }` with CoreDNS 1.15.0's checks. */
import { isIP } from 'node:net';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, option, parseOccurrences, str } from '../../src/corefile/options.js';
import { ConfigError } from '../../src/corefile/types.js';
import type { Token } from '../../src/corefile/types.js';
import { bytesToIPv6, ipv6ToBytes } from '../../src/dns/name.js';

export const DNS64_OPTIONS = directive('dns64', {
  // The prefix is checked in setup: CoreDNS's ArgErr names the last of too many arguments.
  args: { rest: str('PREFIX'), min: 0 },
  options: [
    option('prefix', {
      args: [str('PREFIX')],
      summary: 'the IPv6 prefix to embed IPv4 addresses in (default 64:ff9b::/96)',
    }),
    option('translate_all', { summary: 'translate even when the AAAA reply has AAAA records' }),
    option('allow_ipv4', { summary: 'also translate for clients that asked over IPv4' }),
  ],
});

export interface Dns64Config {
  /** The first `length / 8` bytes are the prefix (16 bytes, rest zero). */
  readonly prefix: Uint8Array;
  readonly length: number;
  readonly translateAll: boolean;
  readonly allowIPv4: boolean;
}

const LENGTHS = [32, 40, 48, 56, 64, 96];

/** Go's ParseCIDR + CoreDNS's checks: an IPv6 network of length 32, 40, 48, 56, 64 or 96. */
export function parsePrefix(text: string, at: Token): { prefix: Uint8Array; length: number } {
  const fail = (msg: string): ConfigError => new ConfigError(msg, at.file, at.line, 'dns64');
  const slash = text.indexOf('/');
  const addr = slash >= 0 ? text.slice(0, slash) : '';
  const bits = slash >= 0 ? text.slice(slash + 1) : '';
  const fam = isIP(addr);
  const max = fam === 4 ? 32 : 128;
  if (fam === 0 || !/^\d{1,3}$/.test(bits) || Number(bits) > max) throw fail(`invalid CIDR address: ${text}`);
  const n = Number(bits);
  if (fam === 4) {
    const masked = addr
      .split('.')
      .map((o, i) => Number(o) & ((0xff << Math.max(0, Math.min(8, 8 * (i + 1) - n))) & 0xff))
      .join('.');
    throw fail(`invalid netmask 32 IPv6 address: ${JSON.stringify(`${masked}/${n}`)}`);
  }
  const bytes = ipv6ToBytes(addr)!;
  const masked = new Uint8Array(16);
  for (let i = 0; i < 16; i++) {
    const keep = Math.max(0, Math.min(8, n - 8 * i));
    masked[i] = bytes[i]! & ((0xff << (8 - keep)) & 0xff);
  }
  if (!LENGTHS.includes(n)) throw fail(`invalid prefix length ${JSON.stringify(`${bytesToIPv6(masked)}/${n}`)}`);
  return { prefix: masked, length: n };
}

/** Every occurrence in order (a later prefix replaces an earlier one, flags accumulate). */
export function parseDns64(d: Dispenser): Dns64Config {
  let prefix = parsePrefix('64:ff9b::/96', { text: '', file: '', line: 0, endLine: 0, quoted: false });
  let translateAll = false;
  let allowIPv4 = false;
  for (const occ of parseOccurrences(d, DNS64_OPTIONS)) {
    const raw = occ.directive.raw;
    if (raw.length > 1) {
      const t = occ.directive.token;
      throw new ConfigError(
        `Wrong argument count or unexpected line ending after '${raw[raw.length - 1]!}'`,
        t.file,
        t.line,
        'dns64',
      );
    }
    if (raw.length === 1) {
      // CoreDNS reads no block after a prefix argument.
      prefix = parsePrefix(raw[0]!, occ.directive.token);
      continue;
    }
    for (const o of occ.options) {
      if (o.name === 'prefix') prefix = parsePrefix(o.raw[0]!, o.token);
      else if (o.name === 'translate_all') translateAll = true;
      else if (o.name === 'allow_ipv4') allowIPv4 = true;
    }
  }
  return { ...prefix, translateAll, allowIPv4 };
}
