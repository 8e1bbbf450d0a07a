/**
 * RFC 1035 master files ("zone files"), read the way miekg/dns's ZoneParser reads them — the parser
 * CoreDNS 1.15.0's `file` plugin uses (docs/plugins.md, file): `$ORIGIN`, `$TTL`, `$INCLUDE`,
 * parentheses across lines, `;` comments, quoted strings with `\X`/`\DDD` escapes, relative and
 * absolute names, `@`, an owner/TTL/class left out (the previous one is kept), `TYPEnnn`/`CLASSnnn`
 * and the RFC 3597 generic form `\# LEN HEX` for any type.
 *
 * The result is one `ZoneRecord` per resource record with its RDATA in wire form (names written
 * uncompressed); the names a server needs to follow (CNAME/DNAME/NS/MX/SRV targets, the SOA
 * serial, the type an RRSIG covers) are parsed out beside it. Errors are `ZoneFileError`s worded as
 * miekg/dns words them (`db.example.org: dns: bad A A: "1.2.3" at line: 3:14`).
 */
import { isIP } from 'node:net';
import { dirname, isAbsolute, join } from 'node:path';

// ---- Types and classes -----------------------------------------------------------------------

/** Type mnemonics miekg/dns knows (so the lexer classifies the same tokens as types). */
const TYPES: Readonly<Record<string, number>> = {
  NONE: 0, A: 1, NS: 2, MD: 3, MF: 4, CNAME: 5, SOA: 6, MB: 7, MG: 8, MR: 9, NULL: 10, PTR: 12, HINFO: 13,
  MINFO: 14, MX: 15, TXT: 16, RP: 17, AFSDB: 18, X25: 19, ISDN: 20, RT: 21, 'NSAP-PTR': 23, SIG: 24, KEY: 25,
  PX: 26, GPOS: 27, AAAA: 28, LOC: 29, NXT: 30, EID: 31, NIMLOC: 32, SRV: 33, ATMA: 34, NAPTR: 35, KX: 36,
  CERT: 37, DNAME: 39, OPT: 41, APL: 42, DS: 43, SSHFP: 44, IPSECKEY: 45, RRSIG: 46, NSEC: 47, DNSKEY: 48,
  DHCID: 49, NSEC3: 50, NSEC3PARAM: 51, TLSA: 52, SMIMEA: 53, HIP: 55, NINFO: 56, RKEY: 57, TALINK: 58,
  CDS: 59, CDNSKEY: 60, OPENPGPKEY: 61, CSYNC: 62, ZONEMD: 63, SVCB: 64, HTTPS: 65, SPF: 99, UINFO: 100,
  UID: 101, GID: 102, UNSPEC: 103, NID: 104, L32: 105, L64: 106, LP: 107, EUI48: 108, EUI64: 109,
  NXNAME: 128, TKEY: 249, TSIG: 250, IXFR: 251, AXFR: 252, MAILB: 253, MAILA: 254, ANY: 255, URI: 256,
  CAA: 257, AVC: 258, AMTRELAY: 260, RESINFO: 261, TA: 32768, DLV: 32769, RESERVED: 65535,
};
const CLASSES: Readonly<Record<string, number>> = { IN: 1, CS: 2, CH: 3, HS: 4, NONE: 254, ANY: 255 };
const ALGORITHMS: Readonly<Record<string, number>> = {
  RSAMD5: 1, DH: 2, DSA: 3, RSASHA1: 5, 'DSA-NSEC3-SHA1': 6, 'RSASHA1-NSEC3-SHA1': 7, RSASHA256: 8,
  RSASHA512: 10, 'ECC-GOST': 12, ECDSAP256SHA256: 13, ECDSAP384SHA384: 14, ED25519: 15, ED448: 16,
  INDIRECT: 252, PRIVATEDNS: 253, PRIVATEOID: 254,
};

export const T = {
  A: 1, NS: 2, CNAME: 5, SOA: 6, PTR: 12, MX: 15, TXT: 16, AAAA: 28, SRV: 33, DNAME: 39, DS: 43, RRSIG: 46,
  NSEC: 47, DNSKEY: 48, NSEC3: 50, NSEC3PARAM: 51, SVCB: 64, HTTPS: 65,
} as const;

/** `TYPE123` → 123 (miekg's typeToInt: digits after the prefix, 16 bits). */
function prefixedNumber(token: string, prefix: number): number | undefined {
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

// ---- Records and errors ----------------------------------------------------------------------

export interface ZoneRecord {
  /** Owner name, absolute, in canonical text form (escapes as a wire name prints), letter case as written. */
  readonly name: string;
  readonly type: number;
  readonly class: number;
  readonly ttl: number;
  /** RDATA in wire form (uncompressed names). */
  readonly rdata: Buffer;
  /** The name in the RDATA a server follows: CNAME/DNAME/NS/PTR target, MX exchange, SRV target (canonical text). */
  readonly target?: string;
  /** RRSIG/SIG: the type covered. */
  readonly covered?: number;
  /** SOA: the serial. */
  readonly serial?: number;
  /** Where it was read (the $INCLUDEd file for included records). */
  readonly file: string;
  readonly line: number;
}

/** A syntax error in a master file, worded as miekg/dns's ParseError. */
export class ZoneFileError extends Error {
  constructor(readonly file: string, readonly reason: string, readonly token: string, readonly line: number, readonly column: number) {
    super(`${file ? `${file}: ` : ''}dns: ${reason}: ${quoteToASCII(token)} at line: ${line}:${column}`);
    this.name = 'ZoneFileError';
  }
}

/** Go's strconv.QuoteToASCII for the tokens of an error message. */
function quoteToASCII(s: string): string {
  const text = Buffer.from(s, 'latin1').toString('utf8');
  let out = '"';
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (c === 7) out += '\\a';
    else if (c === 8) out += '\\b';
    else if (c === 12) out += '\\f';
    else if (c === 10) out += '\\n';
    else if (c === 13) out += '\\r';
    else if (c === 9) out += '\\t';
    else if (c === 11) out += '\\v';
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else if (c < 0x7f) out += ch;
    else if (c <= 0xffff) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += `\\U${c.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

// ---- Names -----------------------------------------------------------------------------------

/**
 * The labels of a presentation-format name (`\.`, `\DDD` escapes; tokens are byte strings in
 * latin1), or undefined when it is not a valid domain name (empty label, label over 63 octets,
 * name over 255 octets on the wire). `a.b` and `a.b.` give the same labels.
 */
export function nameLabels(name: string): Buffer[] | undefined {
  if (name === '') return undefined;
  if (name === '.') return [];
  const labels: Buffer[] = [];
  let cur: number[] = [];
  let wire = 1;
  let i = 0;
  for (; i < name.length; i++) {
    const c = name.charCodeAt(i) & 0xff;
    if (c === 0x5c) {
      const ddd = name.slice(i + 1, i + 4);
      if (/^\d{3}$/.test(ddd)) {
        cur.push(Number(ddd) & 0xff);
        i += 3;
      } else if (i + 1 < name.length) {
        cur.push(name.charCodeAt(i + 1) & 0xff);
        i += 1;
      } else {
        cur.push(0x5c);
      }
    } else if (c === 0x2e) {
      if (cur.length === 0 || cur.length > 63) return undefined;
      labels.push(Buffer.from(cur));
      wire += cur.length + 1;
      cur = [];
    } else {
      cur.push(c);
    }
  }
  if (cur.length > 0) {
    if (cur.length > 63) return undefined;
    labels.push(Buffer.from(cur));
    wire += cur.length + 1;
  }
  if (wire > 255) return undefined;
  return labels;
}

/** Text of wire labels, escaped as clusterdns prints names read from the wire (src/dns/wire.ts). */
export function labelsText(labels: readonly Buffer[]): string {
  if (labels.length === 0) return '.';
  let s = '';
  for (const l of labels) {
    for (const c of l) {
      if (c > 0x20 && c < 0x7f && c !== 0x2e && c !== 0x5c && c !== 0x28 && c !== 0x29 && c !== 0x3b && c !== 0x22 && c !== 0x40 && c !== 0x24) {
        s += String.fromCharCode(c);
      } else if (c === 0x2e || c === 0x5c || c === 0x28 || c === 0x29 || c === 0x3b || c === 0x22 || c === 0x40 || c === 0x24) {
        s += `\\${String.fromCharCode(c)}`;
      } else {
        s += `\\${c.toString().padStart(3, '0')}`;
      }
    }
    s += '.';
  }
  return s;
}

/** A name's canonical text (escapes normalised), or undefined when it is not a valid name. */
export function canonicalName(name: string): string | undefined {
  const l = nameLabels(name);
  return l ? labelsText(l) : undefined;
}

/** ASCII lower case (DNS names compare case-insensitively over ASCII letters only). */
export function lowerName(name: string): string {
  return /[A-Z]/.test(name) ? name.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : name;
}

function isFqdn(s: string): boolean {
  // A trailing dot that is not escaped.
  if (!s.endsWith('.')) return false;
  let n = 0;
  for (let i = s.length - 2; i >= 0 && s[i] === '\\'; i--) n++;
  return n % 2 === 0;
}

/** miekg's toAbsoluteName: `@`, absolute names, relative names + origin. Undefined when invalid. */
function toAbsolute(name: string, origin: string): string | undefined {
  if (name === '@') return origin === '' ? undefined : origin;
  if (name === '\n' || name === '') return undefined;
  if (!nameLabels(name)) return undefined;
  if (isFqdn(name)) return name;
  if (origin === '') return undefined;
  const joined = origin === '.' ? `${name}.` : `${name}.${origin}`;
  return nameLabels(joined) ? joined : undefined;
}

function wireName(name: string): Buffer {
  const labels = nameLabels(name) ?? [];
  const parts: Buffer[] = [];
  for (const l of labels) parts.push(Buffer.from([l.length]), l);
  parts.push(Buffer.from([0]));
  return Buffer.concat(parts);
}

// ---- Lexer (a port of miekg/dns's zlexer) -----------------------------------------------------

const enum V {
  EOF, String, Blank, Quote, Newline, Rrtype, Owner, Class, DirOrigin, DirTTL, DirInclude, DirGenerate,
}

interface Lex {
  token: string;
  err: boolean;
  value: V;
  torc: number;
  line: number;
  column: number;
}

const EMPTY: Lex = { token: '', err: false, value: V.EOF, torc: 0, line: 0, column: 0 };

function isEmptyLex(l: Lex): boolean {
  return l.token === '' && !l.err && l.value === V.EOF && l.torc === 0 && l.line === 0 && l.column === 0;
}

class ZLexer {
  private pos = 0;
  private line = 1;
  private column = 0;
  private eol = false;
  private l: Lex = { ...EMPTY };
  private cachedL: Lex | null = null;
  private nextL = false;
  private brace = 0;
  private quote = false;
  private space = false;
  private commt = false;
  private rrtype = false;
  private owner = true;
  private comBuf = '';

  constructor(private readonly data: string) {}

  private readByte(): number {
    if (this.pos >= this.data.length) return -1;
    const c = this.data.charCodeAt(this.pos++);
    if (this.eol) {
      this.line++;
      this.column = 0;
      this.eol = false;
    }
    if (c === 10) this.eol = true;
    else this.column++;
    return c;
  }

  peek(): Lex {
    if (this.nextL) return { ...this.l };
    const [l, ok] = this.next();
    if (!ok) return l;
    if (this.nextL) this.cachedL = l;
    else this.nextL = true;
    return l;
  }

  next(): [Lex, boolean] {
    const l = this.l;
    if (this.cachedL) {
      const c = this.cachedL;
      this.cachedL = null;
      return [c, true];
    }
    if (this.nextL) {
      this.nextL = false;
      return [{ ...l }, true];
    }
    if (l.err) return [{ ...EMPTY }, false];
    let str = '';
    let com = this.comBuf;
    this.comBuf = '';
    let escape = false;
    const ret = (): [Lex, boolean] => [{ ...l }, true];
    const snapshot = (value: V, token: string, torc = 0): Lex => {
      l.value = value;
      l.token = token;
      l.torc = torc;
      return { ...l };
    };
    for (let x = this.readByte(); x >= 0; x = this.readByte()) {
      l.line = this.line;
      l.column = this.column;
      switch (x) {
        case 0x20:
        case 0x09: {
          if (escape || this.quote) {
            str += String.fromCharCode(x);
            escape = false;
            break;
          }
          if (this.commt) {
            com += String.fromCharCode(x);
            break;
          }
          let retL: Lex | null = null;
          if (str.length === 0) {
            // blank at the start: the grammar handles it
          } else if (this.owner) {
            let v = V.Owner;
            switch (str.toUpperCase()) {
              case '$TTL': v = V.DirTTL; break;
              case '$ORIGIN': v = V.DirOrigin; break;
              case '$INCLUDE': v = V.DirInclude; break;
              case '$GENERATE': v = V.DirGenerate; break;
            }
            retL = snapshot(v, str);
          } else {
            let v = V.String;
            let torc = 0;
            if (!this.rrtype) {
              const up = str.toUpperCase();
              if (Object.hasOwn(TYPES, up)) {
                v = V.Rrtype;
                torc = TYPES[up]!;
                this.rrtype = true;
              } else if (up.startsWith('TYPE')) {
                const t = prefixedNumber(up, 4);
                if (t === undefined) {
                  l.token = 'unknown RR type';
                  l.err = true;
                  return ret();
                }
                v = V.Rrtype;
                torc = t;
                this.rrtype = true;
              }
              if (Object.hasOwn(CLASSES, up)) {
                v = V.Class;
                torc = CLASSES[up]!;
              } else if (up.startsWith('CLASS')) {
                const c = prefixedNumber(up, 5);
                if (c === undefined) {
                  l.token = 'unknown class';
                  l.err = true;
                  return ret();
                }
                v = V.Class;
                torc = c;
              }
            }
            retL = snapshot(v, str, torc);
          }
          this.owner = false;
          if (!this.space) {
            this.space = true;
            l.value = V.Blank;
            l.token = ' ';
            if (retL === null) return ret();
            this.nextL = true;
          }
          if (retL !== null) return [retL, true];
          break;
        }
        case 0x3b: // ;
          if (escape || this.quote) {
            str += ';';
            escape = false;
            break;
          }
          this.commt = true;
          this.comBuf = '';
          if (com.length > 1) com += ' ';
          com += ';';
          if (str.length > 0) {
            this.comBuf = com;
            return [snapshot(V.String, str), true];
          }
          break;
        case 0x0d:
          escape = false;
          if (this.quote) str += '\r';
          break;
        case 0x0a: {
          escape = false;
          if (this.quote) {
            str += '\n';
            break;
          }
          if (this.commt) {
            this.commt = false;
            this.rrtype = false;
            if (this.brace === 0) {
              this.owner = true;
              return [snapshot(V.Newline, '\n'), true];
            }
            this.comBuf = com;
            break;
          }
          if (this.brace === 0) {
            let retL: Lex | null = null;
            if (str.length > 0) {
              let v = V.String;
              let torc = 0;
              if (!this.rrtype) {
                const up = str.toUpperCase();
                if (Object.hasOwn(TYPES, up)) {
                  this.rrtype = true;
                  v = V.Rrtype;
                  torc = TYPES[up]!;
                }
              }
              retL = snapshot(v, str, torc);
            }
            l.value = V.Newline;
            l.token = '\n';
            this.comBuf = '';
            this.rrtype = false;
            this.owner = true;
            if (retL !== null) {
              this.nextL = true;
              return [retL, true];
            }
            return ret();
          }
          break;
        }
        case 0x5c: // backslash
          if (this.commt) {
            com += '\\';
            break;
          }
          if (escape) {
            str += '\\';
            escape = false;
            break;
          }
          str += '\\';
          escape = true;
          break;
        case 0x22: {
          // "
          if (this.commt) {
            com += '"';
            break;
          }
          if (escape) {
            str += '"';
            escape = false;
            break;
          }
          this.space = false;
          let retL: Lex | null = null;
          if (str.length > 0) retL = snapshot(V.String, str);
          l.value = V.Quote;
          l.token = '"';
          l.torc = 0;
          this.quote = !this.quote;
          if (retL !== null) {
            this.nextL = true;
            return [retL, true];
          }
          return ret();
        }
        case 0x28:
        case 0x29:
          if (this.commt) {
            com += String.fromCharCode(x);
            break;
          }
          if (escape || this.quote) {
            str += String.fromCharCode(x);
            escape = false;
            break;
          }
          if (x === 0x29) {
            this.brace--;
            if (this.brace < 0) {
              l.token = 'extra closing brace';
              l.err = true;
              return ret();
            }
          } else this.brace++;
          break;
        default:
          escape = false;
          if (this.commt) {
            com += String.fromCharCode(x);
            break;
          }
          str += String.fromCharCode(x);
          this.space = false;
      }
    }
    let retL: Lex | null = null;
    if (str.length > 0) {
      retL = snapshot(V.String, str);
      if (com.length === 0) return [retL, true];
    }
    if (com.length > 0) {
      l.value = V.Newline;
      l.token = '\n';
      if (retL !== null) {
        this.nextL = true;
        return [retL, true];
      }
      return ret();
    }
    if (this.brace !== 0) {
      l.token = 'unbalanced brace';
      l.err = true;
      return ret();
    }
    return [{ ...EMPTY }, false];
  }
}

// ---- RDATA -----------------------------------------------------------------------------------

class RdataError {
  constructor(readonly reason: string, readonly lex: Lex | null) {}
}

/** RDATA parsed from text. */
interface Parsed {
  rdata: Buffer;
  target?: string;
  covered?: number;
  serial?: number;
}

function u8(n: number): Buffer {
  return Buffer.from([n & 0xff]);
}
function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n & 0xffff);
  return b;
}
function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

function parseUint(token: string, bits: 8 | 16 | 32): number | undefined {
  if (!/^\d+$/.test(token)) return undefined;
  const n = Number(token);
  return n <= 2 ** bits - 1 ? n : undefined;
}

/** miekg's stringToTTL: `3600`, `1h30m`, `1w`. */
export function ttlFromText(token: string): number | undefined {
  let s = 0;
  let i = 0;
  for (const c of token) {
    switch (c.toLowerCase()) {
      case 's': s += i; i = 0; break;
      case 'm': s += i * 60; i = 0; break;
      case 'h': s += i * 3600; i = 0; break;
      case 'd': s += i * 86400; i = 0; break;
      case 'w': s += i * 604800; i = 0; break;
      default:
        if (c < '0' || c > '9') return undefined;
        i = i * 10 + (c.charCodeAt(0) - 48);
    }
  }
  return s + i > 0xffffffff ? undefined : s + i;
}

/** Character-string bytes of a token (`\X` and `\DDD` unescaped). */
function unescapeString(s: string): Buffer {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i) & 0xff;
    if (c === 0x5c && i + 1 < s.length) {
      const ddd = s.slice(i + 1, i + 4);
      if (/^\d{3}$/.test(ddd)) {
        out.push(Number(ddd) & 0xff);
        i += 3;
      } else {
        out.push(s.charCodeAt(i + 1) & 0xff);
        i += 1;
      }
    } else out.push(c);
  }
  return Buffer.from(out);
}

/** miekg's escapedStringOffset: the string offset of the `want`-th byte, -1 when shorter. */
function escapedStringOffset(s: string, want: number): number | undefined {
  let bytes = 0;
  let i = 0;
  while (i < s.length) {
    bytes++;
    if (s[i] !== '\\') i++;
    else if (/^\d{3}/.test(s.slice(i + 1, i + 4))) i += 4;
    else if (i + 1 >= s.length) return undefined;
    else i += 2;
    if (bytes >= want) return i;
  }
  return -1;
}

function decodeHex(s: string): Buffer | undefined {
  if (s.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(s)) return undefined;
  return Buffer.from(s, 'hex');
}

function decodeBase64(s: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) return undefined;
  return Buffer.from(s, 'base64');
}

/** YYYYMMDDHHmmSS → serial-arithmetic seconds as miekg's StringToTime. */
function timeFromText(s: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(s);
  if (!m) return undefined;
  const [y, mo, d, h, mi, se] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59) return undefined;
  const t = Date.UTC(y, mo - 1, d, h, mi, se) / 1000;
  const year68 = 2 ** 31;
  const mod = Math.max(0, Math.floor(t / year68) - 1);
  return (t - mod * year68) >>> 0;
}

/** NSEC-style type bitmap (RFC 4034 §4.1.2). */
function typeBitmap(types: readonly number[]): Buffer {
  const sorted = [...new Set(types)].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let i = 0;
  while (i < sorted.length) {
    const win = sorted[i]! >> 8;
    const bits = Buffer.alloc(32);
    let max = 0;
    for (; i < sorted.length && sorted[i]! >> 8 === win; i++) {
      const low = sorted[i]! & 0xff;
      bits[low >> 3]! |= 0x80 >> (low & 7);
      max = Math.max(max, (low >> 3) + 1);
    }
    parts.push(Buffer.from([win, max]), bits.subarray(0, max));
  }
  return Buffer.concat(parts);
}

/** The tokens of one record's RDATA, read the way miekg's per-type parsers read them. */
class Rdata {
  constructor(private readonly c: ZLexer, private readonly origin: string) {}

  next(): Lex {
    return this.c.next()[0];
  }

  /** The next token (after skipping one blank, as miekg's `c.Next() // zBlank`). */
  field(): Lex {
    this.next();
    return this.next();
  }

  /** Nothing but a blank may follow the RDATA on the line. */
  end(): void {
    let l = this.next();
    if (l.value === V.Blank) {
      l = this.next();
      if (l.value !== V.Newline && l.value !== V.EOF) throw new RdataError('garbage after rdata', l);
    } else if (l.value !== V.Newline && l.value !== V.EOF) throw new RdataError('garbage after rdata', l);
  }

  uint(l: Lex, bits: 8 | 16 | 32, reason: string): number {
    const n = parseUint(l.token, bits);
    if (n === undefined || l.err) throw new RdataError(reason, l);
    return n;
  }

  name(l: Lex, reason: string): string {
    const n = toAbsolute(l.token, this.origin);
    if (l.err || n === undefined) throw new RdataError(reason, l);
    return n;
  }

  /** miekg's endingToString: the rest of the line, blanks removed. */
  ending(reason: string): string {
    let s = '';
    let l = this.next();
    while (l.value !== V.Newline && l.value !== V.EOF) {
      if (l.err) throw new RdataError(reason, l);
      if (l.value === V.String) s += l.token;
      else if (l.value !== V.Blank) throw new RdataError(reason, l);
      l = this.next();
    }
    return s;
  }

  /** miekg's endingToTxtSlice: quoted and unquoted character strings, long ones split at 255 octets. */
  txt(reason: string): string[] {
    let l = this.next();
    if (l.err) throw new RdataError(reason, l);
    const out: string[] = [];
    let quote = false;
    let empty = false;
    while (l.value !== V.Newline && l.value !== V.EOF) {
      if (l.err) throw new RdataError(reason, l);
      switch (l.value) {
        case V.String: {
          empty = false;
          let p = 0;
          for (;;) {
            const i = escapedStringOffset(l.token.slice(p), 255);
            if (i === undefined) throw new RdataError(reason, l);
            if (i !== -1 && p + i !== l.token.length) {
              out.push(l.token.slice(p, p + i));
              p += i;
            } else {
              out.push(l.token.slice(p));
              break;
            }
          }
          break;
        }
        case V.Blank:
          if (quote) throw new RdataError(reason, l);
          break;
        case V.Quote:
          if (empty && quote) out.push('');
          quote = !quote;
          empty = true;
          break;
        default:
          throw new RdataError(reason, l);
      }
      l = this.next();
    }
    if (quote) throw new RdataError(reason, l);
    return out;
  }

  quoted(reason: string): string {
    let l = this.field();
    if (l.value !== V.Quote) throw new RdataError(reason, l);
    l = this.next();
    if (l.value === V.String) {
      const s = l.token;
      l = this.next();
      if (l.value !== V.Quote) throw new RdataError(reason, l);
      return s;
    }
    if (l.value === V.Quote) return '';
    throw new RdataError(reason, l);
  }
}

function charString(s: string, reason: string, l: Lex | null): Buffer {
  const b = unescapeString(s);
  if (b.length > 255) throw new RdataError(reason, l);
  return Buffer.concat([u8(b.length), b]);
}

function oneName(p: Rdata, tname: string, field: string): Parsed {
  const n = p.name(p.next(), `bad ${tname} ${field}`);
  p.end();
  return { rdata: wireName(n), target: n };
}

function prefName(p: Rdata, tname: string, pref: string, field: string): Parsed {
  const pr = p.uint(p.next(), 16, `bad ${tname} ${pref}`);
  const n = p.name(p.field(), `bad ${tname} ${field}`);
  p.end();
  return { rdata: Buffer.concat([u16(pr), wireName(n)]), target: n };
}

function txtLike(p: Rdata, tname: string): Parsed {
  const parts = p.txt(`bad ${tname} Txt`);
  return { rdata: Buffer.concat(parts.map((s) => charString(s, `bad ${tname} Txt`, null))) };
}

function dnskey(p: Rdata, tname: string): Parsed {
  const flags = p.uint(p.next(), 16, `bad ${tname} Flags`);
  const proto = p.uint(p.field(), 8, `bad ${tname} Protocol`);
  const alg = p.uint(p.field(), 8, `bad ${tname} Algorithm`);
  const key = decodeBase64(p.ending(`bad ${tname} PublicKey`));
  if (!key) throw new RdataError(`bad ${tname} PublicKey`, null);
  return { rdata: Buffer.concat([u16(flags), u8(proto), u8(alg), key]) };
}

function ds(p: Rdata, tname: string): Parsed {
  const tag = p.uint(p.next(), 16, `bad ${tname} KeyTag`);
  const l = p.field();
  let alg = parseUint(l.token, 8);
  if (alg === undefined) {
    alg = ALGORITHMS[l.token.toUpperCase()];
    if (alg === undefined || l.err) throw new RdataError(`bad ${tname} Algorithm`, l);
  }
  const dt = p.uint(p.field(), 8, `bad ${tname} DigestType`);
  const digest = decodeHex(p.ending(`bad ${tname} Digest`));
  if (!digest) throw new RdataError(`bad ${tname} Digest`, null);
  return { rdata: Buffer.concat([u16(tag), u8(alg), u8(dt), digest]) };
}

function rrsig(p: Rdata, tname: string): Parsed {
  let l = p.next();
  const covered = typeFromText(l.token);
  if (covered === undefined) throw new RdataError(`bad ${tname} Typecovered`, l);
  l = p.field();
  if (l.err) throw new RdataError(`bad ${tname} Algorithm`, l);
  let alg = parseUint(l.token, 8);
  if (alg === undefined) {
    alg = ALGORITHMS[l.token];
    if (alg === undefined) throw new RdataError(`bad ${tname} Algorithm`, l);
  }
  const labels = p.uint(p.field(), 8, `bad ${tname} Labels`);
  const origTtl = p.uint(p.field(), 32, `bad ${tname} OrigTtl`);
  l = p.field();
  const exp = timeFromText(l.token) ?? parseUint(l.token, 32);
  if (exp === undefined) throw new RdataError(`bad ${tname} Expiration`, l);
  l = p.field();
  const inc = timeFromText(l.token) ?? parseUint(l.token, 32);
  if (inc === undefined) throw new RdataError(`bad ${tname} Inception`, l);
  const tag = p.uint(p.field(), 16, `bad ${tname} KeyTag`);
  const signer = p.name(p.field(), `bad ${tname} SignerName`);
  const sig = decodeBase64(p.ending(`bad ${tname} Signature`));
  if (!sig) throw new RdataError(`bad ${tname} Signature`, null);
  return {
    rdata: Buffer.concat([u16(covered), u8(alg), u8(labels), u32(origTtl), u32(exp), u32(inc), u16(tag), wireName(signer), sig]),
    covered,
  };
}

function nsec(p: Rdata, tname: string): Parsed {
  const nextName = p.name(p.next(), `bad ${tname} NextDomain`);
  const types: number[] = [];
  let l = p.next();
  while (l.value !== V.Newline && l.value !== V.EOF) {
    if (l.value === V.String) {
      const t = typeFromText(l.token);
      if (t === undefined) throw new RdataError(`bad ${tname} TypeBitMap`, l);
      types.push(t);
    } else if (l.value !== V.Blank) throw new RdataError(`bad ${tname} TypeBitMap`, l);
    l = p.next();
  }
  return { rdata: Buffer.concat([wireName(nextName), typeBitmap(types)]) };
}

const SVCB_KEYS: Readonly<Record<string, number>> = {
  mandatory: 0, alpn: 1, 'no-default-alpn': 2, port: 3, ipv4hint: 4, ech: 5, ipv6hint: 6, dohpath: 7, ohttp: 8,
};

/** miekg's svcbStringToKey: a key name or `keyNNN` (no leading zero, not an assigned key); 65535 when invalid. */
function svcbKey(s: string): number {
  if (s.startsWith('key')) {
    const n = parseUint(s.slice(3), 16);
    if (n === undefined || n === 65535 || s[3] === '0' || Object.values(SVCB_KEYS).includes(n)) return 65535;
    return n;
  }
  return Object.hasOwn(SVCB_KEYS, s) ? SVCB_KEYS[s]! : 65535;
}

/** One SvcParam value in wire form; throws its miekg/dns error text. */
function svcbValue(key: number, v: string): Buffer {
  switch (key) {
    case 0: {
      const keys = v === '' ? [] : v.split(',').map(svcbKey);
      return Buffer.concat(keys.sort((a, b) => a - b).map(u16));
    }
    case 1: {
      if (v === '') return Buffer.alloc(0);
      const ids: Buffer[] = [];
      let cur: number[] = [];
      const bytes = unescapeString(v);
      for (let i = 0; i < bytes.length; i++) {
        let c = bytes[i]!;
        if (c === 0x2c) {
          if (cur.length === 0) throw new Error('bad svcbalpn: empty protocol identifier');
          ids.push(Buffer.from([cur.length, ...cur]));
          cur = [];
          continue;
        }
        if (c === 0x5c) {
          if (i + 1 >= bytes.length) throw new Error('bad svcbalpn: unterminated escape decoding comma-separated list');
          c = bytes[++i]!;
          if (c !== 0x5c && c !== 0x2c) throw new Error('bad svcbalpn: bad escaped character decoding comma-separated list');
        }
        cur.push(c);
      }
      if (cur.length === 0) throw new Error('bad svcbalpn: last protocol identifier empty');
      ids.push(Buffer.from([cur.length, ...cur]));
      return Buffer.concat(ids);
    }
    case 2:
      if (v !== '') throw new Error('bad svcbnodefaultalpn: no-default-alpn must have no value');
      return Buffer.alloc(0);
    case 3: {
      const n = parseUint(v, 16);
      if (n === undefined) throw new Error('bad svcbport: port out of range');
      return u16(n);
    }
    case 4: {
      if (v === '') throw new Error('bad svcbipv4hint: empty hint');
      if (v.includes(':')) throw new Error('bad svcbipv4hint: expected ipv4, got ipv6');
      return Buffer.concat(v.split(',').map((ip) => {
        if (isIP(ip) !== 4) throw new Error('bad svcbipv4hint: bad ip');
        return Buffer.from(ip.split('.').map(Number));
      }));
    }
    case 5: {
      const b = decodeBase64(v);
      if (!b) throw new Error('bad svcbech: bad base64 ech');
      return b;
    }
    case 6: {
      if (v === '') throw new Error('bad svcbipv6hint: empty hint');
      return Buffer.concat(v.split(',').map((ip) => {
        if (isIP(ip) !== 6) throw new Error('bad svcbipv6hint: bad ip');
        if (/^::ffff:[\d.]+$/i.test(ip)) throw new Error('bad svcbipv6hint: expected ipv6, got ipv4-mapped-ipv6');
        return ipv6Bytes(ip);
      }));
    }
    case 8:
      if (v !== '') throw new Error('bad svcbotthp: svcbotthp must have no value');
      return Buffer.alloc(0);
    default:
      // dohpath and keyNNN: the (unescaped) bytes.
      return unescapeString(v);
  }
}

/** SVCB/HTTPS (RFC 9460): priority, target, then `key[=value]` pairs, written sorted by key. */
function svcb(p: Rdata): Parsed {
  const pri = p.uint(p.next(), 16, 'bad SVCB priority');
  const target = p.name(p.field(), 'bad SVCB Target');
  const params = new Map<number, Buffer>();
  let canHaveNextKey = true;
  let l = p.next();
  while (l.value !== V.Newline && l.value !== V.EOF) {
    switch (l.value) {
      case V.String: {
        if (!canHaveNextKey) throw new RdataError('bad SVCB value quotation', l);
        const idx = l.token.indexOf('=');
        let key: string;
        let value = '';
        if (idx < 0) key = l.token;
        else if (idx === 0) throw new RdataError('bad SVCB key', l);
        else {
          key = l.token.slice(0, idx);
          value = l.token.slice(idx + 1);
          if (value === '') {
            l = p.next();
            if (l.value === V.Quote) {
              canHaveNextKey = false;
              l = p.next();
              if (l.value === V.String) {
                value = l.token;
                l = p.next();
                if (l.value !== V.Quote) throw new RdataError('SVCB unterminated value', l);
              } else if (l.value !== V.Quote) throw new RdataError('bad SVCB value', l);
            }
          }
        }
        const k = svcbKey(key);
        if (k === 65535) throw new RdataError('bad SVCB key', l);
        let wire: Buffer;
        try {
          wire = svcbValue(k, value);
        } catch {
          // miekg/dns loses the wrapped error's text on the way out: the reason is empty.
          throw new RdataError('', l);
        }
        if (params.has(k)) throw new RdataError('bad SVCB key', l);
        params.set(k, wire);
        break;
      }
      case V.Quote:
        throw new RdataError("SVCB key can't contain double quotes", l);
      case V.Blank:
        canHaveNextKey = true;
        break;
      default:
        throw new RdataError('bad SVCB values', l);
    }
    l = p.next();
  }
  const parts: Buffer[] = [u16(pri), wireName(target)];
  for (const k of [...params.keys()].sort((a, b) => a - b)) parts.push(u16(k), u16(params.get(k)!.length), params.get(k)!);
  return { rdata: Buffer.concat(parts), target };
}

/** Parse the RDATA of `type`; undefined when clusterdns has no text parser for the type. */
function parseRdata(type: number, p: Rdata): Parsed | undefined {
  switch (type) {
    case 1: {
      const l = p.next();
      if (l.err || l.token.includes(':') || isIP(l.token) !== 4) throw new RdataError('bad A A', l);
      p.end();
      return { rdata: Buffer.from(l.token.split('.').map(Number)) };
    }
    case 28: {
      const l = p.next();
      if (l.err || !l.token.includes(':') || (isIP(l.token) !== 6 && !/^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(l.token))) throw new RdataError('bad AAAA AAAA', l);
      p.end();
      return { rdata: ipv6Bytes(l.token) };
    }
    case 2: return oneName(p, 'NS', 'Ns');
    case 3: return oneName(p, 'MD', 'Md');
    case 4: return oneName(p, 'MF', 'Mf');
    case 5: return oneName(p, 'CNAME', 'Target');
    case 7: return oneName(p, 'MB', 'Mb');
    case 8: return oneName(p, 'MG', 'Mg');
    case 9: return oneName(p, 'MR', 'Mr');
    case 12: return oneName(p, 'PTR', 'Ptr');
    case 23: return oneName(p, 'NSAP-PTR', 'Ptr');
    case 39: return oneName(p, 'DNAME', 'Target');
    case 6: {
      const ns = p.name(p.next(), 'bad SOA Ns');
      const mbox = p.name(p.field(), 'bad SOA Mbox');
      p.next();
      const v: number[] = [];
      for (let i = 0; i < 5; i++) {
        const l = p.next();
        if (l.err) throw new RdataError('bad SOA zone parameter', l);
        let n = parseUint(l.token, 32);
        if (n === undefined) {
          if (i === 0) throw new RdataError('bad SOA zone parameter', l);
          n = ttlFromText(l.token);
          if (n === undefined) throw new RdataError('bad SOA zone parameter', l);
        }
        v.push(n);
        if (i < 4) p.next();
      }
      p.end();
      return { rdata: Buffer.concat([wireName(ns), wireName(mbox), ...v.map(u32)]), serial: v[0]! };
    }
    case 15: return prefName(p, 'MX', 'Pref', 'Mx');
    case 18: return prefName(p, 'AFSDB', 'Subtype', 'Hostname');
    case 21: return prefName(p, 'RT', 'Preference', 'Host');
    case 36: return prefName(p, 'KX', 'Pref', 'Exchanger');
    case 16: return txtLike(p, 'TXT');
    case 99: return txtLike(p, 'SPF');
    case 258: return txtLike(p, 'AVC');
    case 56: return txtLike(p, 'NINFO');
    case 261: return txtLike(p, 'RESINFO');
    case 13: {
      let chunks = p.txt('bad HINFO Fields');
      if (chunks.length === 0) return { rdata: Buffer.alloc(0) };
      if (chunks.length === 1) {
        const f = chunks[0]!.split(/\s+/).filter((x) => x !== '');
        chunks = f.length > 1 ? f : [chunks[0]!, ''];
      }
      return { rdata: Buffer.concat([charString(chunks[0]!, 'bad HINFO Fields', null), charString(chunks.slice(1).join(' '), 'bad HINFO Fields', null)]) };
    }
    case 17:
    case 14: {
      const a = p.name(p.next(), type === 17 ? 'bad RP Mbox' : 'bad MINFO Rmail');
      const b = p.name(p.field(), type === 17 ? 'bad RP Txt' : 'bad MINFO Email');
      p.end();
      return { rdata: Buffer.concat([wireName(a), wireName(b)]) };
    }
    case 33: {
      const pri = p.uint(p.next(), 16, 'bad SRV Priority');
      const w = p.uint(p.field(), 16, 'bad SRV Weight');
      const port = p.uint(p.field(), 16, 'bad SRV Port');
      const t = p.name(p.field(), 'bad SRV Target');
      p.end();
      return { rdata: Buffer.concat([u16(pri), u16(w), u16(port), wireName(t)]), target: t };
    }
    case 35: {
      const order = p.uint(p.next(), 16, 'bad NAPTR Order');
      const pref = p.uint(p.field(), 16, 'bad NAPTR Preference');
      const flags = p.quoted('bad NAPTR Flags');
      const service = p.quoted('bad NAPTR Service');
      const regexp = p.quoted('bad NAPTR Regexp');
      const repl = p.name(p.field(), 'bad NAPTR Replacement');
      p.end();
      return {
        rdata: Buffer.concat([u16(order), u16(pref), charString(flags, 'bad NAPTR Flags', null), charString(service, 'bad NAPTR Service', null), charString(regexp, 'bad NAPTR Regexp', null), wireName(repl)]),
      };
    }
    case 257: {
      const flag = p.uint(p.next(), 8, 'bad CAA Flag');
      const l = p.field();
      if (l.value !== V.String) throw new RdataError('bad CAA Tag', l);
      p.next();
      const v = p.txt('bad CAA Value');
      if (v.length !== 1) throw new RdataError('bad CAA Value', l);
      const tag = Buffer.from(l.token, 'latin1');
      return { rdata: Buffer.concat([u8(flag), u8(tag.length), tag, unescapeString(v[0]!)]) };
    }
    case 256: {
      const pri = p.uint(p.next(), 16, 'bad URI Priority');
      const l = p.field();
      const w = p.uint(l, 16, 'bad URI Weight');
      p.next();
      const v = p.txt('bad URI Target');
      if (v.length !== 1) throw new RdataError('bad URI Target', l);
      return { rdata: Buffer.concat([u16(pri), u16(w), unescapeString(v[0]!)]) };
    }
    case 43: return ds(p, 'DS');
    case 59: return ds(p, 'CDS');
    case 32769: return ds(p, 'DLV');
    case 32768: return ds(p, 'TA');
    case 48: return dnskey(p, 'DNSKEY');
    case 25: return dnskey(p, 'KEY');
    case 60: return dnskey(p, 'CDNSKEY');
    case 46: return rrsig(p, 'RRSIG');
    case 24: return rrsig(p, 'RRSIG');
    case 47: return nsec(p, 'NSEC');
    case 30: return nsec(p, 'NSEC');
    case 44: {
      const alg = p.uint(p.next(), 8, 'bad SSHFP Algorithm');
      const t = p.uint(p.field(), 8, 'bad SSHFP Type');
      p.next();
      const fp = decodeHex(p.ending('bad SSHFP Fingerprint'));
      if (!fp) throw new RdataError('bad SSHFP Fingerprint', null);
      return { rdata: Buffer.concat([u8(alg), u8(t), fp]) };
    }
    case 52:
    case 53: {
      const tname = type === 52 ? 'TLSA' : 'SMIMEA';
      const usage = p.uint(p.next(), 8, `bad ${tname} Usage`);
      const sel = p.uint(p.field(), 8, `bad ${tname} Selector`);
      const mt = p.uint(p.field(), 8, `bad ${tname} MatchingType`);
      const cert = decodeHex(p.ending(`bad ${tname} Certificate`));
      if (!cert) throw new RdataError(`bad ${tname} Certificate`, null);
      return { rdata: Buffer.concat([u8(usage), u8(sel), u8(mt), cert]) };
    }
    case 61:
    case 49: {
      const tname = type === 61 ? 'OPENPGPKEY' : 'DHCID';
      const s = p.ending(`bad ${tname} ${type === 61 ? 'PublicKey' : 'Digest'}`);
      const b = decodeBase64(s);
      if (!b) throw new RdataError(`bad ${tname} ${type === 61 ? 'PublicKey' : 'Digest'}`, null);
      return { rdata: b };
    }
    case 64:
    case 65:
      return svcb(p);
    case 50:
    case 51:
      // Read (and dropped with CoreDNS's error when the zone is built): NSEC3 zones are not served.
      p.ending(`bad ${type === 50 ? 'NSEC3' : 'NSEC3PARAM'}`);
      return { rdata: Buffer.alloc(0) };
    default:
      return undefined;
  }
}

function ipv6Bytes(text: string): Buffer {
  let s = text;
  const out = Buffer.alloc(16);
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  let tail: number[] = [];
  if (v4) {
    tail = v4[1]!.split('.').map(Number);
    const hi = (tail[0]! << 8) | tail[1]!;
    const lo = (tail[2]! << 8) | tail[3]!;
    s = `${s.slice(0, -v4[1]!.length)}${hi.toString(16)}:${lo.toString(16)}`;
  }
  const [head, rest] = s.includes('::') ? (s.split('::') as [string, string]) : [s, undefined];
  const h = head === '' ? [] : head.split(':');
  const r = rest === undefined || rest === '' ? [] : rest.split(':');
  const groups = rest === undefined ? h : [...h, ...Array<string>(8 - h.length - r.length).fill('0'), ...r];
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

// ---- The parser ------------------------------------------------------------------------------

export interface ZoneParseOptions {
  /** Initial origin (absolute). */
  readonly origin: string;
  /** File name for messages and for resolving `$INCLUDE` paths. */
  readonly file: string;
  /** Read an `$INCLUDE`d file (bytes as latin1 text); throws like fs.readFileSync. Without it `$INCLUDE` is refused. */
  readonly include?: (path: string) => string;
}

const MAX_INCLUDE_DEPTH = 7;

interface Header {
  name: string;
  type: number;
  class: number;
  ttl: number;
}

interface DefTtl {
  ttl: number;
  byDirective: boolean;
}

/**
 * Parse master-file text (as latin1: one char per byte) into records. Throws ZoneFileError on the
 * first syntax error, as miekg/dns stops there.
 */
export function parseZoneText(text: string, opts: ZoneParseOptions): ZoneRecord[] {
  const out: ZoneRecord[] = [];
  parseInto(text, opts.origin, opts.file, opts, 0, { def: null }, out);
  return out;
}

/**
 * The records read before the first syntax error, and that error (null when none): miekg/dns hands
 * out records one by one, so a caller sees (and may reject) the records before a later error first.
 */
export function parseZoneRecords(text: string, opts: ZoneParseOptions): { records: ZoneRecord[]; error: ZoneFileError | null } {
  const records: ZoneRecord[] = [];
  try {
    parseInto(text, opts.origin, opts.file, opts, 0, { def: null }, records);
  } catch (e) {
    if (e instanceof ZoneFileError) return { records, error: e };
    throw e;
  }
  return { records, error: null };
}

function parseInto(text: string, origin0: string, file: string, opts: ZoneParseOptions, depth: number, ttlState: { def: DefTtl | null }, out: ZoneRecord[], generating = false): void {
  const c = new ZLexer(text);
  let origin = origin0;
  const h: Header = { name: '', type: 0, class: 1, ttl: 0 };
  const fail = (reason: string, l: Lex): never => {
    throw new ZoneFileError(file, reason, l.token, l.line, l.column);
  };
  const setTtl = (l: Lex): void => {
    const ttl = ttlFromText(l.token);
    if (ttl === undefined) fail('not a TTL', l);
    h.ttl = ttl!;
    if (ttlState.def === null || !ttlState.def.byDirective) ttlState.def = { ttl: ttl!, byDirective: false };
  };
  const slurp = (): void => {
    let l = c.next()[0];
    if (l.value === V.Blank) {
      l = c.next()[0];
      if (l.value !== V.Newline && l.value !== V.EOF) fail('garbage after rdata', l);
    } else if (l.value !== V.Newline && l.value !== V.EOF) fail('garbage after rdata', l);
  };

  type St = 'ownerDir' | 'ownerBl' | 'any' | 'anyNoClassBl' | 'anyNoClass' | 'anyNoTTLBl' | 'anyNoTTL' | 'rrtypeBl' | 'rrtype' | 'rdata'
    | 'ttlBl' | 'ttl' | 'originBl' | 'origin' | 'includeBl' | 'include' | 'generateBl' | 'generate';
  let st: St = 'ownerDir';
  for (let [l, ok] = c.next(); ok; [l, ok] = c.next()) {
    if (l.err) fail(l.token, l);
    switch (st) {
      case 'ownerDir':
        if (ttlState.def !== null) h.ttl = ttlState.def.ttl;
        h.class = 1;
        switch (l.value) {
          case V.Newline: break;
          case V.Owner: {
            const n = toAbsolute(l.token, origin);
            if (n === undefined) fail('bad owner name', l);
            h.name = n!;
            st = 'ownerBl';
            break;
          }
          case V.DirTTL: st = 'ttlBl'; break;
          case V.DirOrigin: st = 'originBl'; break;
          case V.DirInclude: st = 'includeBl'; break;
          case V.DirGenerate: st = 'generateBl'; break;
          case V.Rrtype: h.type = l.torc; st = 'rdata'; break;
          case V.Class: h.class = l.torc; st = 'anyNoClassBl'; break;
          case V.Blank: break;
          case V.String: setTtl(l); st = 'anyNoTTLBl'; break;
          default: fail('syntax error at beginning', l);
        }
        break;
      case 'includeBl':
        if (l.value !== V.Blank) fail('no blank after $INCLUDE-directive', l);
        st = 'include';
        break;
      case 'include': {
        if (l.value !== V.String) fail('expecting $INCLUDE value, not this...', l);
        let newOrigin = origin;
        const [n] = c.next();
        if (n.value === V.Blank) {
          const [o] = c.next();
          if (o.value === V.String) {
            const abs = toAbsolute(o.token, origin);
            if (abs === undefined) fail('bad origin name', o);
            newOrigin = abs!;
          }
        } else if (n.value !== V.Newline && n.value !== V.EOF) fail('garbage after $INCLUDE', n);
        if (!opts.include) fail('$INCLUDE directive not allowed', l);
        if (depth >= MAX_INCLUDE_DEPTH) fail('too deeply nested $INCLUDE', l);
        const path = isAbsolute(l.token) ? l.token : join(dirname(file), l.token);
        let sub: string;
        try {
          sub = opts.include!(path);
        } catch (e) {
          const as = path !== l.token ? ` as \`${path}'` : '';
          const err = e as NodeJS.ErrnoException;
          const why = err.code === 'ENOENT' ? 'no such file or directory' : err.code === 'EACCES' ? 'permission denied' : err.code === 'EISDIR' ? 'is a directory' : err.message;
          fail(`failed to open \`${l.token}'${as}: open ${path}: ${why}`, l);
        }
        // The included file starts with the current default TTL; its own $TTL stays inside it.
        parseInto(sub!, newOrigin, path, opts, depth + 1, { def: ttlState.def }, out);
        st = 'ownerDir';
        break;
      }
      case 'ttlBl':
        if (l.value !== V.Blank) fail('no blank after $TTL-directive', l);
        st = 'ttl';
        break;
      case 'ttl': {
        if (l.value !== V.String) fail('expecting $TTL value, not this...', l);
        slurp();
        const ttl = ttlFromText(l.token);
        if (ttl === undefined) fail('expecting $TTL value, not this...', l);
        ttlState.def = { ttl: ttl!, byDirective: true };
        st = 'ownerDir';
        break;
      }
      case 'originBl':
        if (l.value !== V.Blank) fail('no blank after $ORIGIN-directive', l);
        st = 'origin';
        break;
      case 'origin': {
        if (l.value !== V.String) fail('expecting $ORIGIN value, not this...', l);
        slurp();
        const n = toAbsolute(l.token, origin);
        if (n === undefined) fail('bad origin name', l);
        origin = n!;
        st = 'ownerDir';
        break;
      }
      case 'generateBl':
        if (l.value !== V.Blank) fail('no blank after $GENERATE-directive', l);
        st = 'generate';
        break;
      case 'generate': {
        if (generating) fail('nested $GENERATE directive not allowed', l);
        if (l.value !== V.String) fail('expecting $GENERATE value, not this...', l);
        const text = expandGenerate(c, l, fail);
        // The generated lines: same origin and file, no $GENERATE inside, default TTL 3600.
        parseInto(text, origin, file, opts, depth, { def: { ttl: 3600, byDirective: false } }, out, true);
        st = 'ownerDir';
        break;
      }
      case 'ownerBl':
        if (l.value !== V.Blank) fail('no blank after owner', l);
        st = 'any';
        break;
      case 'any':
        switch (l.value) {
          case V.Rrtype:
            if (ttlState.def === null) fail('missing TTL with no previous value', l);
            h.type = l.torc;
            st = 'rdata';
            break;
          case V.Class: h.class = l.torc; st = 'anyNoClassBl'; break;
          case V.String: setTtl(l); st = 'anyNoTTLBl'; break;
          default: fail('expecting RR type, TTL or class, not this...', l);
        }
        break;
      case 'anyNoClassBl':
        if (l.value !== V.Blank) fail('no blank before class', l);
        st = 'anyNoClass';
        break;
      case 'anyNoTTLBl':
        if (l.value !== V.Blank) fail('no blank before TTL', l);
        st = 'anyNoTTL';
        break;
      case 'anyNoTTL':
        switch (l.value) {
          case V.Class: h.class = l.torc; st = 'rrtypeBl'; break;
          case V.Rrtype: h.type = l.torc; st = 'rdata'; break;
          default: fail('expecting RR type or class, not this...', l);
        }
        break;
      case 'anyNoClass':
        switch (l.value) {
          case V.String: setTtl(l); st = 'rrtypeBl'; break;
          case V.Rrtype: h.type = l.torc; st = 'rdata'; break;
          default: fail('expecting RR type or TTL, not this...', l);
        }
        break;
      case 'rrtypeBl':
        if (l.value !== V.Blank) fail('no blank before RR type', l);
        st = 'rrtype';
        break;
      case 'rrtype':
        if (l.value !== V.Rrtype) fail('unknown RR type', l);
        h.type = l.torc;
        st = 'rdata';
        break;
      case 'rdata': {
        // `l` is the blank after the type; the RDATA follows.
        const peek = c.peek();
        if (peek.token === '') {
          // No RDATA at all (miekg/dns reads it as a dynamic-update record with empty RDATA).
          slurp();
          out.push(record(h, { rdata: Buffer.alloc(0) }, file, l.line));
          st = 'ownerDir';
          break;
        }
        if (l.value === V.Newline) fail('unexpected newline', l);
        const p = new Rdata(c, origin);
        const line = l.line;
        let parsed: Parsed | undefined;
        try {
          if (peek.token === '\\#') parsed = generic(p);
          else {
            parsed = parseRdata(h.type, p);
            if (parsed === undefined) {
              fail(`clusterdns reads type ${typeName(h.type)} only in the RFC 3597 form (\\# LENGTH HEX)`, peek);
            }
          }
        } catch (e) {
          // miekg/dns: an error without a token of its own points at the token before the RDATA.
          if (e instanceof RdataError) fail(e.reason, e.lex && !isEmptyLex(e.lex) ? e.lex : l);
          throw e;
        }
        out.push(record(h, parsed!, file, line));
        st = 'ownerDir';
        break;
      }
    }
  }
}

/** `$GENERATE start-stop[/step] rest...`: the text of the generated lines (miekg/dns's generateReader). */
function expandGenerate(c: ZLexer, l: Lex, fail: (reason: string, l: Lex) => never): string {
  let token = l.token;
  let step = 1;
  const slash = token.indexOf('/');
  if (slash >= 0) {
    const st = token.slice(slash + 1);
    if (!/^[+-]?\d+$/.test(st) || Number(st) <= 0) fail('bad step in $GENERATE range', l);
    step = Number(st);
    token = token.slice(0, slash);
  }
  const dash = token.indexOf('-');
  if (dash < 0) fail('bad start-stop in $GENERATE range', l);
  const startStr = token.slice(0, dash);
  const endStr = token.slice(dash + 1);
  if (!/^[+-]?\d+$/.test(startStr)) fail('bad start in $GENERATE range', l);
  if (!/^[+-]?\d+$/.test(endStr)) fail('bad stop in $GENERATE range', l);
  const start = Number(startStr);
  const end = Number(endStr);
  if (end < 0 || start < 0 || end < start || Math.floor((end - start) / step) > 65535) fail('bad range in $GENERATE range', l);
  const [b] = c.next();
  if (b.value !== V.Blank) fail('garbage after $GENERATE range', b);
  let s = '';
  for (let [t, ok] = c.next(); ok; [t, ok] = c.next()) {
    if (t.err) fail('bad data in $GENERATE directive', t);
    if (t.value === V.Newline) break;
    s += t.token;
  }
  const lines: string[] = [];
  for (let cur = start; cur <= end; cur += step) {
    let line = '';
    let escape = false;
    for (let i = 0; i < s.length; i++) {
      const ch = s[i]!;
      if (ch === '\\') {
        if (escape) {
          escape = false;
          line += '\\';
        } else escape = true;
        continue;
      }
      if (ch === '$') {
        if (escape) {
          escape = false;
          line += '$';
          continue;
        }
        if (s[i + 1] === '$') {
          line += '$';
          i++;
          continue;
        }
        let base = 'd';
        let width = 0;
        let offset = 0;
        if (s[i + 1] === '{') {
          const close = s.indexOf('}', i + 2);
          // Errors point into the directive's text, as miekg/dns's generateReader reports them.
          const at = (endAt: number): Lex => ({ ...b, token: s.slice(i, endAt), column: b.column + i + 1 });
          if (close < 0) fail('bad modifier in $GENERATE', at(s.length));
          const parts = s.slice(i + 2, close).split(',');
          if (parts.length > 3) fail('bad modifier in $GENERATE', at(close + 1));
          base = parts[2] ?? 'd';
          if (!['o', 'd', 'x', 'X'].includes(base)) fail('bad base in $GENERATE', at(close + 1));
          if (!/^[+-]?\d+$/.test(parts[0]!)) fail('bad offset in $GENERATE', at(close + 1));
          offset = Number(parts[0]);
          const w = parts[1] ?? '0';
          if (!/^\d+$/.test(w) || Number(w) > 255) fail('bad width in $GENERATE', at(close + 1));
          width = Number(w);
          if (start + offset < 0 || end + offset > 2 ** 31 - 1) fail('bad offset in $GENERATE', at(close + 1));
          i = close;
        }
        const v = cur + offset;
        const neg = v < 0;
        let digits = Math.abs(v).toString(base === 'o' ? 8 : base === 'd' ? 10 : 16);
        if (base === 'X') digits = digits.toUpperCase();
        digits = digits.padStart(neg ? width - 1 : width, '0');
        line += neg ? `-${digits}` : digits;
        continue;
      }
      if (escape) {
        // miekg/dns drops an escaped character other than `\\` and `$`.
        escape = false;
        continue;
      }
      line += ch;
    }
    lines.push(line);
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}

function typeName(t: number): string {
  for (const [k, v] of Object.entries(TYPES)) if (v === t) return k;
  return `TYPE${t}`;
}

/** `\# LEN HEX...` (RFC 3597). */
function generic(p: Rdata): Parsed {
  let l = p.next();
  if (l.token !== '\\#') throw new RdataError('bad RFC3597 Rdata', l);
  l = p.field();
  const len = parseUint(l.token, 16);
  if (len === undefined || l.err) throw new RdataError('bad RFC3597 Rdata ', l);
  const hex = p.ending('bad RFC3597 Rdata');
  if (len * 2 !== hex.length) throw new RdataError('bad RFC3597 Rdata', l);
  const b = decodeHex(hex);
  if (!b) throw new RdataError('bad RFC3597 Rdata', l);
  return { rdata: b };
}

function record(h: Header, p: Parsed, file: string, line: number): ZoneRecord {
  const name = canonicalName(h.name) ?? h.name;
  const r: { -readonly [K in keyof ZoneRecord]: ZoneRecord[K] } = { name, type: h.type, class: h.class, ttl: h.ttl, rdata: p.rdata, file, line };
  const target = p.target !== undefined ? canonicalName(p.target) : undefined;
  if (target !== undefined) r.target = target;
  else if (p.rdata.length > 0) fillFromWire(r);
  if (p.covered !== undefined) r.covered = p.covered;
  if (p.serial !== undefined) r.serial = p.serial;
  if (r.type === 46 && r.covered === undefined && r.rdata.length >= 2) r.covered = r.rdata.readUInt16BE(0);
  if (r.type === 6 && r.serial === undefined) fillFromWire(r);
  return r;
}

/** Targets and serials of records given in the RFC 3597 form. */
function fillFromWire(r: { type: number; rdata: Buffer; target?: string; serial?: number }): void {
  const readName = (off: number): [string, number] | undefined => {
    const labels: Buffer[] = [];
    for (;;) {
      const len = r.rdata[off];
      if (len === undefined || len > 63) return undefined;
      if (len === 0) return [labelsText(labels), off + 1];
      labels.push(r.rdata.subarray(off + 1, off + 1 + len));
      off += len + 1;
    }
  };
  switch (r.type) {
    case 2: case 5: case 12: case 39: r.target = readName(0)?.[0]; break;
    case 15: case 64: case 65: r.target = readName(2)?.[0]; break;
    case 33: r.target = readName(6)?.[0]; break;
    case 6: {
      const a = readName(0);
      const b = a ? readName(a[1]) : undefined;
      if (b && r.rdata.length >= b[1] + 20) r.serial = r.rdata.readUInt32BE(b[1]);
      break;
    }
  }
  if (r.target === undefined) delete r.target;
}
