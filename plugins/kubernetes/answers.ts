/**
 * Precomputed replies. An entry is the complete reply for one lower-cased (qname, qtype), encoded
 * once with name compression: answer owners are pointers to the question at offset 12 and the SOA
 * owner/MNAME/RNAME point into the zone part of the question, so copying the client's question
 * bytes over the stored (lower-case) question makes the reply echo the client's letter case,
 * including the zone as spelled in the query (kubernetes-records.md §1). Per query only the id, the
 * flags, the question bytes and the SOA serial are patched.
 *
 * Entries remember which store objects they were computed from (dependency keys, see store.ts);
 * a store change drops exactly the entries that depend on the changed objects, and they are
 * recomputed on the next query. The map is bounded: past `max` entries it is emptied.
 */
import type { Answer } from 'dns-packet';
import { encodeFitted, encodeMessage } from '../../src/dns/encode.js';
import { Flag, Qtype, qtypeName } from '../../src/dns/constants.js';
import { cloneBuffer, copyBytes, forEachRecord } from '../../src/dns/wire.js';
import { toPacketName } from '../../src/dns/name.js';
import { decode, type Message } from '../../src/dns/message.js';

export interface Entry {
  /** Encoded reply with id 0, lower-case question, RCODE NOERROR or NXDOMAIN. */
  readonly wire: Buffer;
  /** Byte length of the question section in `wire` (name + type + class). */
  readonly qlen: number;
  readonly nameError: boolean;
  /** Offsets of SOA SERIAL fields to patch with the current serial. */
  readonly serialOffsets: readonly number[];
  /** Served since it was built (set by AnswerCache.lookup). */
  used?: boolean;
  /** Truncated variants for UDP clients with a smaller buffer, by byte limit (see `fitEntry`). */
  fitted?: Map<number, Entry>;
}

/**
 * The entry cut to `max` bytes as the server would cut it (whole records dropped, TC set),
 * computed once per limit: a large headless answer to a 512-byte client is then a copy like any
 * other hit instead of a decode and re-encode per query.
 */
export function fitEntry(e: Entry, max: number): Entry {
  if (e.wire.length <= max) return e;
  e.fitted ??= new Map();
  let f = e.fitted.get(max);
  if (!f) {
    const wire = encodeFitted(decode(e.wire), max).buf;
    f = { wire, qlen: e.qlen, nameError: e.nameError, serialOffsets: soaSerialOffsets(wire) };
    e.fitted.set(max, f);
  }
  return f;
}

/** Build a reply message (no OPT; the server adds EDNS). */
export function buildMessage(
  id: number,
  flags: number,
  qname: string,
  qtype: number,
  qclass: string,
  rcode: number,
  answers: Answer[],
  authority: Answer[],
  extra: Answer[],
): Message {
  return {
    id,
    type: 'response',
    flags: (flags & (0x7800 | Flag.RD | Flag.CD)) | Flag.AA | (rcode & 0xf),
    questions: [{ name: toPacketName(qname), type: qtypeName(qtype) as 'A', class: qclass as 'IN' }],
    answers,
    authorities: authority,
    additionals: extra,
  };
}

export function soaSerialOffsets(buf: Buffer): number[] {
  const out: number[] = [];
  forEachRecord(buf, (_s, _rr, typeOff) => {
    if (buf.readUInt16BE(typeOff) !== Qtype.SOA) return;
    const rdlen = buf.readUInt16BE(typeOff + 8);
    out.push(typeOff + 10 + rdlen - 20);
  });
  return out;
}

export function makeEntry(msg: Message, nameError: boolean): Entry {
  const wire = encodeMessage(msg);
  const q = msg.questions[0]!;
  const nameLen = q.name === '.' ? 1 : Buffer.byteLength(q.name) + 2;
  return { wire, qlen: nameLen + 4, nameError, serialOffsets: soaSerialOffsets(wire) };
}

/**
 * A negative reply (NXDOMAIN / NODATA) written directly: header, question (lower-case, replaced by
 * the client's bytes per query), and the zone SOA whose owner, MNAME and RNAME point into the zone
 * part of the question. Same bytes `encodeMessage` would produce, without its general machinery
 * (negative answers for ever-new names are the common cache miss: search-path expansion).
 * `lname`/`zone` are lower-case absolute names without escapes.
 */
export function negativeEntry(lname: string, qtype: number, zone: string, soaTtl: number, minimum: number, nameError: boolean): Entry {
  const nameLen = lname === '.' ? 1 : Buffer.byteLength(lname) + 1;
  const zoneOff = 12 + nameLen - (zone === '.' ? 1 : Buffer.byteLength(zone) + 1);
  const zoneRef = (buf: Buffer, off: number): number => {
    if (zone === '.') {
      buf[off] = 0;
      return off + 1;
    }
    buf.writeUInt16BE(0xc000 | zoneOff, off);
    return off + 2;
  };
  const buf = Buffer.alloc(12 + nameLen + 4 + 2 + 10 + 7 + 2 + 11 + 2 + 20 + 4);
  buf.writeUInt16BE(Flag.QR | Flag.AA | (nameError ? 3 : 0), 2);
  buf.writeUInt16BE(1, 4);
  buf.writeUInt16BE(1, 8);
  let off = 12;
  if (lname !== '.') {
    for (const label of lname.slice(0, -1).split('.')) {
      buf[off] = label.length;
      buf.write(label, off + 1, 'latin1');
      off += label.length + 1;
    }
  }
  buf[off++] = 0;
  buf.writeUInt16BE(qtype, off);
  buf.writeUInt16BE(1, off + 2);
  off += 4;
  off = zoneRef(buf, off);
  buf.writeUInt16BE(Qtype.SOA, off);
  buf.writeUInt16BE(1, off + 2);
  buf.writeUInt32BE(soaTtl >>> 0, off + 4);
  const rdlenAt = off + 8;
  off += 10;
  const rdStart = off;
  buf.write('\x02ns\x03dns', off, 'latin1');
  off = zoneRef(buf, off + 7);
  buf.write('\x0ahostmaster', off, 'latin1');
  off = zoneRef(buf, off + 11);
  const serialAt = off;
  buf.writeUInt32BE(0, off);
  buf.writeUInt32BE(7200, off + 4);
  buf.writeUInt32BE(1800, off + 8);
  buf.writeUInt32BE(86400, off + 12);
  buf.writeUInt32BE(minimum >>> 0, off + 16);
  off += 20;
  buf.writeUInt16BE(off - rdStart, rdlenAt);
  return { wire: buf.subarray(0, off), qlen: nameLen + 4, nameError, serialOffsets: [serialAt] };
}

/** Patch a copy of `e` for one query. `raw`/`questionEnd` are the client's packet and question end. */
export function materialize(e: Entry, id: number, reqFlags: number, raw: Buffer, questionEnd: number, rcode: number, serial: number): Buffer {
  const buf = cloneBuffer(e.wire);
  buf.writeUInt16BE(id, 0);
  // TC survives from a truncated (fitted) entry.
  buf.writeUInt16BE(Flag.QR | (reqFlags & (0x7800 | Flag.RD | Flag.CD)) | Flag.AA | (e.wire.readUInt16BE(2) & Flag.TC) | (rcode & 0xf), 2);
  copyBytes(raw, 12, questionEnd, buf, 12);
  for (const off of e.serialOffsets) buf.writeUInt32BE(serial >>> 0, off);
  return buf;
}

/**
 * Replies by (qtype, lower-cased name), with the objects each was computed from. Lookups go through
 * a map per qtype so the hot path needs no composite key string; the `type name` key is kept only
 * for bookkeeping (dependencies, rebuilding after a change).
 */
export class AnswerCache {
  private readonly byType = new Map<number, Map<string, Entry>>();
  private readonly byDep = new Map<string, Set<string>>();
  /** Keys (`qtype lname`) of replies served since they were built: rebuilt right after a change. */
  private readonly used = new Set<string>();
  private count = 0;

  constructor(readonly max = 100_000) {}

  get size(): number {
    return this.count;
  }

  /** The reply for a query, marking it as in use. */
  lookup(qtype: number, lname: string): Entry | undefined {
    const e = this.byType.get(qtype)?.get(lname);
    if (e !== undefined && !e.used) {
      e.used = true;
      this.used.add(keyOf(qtype, lname));
    }
    return e;
  }

  get(key: string): Entry | undefined {
    const sp = key.indexOf(' ');
    return this.byType.get(Number(key.slice(0, sp)))?.get(key.slice(sp + 1));
  }

  set(key: string, e: Entry, deps: ReadonlySet<string>): void {
    if (this.count >= this.max) this.clear();
    const sp = key.indexOf(' ');
    const qtype = Number(key.slice(0, sp));
    let m = this.byType.get(qtype);
    if (!m) this.byType.set(qtype, (m = new Map()));
    if (!m.has(key.slice(sp + 1))) this.count++;
    m.set(key.slice(sp + 1), e);
    for (const d of deps) {
      let s = this.byDep.get(d);
      if (!s) this.byDep.set(d, (s = new Set()));
      s.add(key);
    }
  }

  private delete(key: string): boolean {
    const sp = key.indexOf(' ');
    const m = this.byType.get(Number(key.slice(0, sp)));
    if (!m?.delete(key.slice(sp + 1))) return false;
    this.count--;
    return true;
  }

  /**
   * Drop every entry depending on one of `deps`; returns the keys of the dropped entries that
   * were in use (to be rebuilt).
   */
  invalidate(deps: ReadonlySet<string>): string[] {
    const dropped: string[] = [];
    for (const d of deps) {
      const keys = this.byDep.get(d);
      if (!keys) continue;
      this.byDep.delete(d);
      for (const k of keys) if (this.delete(k) && this.used.delete(k)) dropped.push(k);
    }
    return dropped;
  }

  clear(): void {
    this.byType.clear();
    this.byDep.clear();
    this.used.clear();
    this.count = 0;
  }
}

export function keyOf(qtype: number, lname: string): string {
  return `${qtype} ${lname}`;
}
