/**
 * The type, class and DNSSEC algorithm mnemonics miekg/dns knows, so the zone-file lexer classifies
 * the same tokens as types and classes that CoreDNS 1.15.0's `file` plugin does.
 */
import { QCLASS_NAMES, QTYPE_NAMES, qtypeName } from '../constants.js';

/**
 * Type mnemonics as the lexer matches them: miekg/dns's table (constants.ts) upper-cased, since
 * miekg's zone parser upper-cases a token before its lookup.
 */
export const TYPES: Readonly<Record<string, number>> = Object.fromEntries(
  Object.entries(QTYPE_NAMES).map(([n, name]) => [name.toUpperCase(), Number(n)]),
);
export const CLASSES: Readonly<Record<string, number>> = Object.fromEntries(
  Object.entries(QCLASS_NAMES).map(([n, name]) => [name, Number(n)]),
);
export const ALGORITHMS: Readonly<Record<string, number>> = {
  RSAMD5: 1,
  DH: 2,
  DSA: 3,
  RSASHA1: 5,
  'DSA-NSEC3-SHA1': 6,
  'RSASHA1-NSEC3-SHA1': 7,
  RSASHA256: 8,
  RSASHA512: 10,
  'ECC-GOST': 12,
  ECDSAP256SHA256: 13,
  ECDSAP384SHA384: 14,
  ED25519: 15,
  ED448: 16,
  INDIRECT: 252,
  PRIVATEDNS: 253,
  PRIVATEOID: 254,
};

export const T = {
  A: 1,
  NS: 2,
  CNAME: 5,
  SOA: 6,
  PTR: 12,
  MX: 15,
  TXT: 16,
  AAAA: 28,
  SRV: 33,
  DNAME: 39,
  DS: 43,
  RRSIG: 46,
  NSEC: 47,
  DNSKEY: 48,
  NSEC3: 50,
  NSEC3PARAM: 51,
  SVCB: 64,
  HTTPS: 65,
} as const;

/** `TYPE123` → 123 (miekg's typeToInt: digits after the prefix, 16 bits). */
export function prefixedNumber(token: string, prefix: number): number | undefined {
  const rest = token.slice(prefix);
  if (!/^\d+$/.test(rest)) return undefined;
  const n = Number(rest);
  return n <= 0xffff ? n : undefined;
}

/** The number of a type mnemonic or `TYPEnnn`, or undefined. */
export function typeFromText(token: string): number | undefined {
  const up = token.toUpperCase();
  if (Object.hasOwn(TYPES, up)) return TYPES[up];
  if (up.startsWith('TYPE')) return prefixedNumber(up, 4);
  return undefined;
}

/** The mnemonic of a type number, or `TYPEnnn` (for error messages): the lexer's upper-case spelling. */
export function typeName(t: number): string {
  return qtypeName(t).toUpperCase();
}
