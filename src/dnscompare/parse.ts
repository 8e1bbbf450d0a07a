/**
 * A small, total wire-format reader for comparing replies: never throws, bounded work (every
 * loop advances through the buffer or is capped), and renders each record in a canonical
 * presentation form (names decompressed, rdata of the common types decoded, the rest as hex).
 */
import { qclassName, qtypeName } from '../dns/constants.js';

export interface WireRecord {
  /** Owner name as sent (absolute, escaped like miekg/dns prints it). */
  readonly name: string;
  readonly type: number;
  readonly class: number;
  readonly ttl: number;
  /** Canonical rdata text (names decompressed). */
  readonly rdata: string;
  /** `name class type rdata` without the TTL: the identity used for multiset comparison. */
  readonly key: string;
}

export interface WireOpt {
  readonly udpSize: number;
  readonly extRcode: number;
  readonly version: number;
  readonly do: boolean;
  /** Other flag bits of the OPT TTL field (Z), normally 0. */
  readonly z: number;
  /** Options as `code:hex` strings, in wire order. */
  readonly options: readonly string[];
}

export interface WireQuestion {
  readonly name: string;
  readonly type: number;
  readonly class: number;
}

export interface WireMessage {
  readonly id: number;
  /** The 16-bit flags word (QR, opcode, AA, TC, RD, RA, Z, AD, CD, low RCODE). */
  readonly flags: number;
  /** Full RCODE (low 4 bits from the header, high 8 from the OPT record). */
  readonly rcode: number;
  readonly questions: readonly WireQuestion[];
  readonly answer: readonly WireRecord[];
  readonly authority: readonly WireRecord[];
  /** Additional records without the OPT record. */
  readonly additional: readonly WireRecord[];
  readonly opt: WireOpt | null;
  /** Number of OPT records seen (more than one is malformed per RFC 6891). */
  readonly optCount: number;
  readonly size: number;
}

export type ParseOutcome =
  | { readonly ok: true; readonly msg: WireMessage }
  | { readonly ok: false; readonly error: string };

const HEX = '0123456789abcdef';
function hex(buf: Uint8Array, start: number, end: number): string {
  let s = '';
  for (let i = start; i < end; i++) s += HEX[buf[i]! >> 4]! + HEX[buf[i]! & 15]!;
  return s;
}

class ParseError {
  constructor(readonly message: string) {}
}

/** Read a possibly compressed name; returns the name text and the offset after it in this run. */
function readName(buf: Buffer, start: number): [string, number] {
  let off = start;
  let end = -1;
  let jumps = 0;
  let total = 0;
  let name = '';
  for (;;) {
    if (off >= buf.length) throw new ParseError(`name at ${start} runs past the end`);
    const len = buf[off]!;
    if (len === 0) {
      if (end < 0) end = off + 1;
      break;
    }
    if ((len & 0xc0) === 0xc0) {
      if (off + 1 >= buf.length) throw new ParseError(`compression pointer at ${off} cut short`);
      if (end < 0) end = off + 2;
      const ptr = ((len & 0x3f) << 8) | buf[off + 1]!;
      if (++jumps > 126 || ptr >= buf.length) throw new ParseError(`bad compression pointer at ${off}`);
      off = ptr;
      continue;
    }
    if ((len & 0xc0) !== 0) throw new ParseError(`reserved label type at ${off}`);
    if (off + 1 + len > buf.length) throw new ParseError(`label at ${off} runs past the end`);
    total += len + 1;
    if (total > 255) throw new ParseError(`name at ${start} longer than 255 octets`);
    for (let i = off + 1; i <= off + len; i++) {
      const c = buf[i]!;
      if (c === 0x2e || c === 0x5c || c === 0x28 || c === 0x29 || c === 0x3b || c === 0x22 || c === 0x40 || c === 0x24)
        name += `\\${String.fromCharCode(c)}`;
      else if (c > 0x20 && c < 0x7f) name += String.fromCharCode(c);
      else name += `\\${c.toString().padStart(3, '0')}`;
    }
    name += '.';
    off += len + 1;
  }
  return [name === '' ? '.' : name, end];
}

function u16(buf: Buffer, off: number, end: number): number {
  if (off + 2 > end) throw new ParseError(`rdata cut short at ${off}`);
  return buf.readUInt16BE(off);
}

function u32(buf: Buffer, off: number, end: number): number {
  if (off + 4 > end) throw new ParseError(`rdata cut short at ${off}`);
  return buf.readUInt32BE(off);
}

/** A name inside rdata that must end exactly within the rdata. */
function rdName(buf: Buffer, off: number, end: number): [string, number] {
  const [n, next] = readName(buf, off);
  if (next > end) throw new ParseError(`name in rdata at ${off} runs past the rdata`);
  return [n, next];
}

function txtStrings(buf: Buffer, off: number, end: number): string {
  const parts: string[] = [];
  while (off < end) {
    const len = buf[off]!;
    if (off + 1 + len > end) throw new ParseError(`character-string at ${off} runs past the rdata`);
    let s = '';
    for (let i = off + 1; i <= off + len; i++) {
      const c = buf[i]!;
      if (c === 0x22 || c === 0x5c) s += `\\${String.fromCharCode(c)}`;
      else if (c >= 0x20 && c < 0x7f) s += String.fromCharCode(c);
      else s += `\\${c.toString().padStart(3, '0')}`;
    }
    parts.push(`"${s}"`);
    off += 1 + len;
  }
  return parts.join(' ');
}

function ipv6(buf: Buffer, off: number): string {
  const groups: string[] = [];
  for (let i = 0; i < 8; i++) groups.push(buf.readUInt16BE(off + i * 2).toString(16));
  // RFC 5952: compress the longest run (≥ 2) of zero groups.
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen && j - i >= 2) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (best < 0) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
}

function rdataText(buf: Buffer, type: number, off: number, rdlen: number): string {
  const end = off + rdlen;
  switch (type) {
    case 1: // A
      if (rdlen !== 4) throw new ParseError(`A rdata of ${rdlen} octets`);
      return `${buf[off]}.${buf[off + 1]}.${buf[off + 2]}.${buf[off + 3]}`;
    case 28: // AAAA
      if (rdlen !== 16) throw new ParseError(`AAAA rdata of ${rdlen} octets`);
      return ipv6(buf, off);
    case 2:
    case 5:
    case 12:
    case 39: {
      // NS CNAME PTR DNAME
      const [n, next] = rdName(buf, off, end);
      if (next !== end) throw new ParseError(`trailing octets after a name in rdata at ${off}`);
      return n;
    }
    case 15: {
      // MX
      const pref = u16(buf, off, end);
      const [n] = rdName(buf, off + 2, end);
      return `${pref} ${n}`;
    }
    case 33: {
      // SRV
      const prio = u16(buf, off, end);
      const weight = u16(buf, off + 2, end);
      const port = u16(buf, off + 4, end);
      const [n] = rdName(buf, off + 6, end);
      return `${prio} ${weight} ${port} ${n}`;
    }
    case 6: {
      // SOA
      const [mname, o1] = rdName(buf, off, end);
      const [rname, o2] = rdName(buf, o1, end);
      const nums: number[] = [];
      for (let i = 0; i < 5; i++) nums.push(u32(buf, o2 + i * 4, end));
      return `${mname} ${rname} ${nums.join(' ')}`;
    }
    case 16: // TXT
      return txtStrings(buf, off, end);
    default:
      return `\\# ${rdlen}${rdlen ? ` ${hex(buf, off, end)}` : ''}`;
  }
}

function parseOpt(buf: Buffer, off: number, ttl: number, udpSize: number, rdlen: number): WireOpt {
  const end = off + rdlen;
  const options: string[] = [];
  while (off < end) {
    if (off + 4 > end) throw new ParseError(`EDNS option header cut short at ${off}`);
    const code = buf.readUInt16BE(off);
    const len = buf.readUInt16BE(off + 2);
    if (off + 4 + len > end) throw new ParseError(`EDNS option ${code} runs past the OPT rdata`);
    options.push(`${code}:${hex(buf, off + 4, off + 4 + len)}`);
    off += 4 + len;
  }
  return {
    udpSize,
    extRcode: ttl >>> 24,
    version: (ttl >>> 16) & 0xff,
    do: (ttl & 0x8000) !== 0,
    z: ttl & 0x7fff,
    options,
  };
}

function parseUnsafe(buf: Buffer): WireMessage {
  if (buf.length < 12) throw new ParseError(`${buf.length} octets is shorter than a DNS header`);
  const id = buf.readUInt16BE(0);
  const flags = buf.readUInt16BE(2);
  const qd = buf.readUInt16BE(4);
  const counts = [buf.readUInt16BE(6), buf.readUInt16BE(8), buf.readUInt16BE(10)] as const;
  // Every question takes ≥ 5 octets and every record ≥ 11: reject impossible counts up front.
  if (12 + qd * 5 + (counts[0] + counts[1] + counts[2]) * 11 > buf.length) {
    throw new ParseError(
      `header counts qd=${qd} an=${counts[0]} ns=${counts[1]} ar=${counts[2]} do not fit in ${buf.length} octets`,
    );
  }
  let off = 12;
  const questions: WireQuestion[] = [];
  for (let i = 0; i < qd; i++) {
    const [name, next] = readName(buf, off);
    if (next + 4 > buf.length) throw new ParseError(`question ${i} cut short`);
    questions.push({ name, type: buf.readUInt16BE(next), class: buf.readUInt16BE(next + 2) });
    off = next + 4;
  }
  const sections: WireRecord[][] = [[], [], []];
  let opt: WireOpt | null = null;
  let optCount = 0;
  for (let s = 0; s < 3; s++) {
    for (let i = 0; i < counts[s]!; i++) {
      const [name, next] = readName(buf, off);
      if (next + 10 > buf.length) throw new ParseError(`record header cut short at ${next}`);
      const type = buf.readUInt16BE(next);
      const klass = buf.readUInt16BE(next + 2);
      const ttl = buf.readUInt32BE(next + 4);
      const rdlen = buf.readUInt16BE(next + 8);
      const rd = next + 10;
      if (rd + rdlen > buf.length) throw new ParseError(`rdata of ${name} ${qtypeName(type)} runs past the end`);
      if (type === 41) {
        if (s !== 2) throw new ParseError('OPT record outside the additional section');
        if (name !== '.') throw new ParseError(`OPT record owned by ${name}`);
        optCount++;
        if (!opt) opt = parseOpt(buf, rd, ttl, klass, rdlen);
      } else {
        const rdata = rdataText(buf, type, rd, rdlen);
        const key = `${name} ${qclassName(klass)} ${qtypeName(type)} ${rdata}`;
        sections[s]!.push({ name, type, class: klass, ttl, rdata, key });
      }
      off = rd + rdlen;
    }
  }
  if (off !== buf.length) throw new ParseError(`${buf.length - off} trailing octets after the last record`);
  return {
    id,
    flags,
    rcode: ((opt?.extRcode ?? 0) << 4) | (flags & 0xf),
    questions,
    answer: sections[0]!,
    authority: sections[1]!,
    additional: sections[2]!,
    opt,
    optCount,
    size: buf.length,
  };
}

/** Parse a DNS message. Never throws: garbage yields `{ ok: false, error }`. */
export function parseMessage(buf: Buffer): ParseOutcome {
  try {
    return { ok: true, msg: parseUnsafe(buf) };
  } catch (e) {
    if (e instanceof ParseError) return { ok: false, error: e.message };
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}

/** A record in presentation form: `name ttl class type rdata`. */
export function recordText(r: WireRecord): string {
  return `${r.name}\t${r.ttl}\t${qclassName(r.class)}\t${qtypeName(r.type)}\t${r.rdata}`;
}
