/**
 * The answer records of a received DNS message as zone records (src/dns/zonefile/record.ts), for
 * a zone pulled by AXFR (src/dns/axfr.ts): owner names in canonical text, RDATA in uncompressed
 * wire form. A primary may compress the names inside RDATA (BIND does for NS, SOA, CNAME, MX, …);
 * they are expanded here, as miekg/dns's unpacking does, so the zone stores the same bytes a zone
 * file would give.
 */
import { labelsText } from './zonefile/names.js';
import { record, type ZoneRecord } from './zonefile/record.js';

/** A message that could not be read (miekg/dns's unpack errors, in its words where it has them). */
export class WireError extends Error {}

/** The header fields an AXFR client checks. */
export interface WireHeader {
  readonly id: number;
  readonly rcode: number;
  readonly qdcount: number;
  readonly ancount: number;
}

export function readHeader(msg: Buffer): WireHeader {
  if (msg.length < 12) throw new WireError('dns: overflow unpacking uint16');
  return {
    id: msg.readUInt16BE(0),
    rcode: msg[3]! & 0xf,
    qdcount: msg.readUInt16BE(4),
    ancount: msg.readUInt16BE(6),
  };
}

/** A name at `off` (pointers followed, at most 128 of them); its labels and the offset after it in place. */
function readName(msg: Buffer, off: number): { labels: Buffer[]; end: number } {
  const labels: Buffer[] = [];
  let end = -1;
  let hops = 0;
  let total = 1;
  for (;;) {
    if (off >= msg.length) throw new WireError('dns: buffer size too small');
    const len = msg[off]!;
    if (len === 0) {
      if (end < 0) end = off + 1;
      return { labels, end };
    }
    if ((len & 0xc0) === 0xc0) {
      if (off + 1 >= msg.length) throw new WireError('dns: buffer size too small');
      if (++hops > 128) throw new WireError('dns: too many compression pointers');
      if (end < 0) end = off + 2;
      off = ((len & 0x3f) << 8) | msg[off + 1]!;
      continue;
    }
    if ((len & 0xc0) !== 0) throw new WireError('dns: bad rdata');
    if (off + 1 + len > msg.length) throw new WireError('dns: buffer size too small');
    total += len + 1;
    if (total > 255) throw new WireError('dns: domain name exceeded 255 wire-format octets');
    labels.push(msg.subarray(off + 1, off + 1 + len));
    off += len + 1;
  }
}

function nameWire(labels: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [];
  for (const l of labels) parts.push(Buffer.of(l.length), l);
  parts.push(Buffer.of(0));
  return Buffer.concat(parts);
}

/**
 * Where the names sit in the RDATA of the types whose names miekg/dns unpacks with pointers
 * followed: a list of fields, each a name (`n`) or a fixed number of bytes; the rest of the RDATA
 * after the last field is copied as it is.
 */
const NAME_LAYOUT: Readonly<Record<number, readonly ('n' | number)[]>> = {
  2: ['n'], // NS
  3: ['n'], // MD
  4: ['n'], // MF
  5: ['n'], // CNAME
  6: ['n', 'n'], // SOA (then the five counters)
  7: ['n'], // MB
  8: ['n'], // MG
  9: ['n'], // MR
  12: ['n'], // PTR
  14: ['n', 'n'], // MINFO
  15: [2, 'n'], // MX
  17: ['n', 'n'], // RP
  18: [2, 'n'], // AFSDB
  21: [2, 'n'], // RT
  26: [2, 'n', 'n'], // PX
  33: [6, 'n'], // SRV
  36: [2, 'n'], // KX
  39: ['n'], // DNAME
  46: [18, 'n'], // RRSIG (then the signature)
  47: ['n'], // NSEC (then the type bitmap)
};

/** The RDATA at `off..end` with its names expanded (a copy). */
function expandRdata(msg: Buffer, type: number, off: number, end: number): Buffer {
  const layout = NAME_LAYOUT[type];
  if (layout === undefined) return Buffer.from(msg.subarray(off, end));
  const parts: Buffer[] = [];
  let at = off;
  for (const f of layout) {
    if (at >= end) break;
    if (f === 'n') {
      const n = readName(msg, at);
      if (n.end > end) throw new WireError('dns: bad rdata');
      parts.push(nameWire(n.labels));
      at = n.end;
    } else {
      if (at + f > end) throw new WireError('dns: bad rdata');
      parts.push(msg.subarray(at, at + f));
      at += f;
    }
  }
  parts.push(msg.subarray(at, end));
  return Buffer.concat(parts);
}

/** Skip the question section; the offset of the first answer. */
function skipQuestions(msg: Buffer, count: number): number {
  let off = 12;
  for (let i = 0; i < count; i++) {
    off = readName(msg, off).end + 4;
    if (off > msg.length) throw new WireError('dns: buffer size too small');
  }
  return off;
}

/**
 * The answer section of `msg` as zone records (`file` names where they came from, for errors).
 * Throws WireError on a message that does not parse.
 */
export function answerRecords(msg: Buffer, file: string): ZoneRecord[] {
  const h = readHeader(msg);
  let off = skipQuestions(msg, h.qdcount);
  const out: ZoneRecord[] = [];
  for (let i = 0; i < h.ancount; i++) {
    const owner = readName(msg, off);
    off = owner.end;
    if (off + 10 > msg.length) throw new WireError('dns: buffer size too small');
    const type = msg.readUInt16BE(off);
    const klass = msg.readUInt16BE(off + 2);
    const ttl = msg.readUInt32BE(off + 4);
    const rdlength = msg.readUInt16BE(off + 8);
    off += 10;
    if (off + rdlength > msg.length) throw new WireError('dns: overflow unpacking rdata');
    const rdata = expandRdata(msg, type, off, off + rdlength);
    off += rdlength;
    out.push(record({ name: labelsText(owner.labels), type, class: klass, ttl }, { rdata }, file, 0));
  }
  return out;
}

/** One record of a message: its section, owner in uncompressed wire form, RDATA names expanded. */
export interface MessageRecord {
  /** 0 answer, 1 authority, 2 additional. */
  readonly section: 0 | 1 | 2;
  readonly owner: Buffer;
  readonly type: number;
  readonly class: number;
  readonly ttl: number;
  readonly rdata: Buffer;
}

/** Every record of `msg`'s three sections in order (the OPT record included); throws WireError. */
export function messageRecords(msg: Buffer): MessageRecord[] {
  if (msg.length < 12) throw new WireError('dns: overflow unpacking uint16');
  const counts = [msg.readUInt16BE(6), msg.readUInt16BE(8), msg.readUInt16BE(10)];
  let off = skipQuestions(msg, msg.readUInt16BE(4));
  const out: MessageRecord[] = [];
  for (let s = 0; s < 3; s++) {
    for (let i = 0; i < counts[s]!; i++) {
      const owner = readName(msg, off);
      off = owner.end;
      if (off + 10 > msg.length) throw new WireError('dns: buffer size too small');
      const type = msg.readUInt16BE(off);
      const klass = msg.readUInt16BE(off + 2);
      const ttl = msg.readUInt32BE(off + 4);
      const rdlength = msg.readUInt16BE(off + 8);
      off += 10;
      if (off + rdlength > msg.length) throw new WireError('dns: overflow unpacking rdata');
      const rdata = expandRdata(msg, type, off, off + rdlength);
      off += rdlength;
      out.push({ section: s as 0 | 1 | 2, owner: nameWire(owner.labels), type, class: klass, ttl, rdata });
    }
  }
  return out;
}

/** The labels of an uncompressed wire-form name (as messageRecords gives owners). */
function wireLabels(name: Buffer): Buffer[] {
  const labels: Buffer[] = [];
  for (let at = 0; name[at]! !== 0; at += name[at]! + 1) labels.push(name.subarray(at + 1, at + 1 + name[at]!));
  return labels;
}

/**
 * Every record of `msg`, section by section (answer, authority, additional), as zone records: for
 * an RFC 2136 UPDATE, whose prerequisite and update sections are the answer and authority
 * sections. A record without RDATA (the CLASS ANY and NONE forms of UPDATE) keeps empty RDATA.
 * Throws WireError on a message that does not parse. Built on messageRecords (dnssec's reply
 * path) so the two read a message the same way; UPDATE messages are few and small, so turning the
 * owner back into text costs nothing that matters.
 */
export function sectionRecords(msg: Buffer, file: string): [ZoneRecord[], ZoneRecord[], ZoneRecord[]] {
  const out: [ZoneRecord[], ZoneRecord[], ZoneRecord[]] = [[], [], []];
  for (const r of messageRecords(msg)) {
    const name = labelsText(wireLabels(r.owner));
    const { type, ttl, rdata } = r;
    out[r.section].push(
      rdata.length === 0
        ? { name, type, class: r.class, ttl, rdata, file, line: 0 }
        : record({ name, type, class: r.class, ttl }, { rdata }, file, 0),
    );
  }
  return out;
}

/**
 * Uncompressed RDATA with the names in it lower-cased: two records are the same record (miekg's
 * IsDuplicate, which compares names without regard to case) when these bytes are equal.
 */
export function canonicalRdata(type: number, rdata: Buffer): Buffer {
  const layout = NAME_LAYOUT[type];
  if (layout === undefined) return rdata;
  const out = Buffer.from(rdata);
  let at = 0;
  for (const f of layout) {
    if (at >= out.length) break;
    if (f !== 'n') {
      at += f;
      continue;
    }
    while (at < out.length && out[at] !== 0) {
      const len = out[at]!;
      for (let i = at + 1; i <= at + len && i < out.length; i++) {
        const c = out[i]!;
        if (c >= 0x41 && c <= 0x5a) out[i] = c | 0x20;
      }
      at += len + 1;
    }
    at++;
  }
  return out;
}
