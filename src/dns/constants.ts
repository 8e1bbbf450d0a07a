/** DNS numeric constants used across the server. Names follow RFC 1035 / IANA registries. */

export const Rcode = {
  NOERROR: 0,
  FORMERR: 1,
  SERVFAIL: 2,
  NXDOMAIN: 3,
  NOTIMP: 4,
  REFUSED: 5,
  YXDOMAIN: 6,
  YXRRSET: 7,
  NXRRSET: 8,
  NOTAUTH: 9,
  NOTZONE: 10,
  BADVERS: 16,
} as const;

const RCODE_NAMES: Record<number, string> = {
  0: 'NOERROR',
  1: 'FORMERR',
  2: 'SERVFAIL',
  3: 'NXDOMAIN',
  4: 'NOTIMP',
  5: 'REFUSED',
  6: 'YXDOMAIN',
  7: 'YXRRSET',
  8: 'NXRRSET',
  9: 'NOTAUTH',
  10: 'NOTZONE',
  16: 'BADVERS',
  17: 'BADKEY',
  18: 'BADTIME',
  19: 'BADMODE',
  20: 'BADNAME',
  21: 'BADALG',
  22: 'BADTRUNC',
  23: 'BADCOOKIE',
};

/** Mnemonic of an RCODE, or its decimal number when unknown (as miekg/dns prints it). */
export function rcodeName(rcode: number): string {
  return RCODE_NAMES[rcode] ?? String(rcode);
}

export function rcodeFromName(name: string): number | undefined {
  const upper = name.toUpperCase();
  for (const [num, mnemonic] of Object.entries(RCODE_NAMES)) if (mnemonic === upper) return Number(num);
  if (/^\d+$/.test(name)) return Number(name);
  return undefined;
}

/**
 * RCODEs the server writes a bare reply with when a chain returns one of them without writing a
 * reply (docs/corefile.md §7.4); whether a reply was written is `q.reply`, never the RCODE.
 */
export function isServerWrittenRcode(rcode: number): boolean {
  return rcode === Rcode.SERVFAIL || rcode === Rcode.REFUSED || rcode === Rcode.FORMERR || rcode === Rcode.NOTIMP;
}

/**
 * The RCODE of the bare reply the server writes when the chain returned `rcode` and wrote nothing:
 * `rcode` itself for SERVFAIL/REFUSED/FORMERR/NOTIMP, SERVFAIL for anything else (a handler that
 * claims success without an answer would otherwise leave the client waiting).
 */
export function bareReplyRcode(rcode: number): number {
  return isServerWrittenRcode(rcode) ? rcode : Rcode.SERVFAIL;
}

export const Qtype = {
  A: 1,
  NS: 2,
  CNAME: 5,
  SOA: 6,
  PTR: 12,
  HINFO: 13,
  MX: 15,
  TXT: 16,
  AAAA: 28,
  SRV: 33,
  NAPTR: 35,
  DS: 43,
  RRSIG: 46,
  NSEC: 47,
  DNSKEY: 48,
  NSEC3: 50,
  SVCB: 64,
  HTTPS: 65,
  OPT: 41,
  TSIG: 250,
  IXFR: 251,
  AXFR: 252,
  ANY: 255,
  CAA: 257,
} as const;

/**
 * Every type miekg/dns 1.1.73 (CoreDNS 1.15.0's) names, spelled as its TypeToString prints them
 * (so `None` and `Reserved` in mixed case, as CoreDNS's log shows them). The zone-file lexer reads
 * the same table upper-cased (src/dns/zonefile/mnemonics.ts).
 */
export const QTYPE_NAMES: Readonly<Record<number, string>> = {
  0: 'None',
  1: 'A',
  2: 'NS',
  3: 'MD',
  4: 'MF',
  5: 'CNAME',
  6: 'SOA',
  7: 'MB',
  8: 'MG',
  9: 'MR',
  10: 'NULL',
  12: 'PTR',
  13: 'HINFO',
  14: 'MINFO',
  15: 'MX',
  16: 'TXT',
  17: 'RP',
  18: 'AFSDB',
  19: 'X25',
  20: 'ISDN',
  21: 'RT',
  23: 'NSAP-PTR',
  24: 'SIG',
  25: 'KEY',
  26: 'PX',
  27: 'GPOS',
  28: 'AAAA',
  29: 'LOC',
  30: 'NXT',
  31: 'EID',
  32: 'NIMLOC',
  33: 'SRV',
  34: 'ATMA',
  35: 'NAPTR',
  36: 'KX',
  37: 'CERT',
  39: 'DNAME',
  41: 'OPT',
  42: 'APL',
  43: 'DS',
  44: 'SSHFP',
  45: 'IPSECKEY',
  46: 'RRSIG',
  47: 'NSEC',
  48: 'DNSKEY',
  49: 'DHCID',
  50: 'NSEC3',
  51: 'NSEC3PARAM',
  52: 'TLSA',
  53: 'SMIMEA',
  55: 'HIP',
  56: 'NINFO',
  57: 'RKEY',
  58: 'TALINK',
  59: 'CDS',
  60: 'CDNSKEY',
  61: 'OPENPGPKEY',
  62: 'CSYNC',
  63: 'ZONEMD',
  64: 'SVCB',
  65: 'HTTPS',
  99: 'SPF',
  100: 'UINFO',
  101: 'UID',
  102: 'GID',
  103: 'UNSPEC',
  104: 'NID',
  105: 'L32',
  106: 'L64',
  107: 'LP',
  108: 'EUI48',
  109: 'EUI64',
  128: 'NXNAME',
  249: 'TKEY',
  250: 'TSIG',
  251: 'IXFR',
  252: 'AXFR',
  253: 'MAILB',
  254: 'MAILA',
  255: 'ANY',
  256: 'URI',
  257: 'CAA',
  258: 'AVC',
  260: 'AMTRELAY',
  261: 'RESINFO',
  32768: 'TA',
  32769: 'DLV',
  65535: 'Reserved',
};

/** miekg's StringToType: exact spelling → number (`None` and `Reserved` match only as spelled). */
const QTYPE_BY_NAME: ReadonlyMap<string, number> = new Map(
  Object.entries(QTYPE_NAMES).map(([n, name]) => [name, Number(n)]),
);

/** miekg's `dns.StringToType[name]`: the type spelled exactly as miekg names it, else undefined. */
export function qtypeExact(name: string): number | undefined {
  return QTYPE_BY_NAME.get(name);
}

/** Type mnemonic as CoreDNS prints it: `A`, `AAAA`, `TYPE65534` for unknown types. */
export function qtypeName(qtype: number): string {
  return QTYPE_NAMES[qtype] ?? `TYPE${qtype}`;
}

/**
 * The number of a type as CoreDNS's plugins read one from the Corefile: StringToType of the
 * upper-cased text (so `none` and `reserved` are not types), or `TYPEnnn`.
 */
export function qtypeFromName(name: string): number | undefined {
  const upper = name.toUpperCase();
  const n = QTYPE_BY_NAME.get(upper);
  if (n !== undefined) return n;
  const m = /^TYPE(\d+)$/.exec(upper);
  if (m) return Number(m[1]);
  return undefined;
}

export const Qclass = { IN: 1, CH: 3, HS: 4, NONE: 254, ANY: 255 } as const;

/** miekg/dns's ClassToString: every class it names. */
export const QCLASS_NAMES: Readonly<Record<number, string>> = {
  1: 'IN',
  2: 'CS',
  3: 'CH',
  4: 'HS',
  254: 'NONE',
  255: 'ANY',
};

export function qclassName(qclass: number): string {
  return QCLASS_NAMES[qclass] ?? `CLASS${qclass}`;
}

export function qclassFromName(name: string): number | undefined {
  const upper = name.toUpperCase();
  for (const [num, mnemonic] of Object.entries(QCLASS_NAMES)) if (mnemonic === upper) return Number(num);
  const m = /^CLASS(\d+)$/.exec(upper);
  if (m) return Number(m[1]);
  return undefined;
}

/**
 * Type and class strings in dns-packet's convention (records the encoder and `Message` carry):
 * the mnemonic when known, `UNKNOWN_<n>` otherwise (dns-packet's spelling, not miekg's `TYPE<n>`).
 */
export function packetTypeName(qtype: number): string {
  return QTYPE_NAMES[qtype] ?? `UNKNOWN_${qtype}`;
}

/** The number of a dns-packet type string (`AAAA`, `TYPE65`, `UNKNOWN_65`), or undefined. */
export function packetTypeCode(type: string): number | undefined {
  const n = QTYPE_BY_NAME.get(type) ?? qtypeFromName(type);
  if (n !== undefined) return n;
  const m = /^UNKNOWN_(\d+)$/.exec(type);
  return m ? Number(m[1]) : undefined;
}

export function packetClassName(qclass: number): string {
  return QCLASS_NAMES[qclass] ?? `UNKNOWN_${qclass}`;
}

/** The number of a dns-packet class string (`IN`, `CLASS3`, `UNKNOWN_3`), or undefined. */
export function packetClassCode(klass: string): number | undefined {
  const n = qclassFromName(klass);
  if (n !== undefined) return n;
  const m = /^UNKNOWN_(\d+)$/.exec(klass);
  return m ? Number(m[1]) : undefined;
}

export const Opcode = { QUERY: 0, IQUERY: 1, STATUS: 2, NOTIFY: 4, UPDATE: 5 } as const;

/** Header flag bits (second 16-bit word of the header). */
export const Flag = {
  QR: 0x8000,
  AA: 0x0400,
  TC: 0x0200,
  RD: 0x0100,
  RA: 0x0080,
  Z: 0x0040,
  AD: 0x0020,
  CD: 0x0010,
} as const;

/** EDNS0 option codes kept when the server echoes the client's OPT (docs/corefile.md §7.4). */
/**
 * The header bits a reply copies from its request, as miekg/dns `SetReply`: the opcode always, RD
 * and CD only for opcode QUERY (a reply to NOTIFY carries neither).
 */
export function replyHeaderBits(requestFlags: number): number {
  const opcode = requestFlags & 0x7800;
  return opcode === 0 ? opcode | (requestFlags & (Flag.RD | Flag.CD)) : opcode;
}

/** Largest UDP payload this server offers by default (DNS flag day 2020). */
export const DEFAULT_MAX_UDP_SIZE = 1232;
export const MIN_UDP_SIZE = 512;
export const MAX_TCP_SIZE = 65535;
