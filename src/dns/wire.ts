/**
 * Reading requests straight from the packet bytes: header, the single question and the EDNS OPT
 * record, with the checks of docs/corefile.md §7.2. No dns-packet object is built here: this runs for
 * every packet, and most answers never need one.
 */
import { Flag, Opcode, Qtype, Rcode } from './constants.js';
import { escapeLabelByte, isPlainLabelByte } from './escape.js';
import { lowerName } from './name.js';

export interface Edns {
  /** Advertised UDP payload size. */
  readonly udpSize: number;
  readonly version: number;
  readonly do: boolean;
  /** The 16-bit EDNS flags word (DO and the Z bits). */
  readonly flags: number;
  /** Raw option bytes (the OPT RDATA), possibly empty. */
  readonly options: Buffer;
}

export interface ParsedRequest {
  readonly id: number;
  /** Flags word of the request (QR, opcode, AA, TC, RD, RA, Z, AD, CD, RCODE). */
  readonly flags: number;
  readonly opcode: number;
  /** Question name as asked, absolute (`Example.ORG.`). */
  readonly name: string;
  /** Lower-cased question name. */
  readonly lname: string;
  readonly qtype: number;
  readonly qclass: number;
  /** Offset just past the question section. */
  readonly questionEnd: number;
  readonly edns: Edns | null;
  /**
   * Offset of the first TSIG RR in the additional section, -1 without one (src/dns/tsig.ts): the
   * only TSIG work a query pays for is this comparison while its records are skipped.
   */
  readonly tsigAt: number;
  /** The TSIG RR at `tsigAt` is the message's last RR, where RFC 8945 §4.2 puts it. */
  readonly tsigLast: boolean;
}

/** What to do with a packet that is not a well-formed query. */
export type Rejection =
  | { readonly kind: 'drop' }
  /** Reply with this RCODE; `header` says whether the question could be read (echo it) or not. */
  | {
      readonly kind: 'rcode';
      readonly rcode: number;
      readonly id: number;
      readonly flags: number;
      readonly questionEnd: number;
      readonly edns: Edns | null;
    };

export type ParseResult = { readonly kind: 'query'; readonly req: ParsedRequest } | Rejection;

const DROP: Rejection = { kind: 'drop' };

/** Read a name at `off`; returns [name-as-text, offset after the name in the current run] or null. */
export function readName(buf: Buffer, off: number): [string, number] | null {
  let name = '';
  let end = -1;
  let jumps = 0;
  let total = 0;
  for (;;) {
    if (off >= buf.length) return null;
    const len = buf[off]!;
    if (len === 0) {
      if (end < 0) end = off + 1;
      break;
    }
    if ((len & 0xc0) === 0xc0) {
      if (off + 1 >= buf.length) return null;
      if (end < 0) end = off + 2;
      const ptr = ((len & 0x3f) << 8) | buf[off + 1]!;
      if (++jumps > 126 || ptr >= off) return null; // loops and forward pointers
      off = ptr;
      continue;
    }
    if ((len & 0xc0) !== 0) return null; // reserved label types
    if (off + 1 + len > buf.length) return null;
    total += len + 1;
    if (total > 254) return null;
    for (let i = off + 1; i <= off + len; i++) name += escapeLabelByte(buf[i]!);
    name += '.';
    off += len + 1;
  }
  return [name === '' ? '.' : name, end];
}

/** Skip a (possibly compressed) name in the current run; returns the next offset or -1. */
export function skipName(buf: Buffer, off: number): number {
  let total = 0;
  for (;;) {
    if (off >= buf.length) return -1;
    const len = buf[off]!;
    if (len === 0) return off + 1;
    if ((len & 0xc0) === 0xc0) return off + 2 <= buf.length ? off + 2 : -1;
    if ((len & 0xc0) !== 0) return -1;
    total += len + 1;
    if (total > 254) return -1;
    off += len + 1;
  }
}

// Scratch space for the question name fast path: filled and turned into a string within one call.
const scratch = Buffer.allocUnsafe(256);

/**
 * The common case of a question name: plain labels of printable characters that need no escaping,
 * no compression. Copies the name into a scratch buffer while checking it, so it becomes one
 * string. Returns null when the name needs the general reader. Such a name is as long on the wire
 * as its text plus one (`.` alone: one byte), which is how the caller finds where it ends.
 */
function readPlainName(buf: Buffer, off: number): string | null {
  let w = 0;
  for (;;) {
    if (off >= buf.length) return null;
    const len = buf[off]!;
    if (len === 0) break;
    if (len > 63 || off + 1 + len > buf.length || w + len + 1 > 254) return null;
    for (let i = off + 1, end = off + 1 + len; i < end; i++) {
      const c = buf[i]!;
      if (!isPlainLabelByte(c)) return null;
      scratch[w++] = c;
    }
    scratch[w++] = 0x2e;
    off += len + 1;
  }
  return w === 0 ? '.' : scratch.toString('latin1', 0, w);
}

/**
 * Write an absolute name of plain labels (no escapes) uncompressed at `off`; returns the offset
 * after it. Each label is written as UTF-8: a name read off the wire is ASCII (`readName` escapes
 * every other byte, `readPlainName` refuses them), so UTF-8 and latin1 agree there, and a name
 * from the Corefile (rewrite, template) is UTF-8 text whose bytes CoreDNS packs as they are.
 * `buf` must hold `Buffer.byteLength(name) + 1` bytes from `off`.
 */
export function writePlainName(name: string, buf: Buffer, off: number): number {
  if (name !== '.') {
    for (const label of name.slice(0, -1).split('.')) {
      const n = buf.write(label, off + 1, 'utf8');
      buf[off] = n;
      off += n + 1;
    }
  }
  buf[off] = 0;
  return off + 1;
}

/** Wire length of a name `readPlainName` returned. */
function plainNameLength(name: string): number {
  return name === '.' ? 1 : name.length + 1;
}

/**
 * Parse and check a request (docs/corefile.md §7.2). Unreadable header, or a response → drop; wrong
 * opcode → NOTIMP; bad counts or undecodable records → FORMERR. `allowUpdate`: a block of the
 * listener takes RFC 2136 UPDATE messages (dynupdate, CoreDNS's AllowOpcode), which have one
 * question (the zone) and any number of prerequisite, update and additional records.
 */
export function parseRequest(buf: Buffer, allowUpdate = false): ParseResult {
  if (buf.length < 12) return DROP;
  const id = buf.readUInt16BE(0);
  const flags = buf.readUInt16BE(2);
  if (flags & Flag.QR) return DROP;
  const opcode = (flags >> 11) & 0xf;
  const qd = buf.readUInt16BE(4);
  const an = buf.readUInt16BE(6);
  const ns = buf.readUInt16BE(8);
  const ar = buf.readUInt16BE(10);
  const formerr = (questionEnd = 12, edns: Edns | null = null): Rejection => ({
    kind: 'rcode',
    rcode: Rcode.FORMERR,
    id,
    flags,
    questionEnd,
    edns,
  });
  if (opcode === Opcode.UPDATE && allowUpdate) {
    if (qd !== 1) return formerr();
  } else if (opcode !== Opcode.QUERY && opcode !== Opcode.NOTIFY) {
    return { kind: 'rcode', rcode: Rcode.NOTIMP, id, flags, questionEnd: 12, edns: null };
  } else if (qd !== 1 || an > 1 || ns > 1 || ar > 2) return formerr();
  let name: string;
  let lname: string;
  let afterName: number;
  const plain = readPlainName(buf, 12);
  if (plain !== null) {
    name = plain;
    lname = lowerName(plain);
    afterName = 12 + plainNameLength(plain);
  } else {
    const nameRead = readName(buf, 12);
    if (!nameRead) return formerr();
    name = nameRead[0];
    afterName = nameRead[1];
    lname = lowerName(name);
  }
  if (afterName + 4 > buf.length) return formerr();
  const qtype = buf.readUInt16BE(afterName);
  const qclass = buf.readUInt16BE(afterName + 2);
  const questionEnd = afterName + 4;
  let off = questionEnd;
  let edns: Edns | null = null;
  let tsigAt = -1;
  let tsigLast = false;
  const rrs = an + ns + ar;
  for (let i = 0; i < rrs; i++) {
    const start = off;
    off = skipName(buf, off);
    if (off < 0 || off + 10 > buf.length) return formerr(questionEnd);
    const type = buf.readUInt16BE(off);
    const rdlen = buf.readUInt16BE(off + 8);
    if (off + 10 + rdlen > buf.length) return formerr(questionEnd);
    if (type === Qtype.OPT) {
      // OPT must be in the additional section, owned by the root, and appear once.
      if (i < an + ns || buf[start] !== 0 || edns) return formerr(questionEnd);
      const optData = buf.subarray(off + 10, off + 10 + rdlen);
      // Options must parse as code/length/value triples.
      let o = 0;
      while (o < optData.length) {
        if (o + 4 > optData.length) return formerr(questionEnd);
        o += 4 + optData.readUInt16BE(o + 2);
      }
      if (o !== optData.length) return formerr(questionEnd);
      edns = {
        udpSize: buf.readUInt16BE(off + 2),
        version: buf[off + 5]!,
        do: (buf.readUInt16BE(off + 6) & 0x8000) !== 0,
        flags: buf.readUInt16BE(off + 6),
        options: optData,
      };
    } else if (type === Qtype.TSIG && i >= an + ns && tsigAt < 0) {
      tsigAt = start;
      tsigLast = i === rrs - 1;
    }
    off += 10 + rdlen;
  }
  return {
    kind: 'query',
    req: { id, flags, opcode, name, lname, qtype, qclass, questionEnd, edns, tsigAt, tsigLast },
  };
}

/** Offset of the answer section start and the section counts of a reply, for in-place patching. */
export function sectionCounts(buf: Buffer): { an: number; ns: number; ar: number } {
  return { an: buf.readUInt16BE(6), ns: buf.readUInt16BE(8), ar: buf.readUInt16BE(10) };
}

/**
 * Walk every RR of a wire message, calling `fn(section, rrOffset, typeOffset)`; `typeOffset`
 * points at TYPE (TTL is at typeOffset+4, RDLENGTH at +8). Returns false if the message is malformed.
 */
export function forEachRecord(
  buf: Buffer,
  fn: (section: 0 | 1 | 2, rrOffset: number, typeOffset: number) => void,
): boolean {
  const qd = buf.readUInt16BE(4);
  let off = 12;
  for (let i = 0; i < qd; i++) {
    off = skipName(buf, off);
    if (off < 0) return false;
    off += 4;
  }
  for (let s = 0; s < 3; s++) {
    // The section's count, read from the header (no array of counts per call: a hot path's helper).
    const count = buf.readUInt16BE(6 + 2 * s);
    for (let i = 0; i < count; i++) {
      const start = off;
      off = skipName(buf, off);
      if (off < 0 || off + 10 > buf.length) return false;
      const rdlen = buf.readUInt16BE(off + 8);
      fn(s as 0 | 1 | 2, start, off);
      off += 10 + rdlen;
      if (off > buf.length) return false;
    }
  }
  return true;
}

/**
 * Copy `src[start, end)` to `dst` at `at`. For the few dozen bytes of a question this plain loop
 * is several times cheaper than `Buffer.prototype.copy`, whose argument checks dominate at that
 * size (it was 1–2 % of a cache hit's profile).
 */
export function copyBytes(src: Uint8Array, start: number, end: number, dst: Uint8Array, at: number): void {
  for (let i = start; i < end; i++) dst[at + i - start] = src[i]!;
}

/**
 * Reply bytes kept for a long time (cached and precomputed answers), as a latin1 string. A small
 * Buffer is a slice of Node's shared 8 KiB pool: kept for minutes among the short-lived replies
 * cut from the same slabs, each pins its whole slab (10,000 precomputed answers pinned 10 MiB of
 * slabs at 150k pods). A one-byte V8 string holds the same bytes plus 16, on the V8 heap, where
 * the GC moves and compacts it like any object; copying it back out is a memcpy.
 */
export type StoredBytes = string;

export function storeBytes(buf: Buffer): StoredBytes {
  return buf.toString('latin1');
}

/** A fresh Buffer (pool-backed) with the stored bytes. */
export function loadBytes(s: StoredBytes): Buffer {
  const buf = Buffer.allocUnsafe(s.length);
  buf.write(s, 0, s.length, 'latin1');
  return buf;
}

/** Big-endian 16-bit value at `off` of stored bytes. */
export function storedU16(s: StoredBytes, off: number): number {
  return (s.charCodeAt(off) << 8) | s.charCodeAt(off + 1);
}
