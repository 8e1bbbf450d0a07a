/**
 * Signing one zone file, as CoreDNS 1.15.0's plugin/sign (signer.go, file.go, nsec.go): the zone
 * is read without its DNSKEY, RRSIG, CDNSKEY and CDS records, the SOA serial becomes the signing
 * time, each key adds its DNSKEY, two CDS (SHA-1, SHA-256) and a CDNSKEY at the apex, every
 * authoritative name gets an NSEC to the next one in canonical order (TTL the SOA's minimum), and
 * every authoritative RRset but NS (the apex NS is signed apart) gets an RRSIG per key. The result
 * is written to a temporary file in the directory and renamed into place.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseZoneText } from '../../src/dns/zonefile/parser.js';
import { labelsText, nameLabels } from '../../src/dns/zonefile/names.js';
import type { ZoneRecord } from '../../src/dns/zonefile/record.js';
import { typeBitmap } from '../../src/dns/zonefile/fields.js';
import type { SigningKey } from '../../src/dnssec/keys.js';
import { lowerWireName, nameWire, signRRset, type WireRR } from '../../src/dnssec/rrsig.js';
import { canonicalKey, compareKeys } from '../../src/zone/elem.js';
import { recordText } from './rrtext.js';

const T = { NS: 2, CNAME: 5, SOA: 6, MX: 15, SRV: 33, DS: 43, RRSIG: 46, NSEC: 47, DNSKEY: 48, CDS: 59, CDNSKEY: 60 };

/** One record of the zone being signed: owner text (lower-cased as file.Zone.Insert does) and wire RDATA. */
interface Rec {
  readonly name: string;
  readonly type: number;
  readonly ttl: number;
  readonly rdata: Buffer;
}

/** The parts of a signed zone, in the order they are written. */
export interface SignedZone {
  readonly soa: Rec;
  readonly sigSoa: Rec[];
  readonly ns: Rec[];
  readonly sigNs: Rec[];
  /** Every other name in canonical order, each with its records. */
  readonly names: { name: string; recs: Rec[] }[];
  readonly serial: number;
}

/** What a signer needs: its zone, file, keys, output and the jitter chosen at setup. */
export interface SignerSpec {
  readonly origin: string;
  readonly dbfile: string;
  readonly keys: readonly SigningKey[];
  readonly directory: string;
  /** Seconds added to the inception (0 to -18 h) and to the expiration (0 to 5 days). */
  readonly jitterIncepS: number;
  readonly jitterExpirS: number;
}

const lower = (s: string): string => s.replace(/[A-Z]/g, (c) => c.toLowerCase());

/** file.Zone.Insert's lower-casing of the names in NS, CNAME, MX and SOA RDATA. */
function lowerRdata(type: number, rdata: Buffer): Buffer {
  if (type !== T.NS && type !== T.CNAME && type !== T.MX && type !== T.SOA) return rdata;
  const b = Buffer.from(rdata);
  if (type === T.MX) lowerWireName(b, 2);
  else {
    const end = lowerWireName(b, 0);
    if (type === T.SOA) lowerWireName(b, end);
  }
  return b;
}

function isSub(name: string, zone: string): boolean {
  return zone === '.' || name === zone || name.endsWith(`.${zone}`);
}

/** Read the zone as sign.Parse does; throws with CoreDNS's words for a zone without SOA. */
function parse(text: string, origin: string, file: string): { soa: Rec; ns: Rec[]; rest: Rec[] } {
  const recs: ZoneRecord[] = parseZoneText(text, {
    origin,
    file,
    include: (p) => readFileSync(p, 'latin1'),
  });
  let soa: Rec | null = null;
  const ns: Rec[] = [];
  const rest: Rec[] = [];
  for (const r of recs) {
    if (r.type === T.DNSKEY || r.type === T.RRSIG || r.type === T.CDNSKEY || r.type === T.CDS) continue;
    const name = r.type === T.SRV ? r.name : lower(r.name);
    if (!isSub(lower(name), origin)) continue; // file.Zone.Insert keeps only the zone's names
    const rec: Rec = { name, type: r.type, ttl: r.ttl, rdata: lowerRdata(r.type, r.rdata) };
    if (r.type === T.SOA) soa = rec;
    else if (r.type === T.NS && name === origin) ns.push(rec);
    else rest.push(rec);
  }
  if (soa === null) throw new Error(`file ${JSON.stringify(file)} has no SOA record`);
  return { soa, ns, rest };
}

function wireRR(r: Rec): WireRR {
  return { owner: nameWire(r.name), type: r.type, class: 1, ttl: r.ttl, rdata: r.rdata };
}

/** DNSKEY.ToDS(digest) RDATA: key tag, algorithm, digest type, digest of owner ‖ DNSKEY RDATA. */
function dsRdata(owner: string, key: SigningKey, digestType: 1 | 2): Buffer {
  const o = nameWire(owner);
  lowerWireName(o, 0);
  const digest = createHash(digestType === 1 ? 'sha1' : 'sha256')
    .update(Buffer.concat([o, key.rdata]))
    .digest();
  const head = Buffer.alloc(4);
  head.writeUInt16BE(key.tag, 0);
  head[2] = key.algorithm;
  head[3] = digestType;
  return Buffer.concat([head, digest]);
}

/** Sign the zone of `spec` at `nowS` (Unix seconds). */
export function signZone(spec: SignerSpec, nowS: number): SignedZone {
  const text = readFileSync(spec.dbfile, 'latin1');
  const { soa: soa0, ns, rest } = parse(text, spec.origin, spec.dbfile);
  const origin = spec.origin;
  const serial = Math.floor(nowS) >>> 0;
  const soaRdata = Buffer.from(soa0.rdata);
  soaRdata.writeUInt32BE(serial, soaRdata.length - 20);
  const soa: Rec = { ...soa0, rdata: soaRdata };
  const ttl = soa.ttl;
  const minTtl = soaRdata.readUInt32BE(soaRdata.length - 4);
  const inception = (Math.floor(nowS) - 3 * 3600 + Math.trunc(spec.jitterIncepS)) >>> 0;
  const expiration = (Math.floor(nowS) + 32 * 86400 + Math.trunc(spec.jitterExpirS)) >>> 0;

  for (const k of spec.keys) {
    rest.push({ name: origin, type: T.DNSKEY, ttl, rdata: k.rdata });
    rest.push({ name: origin, type: T.CDS, ttl, rdata: dsRdata(origin, k, 1) });
    rest.push({ name: origin, type: T.CDS, ttl, rdata: dsRdata(origin, k, 2) });
    rest.push({ name: origin, type: T.CDNSKEY, ttl, rdata: k.rdata });
  }

  // The tree: names in canonical order, each with its RRsets in insertion order.
  const byName = new Map<string, Map<number, Rec[]>>();
  for (const r of rest) {
    const key = lower(r.name);
    let m = byName.get(key);
    if (m === undefined) byName.set(key, (m = new Map()));
    const l = m.get(r.type);
    if (l === undefined) m.set(r.type, [r]);
    else if (!l.some((x) => x.rdata.equals(r.rdata))) l.push(r);
  }
  const ordered = [...byName.keys()]
    .map((n) => ({ n, key: canonicalKey(n) }))
    .sort((a, b) => compareKeys(a.key, b.key))
    .map((x) => x.n);

  // authwalk: a name below a delegation (a non-apex name with NS) is not authoritative.
  const delegations: string[] = [];
  const auth: string[] = [];
  for (const n of ordered) {
    const below = delegations.some((d) => n !== d && n.endsWith(`.${d}`));
    if (byName.get(n)!.has(T.NS) && n !== origin) delegations.push(n);
    if (!below) auth.push(n);
  }

  const sign = (rrs: Rec[], sttl: number): Rec[] =>
    spec.keys.map((k) => ({
      name: rrs[0]!.name,
      type: T.RRSIG,
      ttl: sttl,
      rdata: signRRset(rrs.map(wireRR), k, { signer: origin, origTtl: sttl, inception, expiration }),
    }));

  const sigSoa = sign([soa], ttl);
  const sigNs = ns.length > 0 ? sign(ns, ttl) : [];
  for (const [i, n] of auth.entries()) {
    const m = byName.get(n)!;
    const types = [...m.keys(), T.RRSIG, T.NSEC];
    if (n === origin) types.push(T.NS, T.SOA);
    const next = auth[(i + 1) % auth.length]!;
    const nsec: Rec = {
      name: m.values().next().value![0]!.name,
      type: T.NSEC,
      ttl: minTtl,
      rdata: Buffer.concat([nameWire(next), typeBitmap(types)]),
    };
    m.set(T.NSEC, [nsec]);
    const sigs: Rec[] = [];
    for (const [t, rrs] of m) {
      if (t === T.RRSIG || t === T.NS) continue;
      sigs.push(...sign(rrs, rrs[0]!.ttl));
    }
    const l = m.get(T.RRSIG);
    if (l === undefined) m.set(T.RRSIG, sigs);
    else l.push(...sigs);
  }
  return {
    soa,
    sigSoa,
    ns,
    sigNs,
    names: ordered.map((n) => ({ name: n, recs: [...byName.get(n)!.values()].flat() })),
    serial,
  };
}

/** The zone file text of a signed zone (file.go's write: SOA, its RRSIGs, NS, their RRSIGs, the tree). */
export function zoneText(z: SignedZone): string {
  const line = (r: Rec): string => `${recordText(r.name, r.type, r.ttl, r.rdata)}\n`;
  let s = line(z.soa);
  for (const r of z.sigSoa) s += line(r);
  for (const r of z.ns) s += line(r);
  for (const r of z.sigNs) s += line(r);
  for (const n of z.names) for (const r of n.recs) s += line(r);
  return s;
}

/** Write `text` to a temporary file in `dir` and rename it to `dir/file`. */
export function writeSigned(dir: string, file: string, text: string): void {
  const tmp = join(dir, `signed-${process.pid}-${randomBytes(6).toString('hex')}`);
  try {
    writeFileSync(tmp, text, 'latin1');
    renameSync(tmp, join(dir, file));
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** The text of an owner name (for messages). */
export function nameText(n: string): string {
  const l = nameLabels(n);
  return l === undefined ? n : labelsText(l);
}
