/**
 * The `round_robin` shuffle (docs/plugins.md, loadbalance): per section, an all-A or all-AAAA section
 * is randomly permuted; any other section becomes CNAMEs, other types, A/AAAA (shuffled), MX
 * (shuffled). `prefer` then moves preferred addresses first (stable).
 *
 * The common case — an answer section of A (or AAAA) records whose owners are compression
 * pointers — is done on the wire bytes by moving whole records; anything else is decoded.
 */
import type { Answer } from 'dns-packet';
import { Qtype } from '../../src/dns/constants.js';
import type { Message } from '../../src/dns/message.js';
import { contains, ipBytes, type Cidr } from './cidr.js';
import { skipName } from '../../src/dns/wire.js';

/** Fisher–Yates in place. */
export function shuffleInPlace<T>(a: T[]): void {
  for (let j = a.length - 1; j > 0; j--) {
    const p = Math.floor(Math.random() * (j + 1));
    if (p === j) continue;
    const t = a[j]!;
    a[j] = a[p]!;
    a[p] = t;
  }
}

function preferFirst<T>(items: T[], isPreferred: (x: T) => boolean): T[] {
  const yes: T[] = [];
  const no: T[] = [];
  for (const x of items) (isPreferred(x) ? yes : no).push(x);
  return yes.length === 0 || no.length === 0 ? items : [...yes, ...no];
}

interface WireRR {
  start: number;
  end: number;
  type: number;
  /** The owner is exactly a 2-byte compression pointer. */
  pointerOwner: boolean;
  rdata: number;
  rdlen: number;
}

function category(type: number): number {
  if (type === Qtype.CNAME) return 0;
  if (type === Qtype.A || type === Qtype.AAAA) return 2;
  if (type === Qtype.MX) return 3;
  return 1;
}

/**
 * Shuffle `buf` in place when every section is either an all-A/all-AAAA section of
 * pointer-owned records, or already in the final order with nothing to shuffle. Returns false
 * (buffer untouched) when the message needs decoding.
 */
export function shuffleWire(buf: Buffer, prefer: readonly Cidr[]): boolean {
  if (buf.length < 12) return false;
  const qd = buf.readUInt16BE(4);
  let off = 12;
  for (let i = 0; i < qd; i++) {
    const n = skipName(buf, off);
    if (n < 0) return false;
    off = n + 4;
  }
  const sections: WireRR[][] = [];
  for (const count of [buf.readUInt16BE(6), buf.readUInt16BE(8), buf.readUInt16BE(10)]) {
    const rrs: WireRR[] = [];
    for (let i = 0; i < count; i++) {
      const start = off;
      const t = skipName(buf, off);
      if (t < 0 || t + 10 > buf.length) return false;
      const rdlen = buf.readUInt16BE(t + 8);
      const end = t + 10 + rdlen;
      if (end > buf.length) return false;
      rrs.push({
        start,
        end,
        type: buf.readUInt16BE(t),
        pointerOwner: t - start === 2 && (buf[start]! & 0xc0) === 0xc0,
        rdata: t + 10,
        rdlen,
      });
      off = end;
    }
    sections.push(rrs);
  }
  const plan: (WireRR[] | null)[] = [];
  for (const rrs of sections) {
    if (rrs.length < 2) {
      plan.push(null);
      continue;
    }
    const first = rrs[0]!.type;
    if ((first === Qtype.A || first === Qtype.AAAA) && rrs.every((r) => r.type === first && r.pointerOwner)) {
      let order = rrs.slice();
      shuffleInPlace(order);
      if (prefer.length > 0)
        order = preferFirst(order, (r) => preferred(prefer, buf.subarray(r.rdata, r.rdata + r.rdlen)));
      plan.push(order);
      continue;
    }
    let addr = 0;
    let mx = 0;
    let last = -1;
    for (const r of rrs) {
      const c = category(r.type);
      if (c < last) return false; // needs reordering
      last = c;
      if (c === 2) addr++;
      if (c === 3) mx++;
    }
    if (addr >= 2 || mx >= 2) return false;
    plan.push(null);
  }
  for (let s = 0; s < 3; s++) {
    const order = plan[s];
    if (!order) continue;
    const rrs = sections[s]!;
    const from = rrs[0]!.start;
    const to = rrs[rrs.length - 1]!.end;
    const copy = Buffer.from(buf.subarray(from, to));
    let w = from;
    for (const r of order) {
      copy.copy(buf, w, r.start - from, r.end - from);
      w += r.end - r.start;
    }
  }
  return true;
}

function preferred(prefer: readonly Cidr[], addr: Uint8Array): boolean {
  for (const c of prefer) if (contains(c, addr)) return true;
  return false;
}

function isAddress(r: Answer): boolean {
  return r.type === 'A' || r.type === 'AAAA';
}

function recordPreferred(prefer: readonly Cidr[], r: Answer): boolean {
  const b = ipBytes(String((r as { data: unknown }).data));
  return b !== undefined && preferred(prefer, b);
}

/** The decoded form of the shuffle, for one section. */
export function shuffleSection(rrs: Answer[], prefer: readonly Cidr[]): Answer[] {
  if (rrs.length < 2) return rrs;
  const cname: Answer[] = [];
  const rest: Answer[] = [];
  let address: Answer[] = [];
  const mx: Answer[] = [];
  for (const r of rrs) {
    if (r.type === 'CNAME') cname.push(r);
    else if (isAddress(r)) address.push(r);
    else if (r.type === 'MX') mx.push(r);
    else rest.push(r);
  }
  shuffleInPlace(address);
  shuffleInPlace(mx);
  if (prefer.length > 0) address = preferFirst(address, (r) => recordPreferred(prefer, r));
  return [...cname, ...rest, ...address, ...mx];
}

export function shuffleMessage(msg: Message, prefer: readonly Cidr[]): void {
  msg.answers = shuffleSection(msg.answers, prefer);
  msg.authorities = shuffleSection(msg.authorities, prefer);
  msg.additionals = shuffleSection(msg.additionals, prefer);
}
