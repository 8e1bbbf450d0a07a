/**
 * On-line signing of one reply, as CoreDNS 1.15.0's `Dnssec.Sign` (plugin/dnssec/dnssec.go): the
 * reply's kind (response.Typify) decides between signing a delegation's DS (or proving it absent
 * with a black-lie NSEC), turning a denial into a signed NODATA with an NSEC black lie, and signing
 * every RRset of the three sections whose owner lies in one of the plugin's zones. Signatures come
 * from the signature cache (cache.ts) when it has them for the same RRset.
 */
import { matchZone } from '../../src/dns/name.js';
import { escapeLabelByte } from '../../src/dns/escape.js';
import type { MessageRecord } from '../../src/dns/wirerecords.js';
import { isKSK, isZSK, type SigningKey } from '../../src/dnssec/keys.js';
import { signRRset, validAt, type WireRR } from '../../src/dnssec/rrsig.js';
import { blackLieRdata, type DenialKind } from './blacklies.js';
import type { CachedSig, SignatureCache } from './cache.js';

/** The original TTL every on-line signature carries (CoreDNS's origTTL). */
export const ORIG_TTL = 3600;
const THREE_HOURS_S = 3 * 3600;
const EIGHT_DAYS_S = 8 * 24 * 3600;

const T_NS = 2,
  T_SOA = 6,
  T_OPT = 41,
  T_DS = 43,
  T_RRSIG = 46,
  T_NSEC = 47,
  T_DNSKEY = 48;

/** Inception three hours back, expiration eight days on (Unix seconds, as uint32). */
export function incepExpir(nowS: number): [number, number] {
  return [(nowS - THREE_HOURS_S) >>> 0, (nowS + EIGHT_DAYS_S) >>> 0];
}

/** The lower-cased text of a wire name (`a.b.`), for zone matching. */
export function lowerText(wire: Buffer): string {
  if (wire.length <= 1) return '.';
  let s = '';
  let off = 0;
  while (off < wire.length && wire[off] !== 0) {
    const len = wire[off]!;
    for (let i = off + 1; i <= off + len; i++) {
      const c = wire[i]!;
      s += escapeLabelByte(c >= 0x41 && c <= 0x5a ? c | 0x20 : c);
    }
    s += '.';
    off += len + 1;
  }
  return s;
}

/** The cache key of an RRset: every record's owner, type, class, TTL and RDATA (CoreDNS hashes rr.String()). */
export function rrsetKey(rrset: readonly WireRR[]): string {
  let s = '';
  for (const rr of rrset) {
    s += rr.owner.toString('latin1');
    s += String.fromCharCode(rr.type >> 8, rr.type & 0xff, rr.class >> 8, rr.class & 0xff);
    s += String.fromCharCode(rr.ttl >>> 24, (rr.ttl >>> 16) & 0xff, (rr.ttl >>> 8) & 0xff, rr.ttl & 0xff);
    s += rr.rdata.toString('latin1');
    s += '\u0100'; // record separator: no latin1 byte
  }
  return s;
}

/** What one signing did to the cache, for the metrics and the reply memo. */
export interface SignStats {
  hits: number;
  misses: number;
  /** Each RRset signed: its key and the signatures the cache held for it. */
  readonly used: { key: string; sigs: CachedSig[] }[];
}

/** A record to add to the reply: owner in wire form, RDATA uncompressed. */
export type NewRecord = CachedSig & { readonly type: number };

/** What signing changes in a reply. */
export interface SignedParts {
  readonly answer: NewRecord[];
  readonly authority: NewRecord[];
  readonly additional: NewRecord[];
  /** The new RCODE (a denial answered with an NSEC becomes NOERROR), or undefined. */
  rcode?: number;
  /** Replace the answer section by the last two records added to the authority and empty the latter (qtype NSEC). */
  moveToAnswer: boolean;
}

/** The parts of the reply being signed that Sign reads besides its records. */
export interface ReplyFacts {
  readonly rcode: number;
  readonly opcode: number;
  /** The reply's question: name in wire form (case as sent) and type. */
  readonly qname: Buffer;
  readonly qtype: number;
  /** The zone of the question (longest of the plugin's zones). */
  readonly zone: string;
}

type Kind = 'NOERROR' | 'NXDOMAIN' | 'NODATA' | 'SERVERERROR' | 'DELEGATION' | 'META' | 'UPDATE' | 'OTHERERROR';

/** response.Typify over the records, with its expired-signature check when the reply's OPT has DO. */
function typify(recs: readonly MessageRecord[], f: ReplyFacts, nowS: number): Kind {
  if (f.opcode === 5) return 'UPDATE';
  if (f.opcode === 4 || f.qtype === 252 || f.qtype === 251) return 'META';
  const opt = recs.find((r) => r.section === 2 && r.type === T_OPT);
  if (opt !== undefined && (opt.ttl & 0x8000) !== 0) {
    for (const r of recs) if (r.type === T_RRSIG && r.section !== 2 && !validAt(r.rdata, nowS)) return 'OTHERERROR';
    for (const r of recs) if (r.type === T_RRSIG && r.section === 2 && !validAt(r.rdata, nowS)) return 'OTHERERROR';
  }
  let answers = 0;
  let soa = false;
  let ns = 0;
  for (const r of recs) {
    if (r.section === 0) answers++;
    else if (r.section === 1) {
      if (r.type === T_SOA) soa = true;
      else if (r.type === T_NS) ns++;
    }
  }
  if (answers > 0 && f.rcode === 0) return 'NOERROR';
  if (soa && f.rcode === 0) return 'NODATA';
  if (soa && f.rcode === 3) return 'NXDOMAIN';
  if (f.rcode === 2 || f.rcode === 4) return 'SERVERERROR';
  if (ns > 0 && f.rcode === 0) return 'DELEGATION';
  if (f.rcode === 0) return 'NOERROR';
  return 'OTHERERROR';
}

/** RRsets of one section in first-seen order, RRSIG and OPT left out (rrSets in rrsig.go). */
function rrSets(recs: readonly MessageRecord[]): MessageRecord[][] {
  const by = new Map<string, MessageRecord[]>();
  for (const r of recs) {
    if (r.type === T_RRSIG || r.type === T_OPT) continue;
    const k = `${r.owner.toString('latin1')}/${r.type}`;
    const s = by.get(k);
    if (s === undefined) by.set(k, [r]);
    else s.push(r);
  }
  return [...by.values()];
}

export class ReplySigner {
  constructor(
    readonly zones: readonly string[],
    readonly keys: readonly SigningKey[],
    /** Both KSKs and ZSKs are configured: KSKs sign the DNSKEY RRset, ZSKs the rest. */
    readonly splitKeys: boolean,
    readonly cache: SignatureCache,
  ) {}

  /** The signatures of `rrset` by `signer` with RRSIG TTL `ttl`, from the cache or signed now. */
  sign(rrset: readonly WireRR[], signer: string, ttl: number, nowS: number, stats: SignStats): CachedSig[] {
    const key = rrsetKey(rrset);
    const hit = this.cache.get(key, nowS);
    if (hit !== undefined) {
      stats.hits++;
      stats.used.push({ key, sigs: hit });
      return hit;
    }
    stats.misses++;
    const [inception, expiration] = incepExpir(nowS);
    const dnskeySet = rrset[0]!.type === T_DNSKEY;
    const sigs: CachedSig[] = [];
    for (const k of this.keys) {
      if (this.splitKeys && (dnskeySet ? !isKSK(k) : !isZSK(k))) continue;
      const rdata = signRRset(rrset, k, { signer, origTtl: ORIG_TTL, inception, expiration });
      sigs.push({ owner: rrset[0]!.owner, class: rrset[0]!.class, ttl, rdata });
    }
    if (sigs.length > 0) this.cache.add(key, sigs);
    stats.used.push({ key, sigs });
    return sigs;
  }

  /** The black-lie NSEC for the question and its signatures, signatures first (as CoreDNS appends them). */
  private nsec(f: ReplyFacts, kind: DenialKind, ttl: number, nowS: number, stats: SignStats): NewRecord[] {
    const apex = lowerText(f.qname) === f.zone;
    const nsec: NewRecord = {
      owner: f.qname,
      type: T_NSEC,
      class: 1,
      ttl,
      rdata: blackLieRdata(f.qname, f.qtype, apex, kind),
    };
    const sigs = this.sign([nsec], f.zone, ttl, nowS, stats);
    return [...sigs.map((s) => ({ ...s, type: T_RRSIG })), nsec];
  }

  private signSets(recs: readonly MessageRecord[], nowS: number, stats: SignStats): NewRecord[] {
    const out: NewRecord[] = [];
    for (const set of rrSets(recs)) {
      const signer = matchZone(this.zones, lowerText(set[0]!.owner));
      if (signer === undefined) continue;
      for (const s of this.sign(set, signer, set[0]!.ttl, nowS, stats)) out.push({ ...s, type: T_RRSIG });
    }
    return out;
  }

  /** What Sign adds to and changes in the reply made of `recs`. */
  signReply(recs: readonly MessageRecord[], f: ReplyFacts, nowS: number, stats: SignStats): SignedParts {
    const parts: SignedParts = { answer: [], authority: [], additional: [], moveToAnswer: false };
    const kind = typify(recs, f, nowS);
    const ns = recs.filter((r) => r.section === 1);
    if (kind === 'DELEGATION') {
      if (ns.length === 0) return parts;
      const ttl = ns[0]!.ttl;
      const ds = ns.filter((r) => r.type === T_DS);
      if (ds.length === 0) parts.authority.push(...this.nsec(f, 'DELEGATION', ttl, nowS, stats));
      else for (const s of this.sign(ds, f.zone, ttl, nowS, stats)) parts.authority.push({ ...s, type: T_RRSIG });
      return parts;
    }
    if (kind === 'NXDOMAIN' || kind === 'NODATA') {
      if (ns.length !== 1 || ns[0]!.type !== T_SOA) return parts;
      const ttl = ns[0]!.ttl;
      for (const s of this.sign(ns, f.zone, ttl, nowS, stats)) parts.authority.push({ ...s, type: T_RRSIG });
      parts.authority.push(...this.nsec(f, kind, ttl, nowS, stats));
      if (parts.authority.length > 0) {
        parts.rcode = 0;
        if (f.qtype === T_NSEC) parts.moveToAnswer = true;
      }
      return parts;
    }
    parts.answer.push(
      ...this.signSets(
        recs.filter((r) => r.section === 0),
        nowS,
        stats,
      ),
    );
    parts.authority.push(...this.signSets(ns, nowS, stats));
    parts.additional.push(
      ...this.signSets(
        recs.filter((r) => r.section === 2),
        nowS,
        stats,
      ),
    );
    return parts;
  }
}
