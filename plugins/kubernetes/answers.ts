/**
 * Precomputed replies. An entry is the complete reply for one lower-cased (qname, qtype), encoded
 * once with name compression: answer owners are pointers to the question at offset 12 and the SOA
 * owner/MNAME/RNAME point into the zone part of the question, so copying the client's question
 * bytes over the stored (lower-case) question makes the reply echo the client's letter case,
 * including the zone as spelled in the query (docs/records.md §1). Per query only the id, the
 * flags, the question bytes and the SOA serial are patched.
 *
 * Entries remember which store objects they were computed from (change keys, changekeys.ts);
 * a store change drops exactly the entries that depend on the changed objects, and they are
 * recomputed on the next query. The map is bounded: past `max` entries it is emptied.
 *
 * Every query thread keeps such a map for the names it serves (docs/multicore.md §2), so an entry
 * is kept small: one object per reply (the cache's bookkeeping lives on the entry, see Slot), no array
 * for a reply without an SOA or for one change key, and a short array rather than a Set for a
 * change key few replies depend on.
 */
import type { Answer } from 'dns-packet';
import { encodeFitted, encodeMessage } from '../../src/dns/encode.js';
import { Flag, Qtype, qtypeName } from '../../src/dns/constants.js';
import {
  forEachRecord,
  loadBytes,
  storeBytes,
  storedU16,
  writePlainName,
  type StoredBytes,
} from '../../src/dns/wire.js';
import { toPacketName } from '../../src/dns/name.js';
import { replayStored } from '../../src/dns/storedreply.js';
import { decode, type Message } from '../../src/dns/message.js';
import type { ChangeKey, ChangeSet } from './changekeys.js';

export interface Entry {
  /** Encoded reply with id 0, lower-case question, RCODE NOERROR or NXDOMAIN (see StoredBytes). */
  readonly wire: StoredBytes;
  /** Byte length of the question section in `wire` (name + type + class). */
  readonly qlen: number;
  readonly nameError: boolean;
  /** Offsets of SOA SERIAL fields to patch with the current serial. */
  readonly serialOffsets: readonly number[];
  /** Truncated variants for UDP clients with a smaller buffer, by byte limit (see `fitEntry`). */
  fitted?: Map<number, Entry>;
}

const NO_KEYS: readonly ChangeKey[] = Object.freeze([]);

/**
 * An entry as the functions below make it, with room for what an AnswerCache needs to find, drop
 * and rebuild it (set there when the entry is cached), so that a cached reply is one object.
 */
class Slot implements Entry {
  fitted?: Map<number, Entry> = undefined;
  qtype = 0;
  lname = '';
  /** The change keys it was computed from (to unlink it from all of them when dropped): one, or several. */
  deps: ChangeKey | readonly ChangeKey[] = NO_KEYS;
  /** Served since it was built: rebuilt right after a change instead of at the next query. */
  used = false;

  constructor(
    readonly wire: StoredBytes,
    readonly qlen: number,
    readonly nameError: boolean,
    readonly serialOffsets: readonly number[],
  ) {}
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
    const wire = encodeFitted(decode(loadBytes(e.wire)), max).buf;
    f = new Slot(storeBytes(wire), e.qlen, e.nameError, soaSerialOffsets(wire));
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

/** The offsets of a reply without an SOA record (most positive replies), shared by them all. */
const NO_OFFSETS: readonly number[] = Object.freeze([]);

export function soaSerialOffsets(buf: Buffer): readonly number[] {
  const out: number[] = [];
  forEachRecord(buf, (_s, _rr, typeOff) => {
    if (buf.readUInt16BE(typeOff) !== Qtype.SOA) return;
    const rdlen = buf.readUInt16BE(typeOff + 8);
    out.push(typeOff + 10 + rdlen - 20);
  });
  return out.length === 0 ? NO_OFFSETS : out;
}

export function makeEntry(msg: Message, nameError: boolean): Entry {
  const wire = encodeMessage(msg);
  const q = msg.questions[0]!;
  const nameLen = q.name === '.' ? 1 : Buffer.byteLength(q.name) + 2;
  return new Slot(storeBytes(wire), nameLen + 4, nameError, soaSerialOffsets(wire));
}

/**
 * A negative reply (NXDOMAIN / NODATA) written directly: header, question (lower-case, replaced by
 * the client's bytes per query), and the zone SOA whose owner, MNAME and RNAME point into the zone
 * part of the question. Same bytes `encodeMessage` would produce, without its general machinery
 * (negative answers for ever-new names are the common cache miss: search-path expansion).
 * `lname`/`zone` are lower-case absolute names without escapes.
 */
export function negativeEntry(
  lname: string,
  qtype: number,
  zone: string,
  soaTtl: number,
  minimum: number,
  nameError: boolean,
): Entry {
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
  let off = writePlainName(lname, buf, 12);
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
  return new Slot(storeBytes(buf.subarray(0, off)), nameLen + 4, nameError, [serialAt]);
}

/** Patch a copy of `e` for one query. `raw`/`questionEnd` are the client's packet and question end. */
export function materialize(
  e: Entry,
  id: number,
  reqFlags: number,
  raw: Buffer,
  questionEnd: number,
  rcode: number,
  serial: number,
): Buffer {
  // TC survives from a truncated (fitted) entry. The entry was built for this name: same length.
  const flags =
    Flag.QR | (reqFlags & (0x7800 | Flag.RD | Flag.CD)) | Flag.AA | (storedU16(e.wire, 2) & Flag.TC) | (rcode & 0xf);
  const buf = replayStored(e.wire, id, flags, raw, questionEnd, 12 + e.qlen);
  for (const off of e.serialOffsets) buf.writeUInt32BE(serial >>> 0, off);
  return buf;
}

/** The change keys of a slot, one or several. */
function depsOf(slot: Slot): readonly ChangeKey[] {
  return typeof slot.deps === 'string' ? [slot.deps] : (slot.deps as readonly ChangeKey[]);
}

/**
 * The slots of one change key: the slot itself when it is the only one (most keys), an array while
 * few (a Service's A, AAAA and SRV replies), a Set past {@link SMALL} (a namespace's key, which
 * every reply about a name in it depends on), so that dropping one of many stays cheap.
 */
type Dependents = Slot | Slot[] | Set<Slot>;
const SMALL = 8;

/**
 * Replies by (qtype, lower-cased name), with the objects each was computed from. Lookups go through
 * a map per qtype so the hot path needs no composite key string. Each change key maps to the
 * slots computed from it, a lone slot held as itself (most keys have one or two), so a change drops
 * exactly the replies it affects; a dropped slot is unlinked from all its keys.
 */
export class AnswerCache {
  private readonly byType = new Map<number, Map<string, Slot>>();
  private readonly byDep = new Map<ChangeKey, Dependents>();
  private count = 0;

  constructor(readonly max = 100_000) {}

  get size(): number {
    return this.count;
  }

  /** The reply for a query, marking it as in use. */
  lookup(qtype: number, lname: string): Entry | undefined {
    const slot = this.byType.get(qtype)?.get(lname);
    if (slot === undefined) return undefined;
    slot.used = true;
    return slot;
  }

  /** The reply without marking it as in use. */
  get(qtype: number, lname: string): Entry | undefined {
    return this.byType.get(qtype)?.get(lname);
  }

  /** Cache `entry` (made by this module, and cached once) for (qtype, lname). */
  set(qtype: number, lname: string, entry: Entry, deps: ChangeSet): void {
    let m = this.byType.get(qtype);
    const old = m?.get(lname);
    if (old) this.unlink(old);
    else {
      if (this.count >= this.max) {
        this.clear();
        m = undefined;
      }
      this.count++;
    }
    if (!m) this.byType.set(qtype, (m = new Map()));
    // A replaced reply that was in use stays in use (rebuilt after the next change).
    // The entry itself holds the bookkeeping (one object per reply); one made elsewhere is copied.
    const slot = entry instanceof Slot ? entry : new Slot(entry.wire, entry.qlen, entry.nameError, entry.serialOffsets);
    slot.qtype = qtype;
    slot.lname = lname;
    slot.deps = deps.size === 1 ? (deps.values().next().value as ChangeKey) : [...deps];
    slot.used = old?.used ?? false;
    m.set(lname, slot);
    for (const d of depsOf(slot)) {
      const cur = this.byDep.get(d);
      if (cur === undefined) this.byDep.set(d, slot);
      else if (cur instanceof Set) cur.add(slot);
      else if (Array.isArray(cur)) {
        if (cur.length < SMALL) cur.push(slot);
        else this.byDep.set(d, new Set([...cur, slot]));
      } else this.byDep.set(d, [cur, slot]);
    }
  }

  /** Remove `slot` from the dependency index. */
  private unlink(slot: Slot): void {
    for (const d of depsOf(slot)) {
      const cur = this.byDep.get(d);
      if (cur === slot) this.byDep.delete(d);
      else if (cur instanceof Set) {
        cur.delete(slot);
        if (cur.size === 1) this.byDep.set(d, cur.values().next().value as Slot);
        else if (cur.size === 0) this.byDep.delete(d);
      } else if (Array.isArray(cur)) {
        const i = cur.indexOf(slot);
        if (i < 0) continue;
        cur[i] = cur[cur.length - 1]!;
        cur.pop();
        if (cur.length === 1) this.byDep.set(d, cur[0]!);
      }
    }
  }

  /**
   * Drop every reply depending on one of `deps`; returns (qtype, lname) of the dropped replies
   * that were in use (to be rebuilt).
   */
  invalidate(deps: ChangeSet): { qtype: number; lname: string }[] {
    const dropped: { qtype: number; lname: string }[] = [];
    for (const d of deps) {
      const cur = this.byDep.get(d);
      if (cur === undefined) continue;
      for (const slot of cur instanceof Set || Array.isArray(cur) ? [...cur] : [cur]) {
        this.unlink(slot);
        const m = this.byType.get(slot.qtype)!;
        m.delete(slot.lname);
        this.count--;
        if (slot.used) dropped.push({ qtype: slot.qtype, lname: slot.lname });
      }
    }
    return dropped;
  }

  clear(): void {
    this.byType.clear();
    this.byDep.clear();
    this.count = 0;
  }
}
