/**
 * The type, class and DNSSEC algorithm mnemonics miekg/dns knows, so the zone-file lexer classifies
 * the same tokens as types and classes that CoreDNS 1.15.0's `file` plugin does.
 */

/** Type mnemonics miekg/dns knows (so the lexer classifies the same tokens as types). */
export const TYPES: Readonly<Record<string, number>> = {
  NONE: 0,
  A: 1,
  NS: 2,
  MD: 3,
  MF: 4,
  CNAME: 5,
  SOA: 6,
  MB: 7,
  MG: 8,
  MR: 9,
  NULL: 10,
  PTR: 12,
  HINFO: 13,
  MINFO: 14,
  MX: 15,
  TXT: 16,
  RP: 17,
  AFSDB: 18,
  X25: 19,
  ISDN: 20,
  RT: 21,
  'NSAP-PTR': 23,
  SIG: 24,
  KEY: 25,
  PX: 26,
  GPOS: 27,
  AAAA: 28,
  LOC: 29,
  NXT: 30,
  EID: 31,
  NIMLOC: 32,
  SRV: 33,
  ATMA: 34,
  NAPTR: 35,
  KX: 36,
  CERT: 37,
  DNAME: 39,
  OPT: 41,
  APL: 42,
  DS: 43,
  SSHFP: 44,
  IPSECKEY: 45,
  RRSIG: 46,
  NSEC: 47,
  DNSKEY: 48,
  DHCID: 49,
  NSEC3: 50,
  NSEC3PARAM: 51,
  TLSA: 52,
  SMIMEA: 53,
  HIP: 55,
  NINFO: 56,
  RKEY: 57,
  TALINK: 58,
  CDS: 59,
  CDNSKEY: 60,
  OPENPGPKEY: 61,
  CSYNC: 62,
  ZONEMD: 63,
  SVCB: 64,
  HTTPS: 65,
  SPF: 99,
  UINFO: 100,
  UID: 101,
  GID: 102,
  UNSPEC: 103,
  NID: 104,
  L32: 105,
  L64: 106,
  LP: 107,
  EUI48: 108,
  EUI64: 109,
  NXNAME: 128,
  TKEY: 249,
  TSIG: 250,
  IXFR: 251,
  AXFR: 252,
  MAILB: 253,
  MAILA: 254,
  ANY: 255,
  URI: 256,
  CAA: 257,
  AVC: 258,
  AMTRELAY: 260,
  RESINFO: 261,
  TA: 32768,
  DLV: 32769,
  RESERVED: 65535,
};
export const CLASSES: Readonly<Record<string, number>> = { IN: 1, CS: 2, CH: 3, HS: 4, NONE: 254, ANY: 255 };
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

/** The mnemonic of a type number, or `TYPEnnn` (for error messages). */
export function typeName(t: number): string {
  for (const [k, v] of Object.entries(TYPES)) if (v === t) return k;
  return `TYPE${t}`;
}
