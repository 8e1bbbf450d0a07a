/**
 * NSEC "black lies" (draft-valsorda-dnsop-black-lies): the NSEC record CoreDNS's dnssec plugin
 * puts in NXDOMAIN and NODATA answers (which then become NODATA), and in unsigned delegations.
 * The owner is the question's name, the next name `\000.<qname>`, and the type bitmap one of three
 * fixed lists with the asked type taken out for denials — exactly as plugin/dnssec/black_lies.go.
 */
import { Qtype } from '../../src/dns/constants.js';
import { typeBitmap } from '../../src/dns/zonefile/fields.js';

/** The reply kinds the bitmap choice depends on (response.Typify's names). */
export type DenialKind = 'NXDOMAIN' | 'NODATA' | 'DELEGATION';

const A = 1,
  NS = 2,
  SOA = 6,
  HINFO = 13,
  MX = 15,
  TXT = 16,
  AAAA = 28,
  LOC = 29,
  SRV = 33,
  CERT = 37,
  SSHFP = 44,
  RRSIG = 46,
  NSEC = 47,
  DNSKEY = 48,
  TLSA = 52,
  HIP = 55,
  OPENPGPKEY = 61,
  SPF = 99;

const DELEGATION = [A, NS, HINFO, TXT, AAAA, LOC, SRV, CERT, SSHFP, RRSIG, NSEC, TLSA, HIP, OPENPGPKEY, SPF];
const ZONE = [A, HINFO, TXT, AAAA, LOC, SRV, CERT, SSHFP, RRSIG, NSEC, TLSA, HIP, OPENPGPKEY, SPF];
const APEX = [A, NS, SOA, HINFO, MX, TXT, AAAA, LOC, SRV, CERT, SSHFP, RRSIG, NSEC, DNSKEY, TLSA, HIP, OPENPGPKEY, SPF];

/** filter14/filter18: for a denial, the bitmap without the asked type (unless it is NSEC). */
function filtered(qtype: number, bitmap: readonly number[], kind: DenialKind): readonly number[] {
  if ((kind !== 'NODATA' && kind !== 'NXDOMAIN') || qtype === Qtype.NSEC) return bitmap;
  const i = bitmap.indexOf(qtype);
  return i < 0 ? bitmap : [...bitmap.slice(0, i), ...bitmap.slice(i + 1)];
}

/** The encoded bitmaps, computed once per (list, left-out type). */
const encoded = new Map<string, Buffer>();
function bitmapWire(types: readonly number[]): Buffer {
  const key = types.join(',');
  let b = encoded.get(key);
  if (b === undefined) {
    b = typeBitmap([...types]);
    encoded.set(key, b);
  }
  return b;
}

/** The types of the black-lie NSEC for a question (`apex`: the qname is the zone's apex). */
export function blackLieTypes(qtype: number, apex: boolean, kind: DenialKind): readonly number[] {
  if (apex) return filtered(qtype, APEX, kind);
  if (kind === 'DELEGATION' || qtype === Qtype.DS) return DELEGATION;
  return filtered(qtype, ZONE, kind);
}

/**
 * The NSEC RDATA: next name (`qname` in wire form, owner case kept) and bitmap. The next name is
 * `\000.<qname>`, except for a delegation (not at the apex) where `\000` is appended to the first
 * label, and the root where it is `\000.`.
 */
export function blackLieRdata(qnameWire: Buffer, qtype: number, apex: boolean, kind: DenialKind): Buffer {
  let next: Buffer;
  if (qnameWire.length === 1) next = Buffer.of(1, 0, 0);
  else if (!apex && kind === 'DELEGATION') {
    const len = qnameWire[0]!;
    next = Buffer.concat([
      Buffer.of(len + 1),
      qnameWire.subarray(1, 1 + len),
      Buffer.of(0),
      qnameWire.subarray(1 + len),
    ]);
  } else next = Buffer.concat([Buffer.of(1, 0), qnameWire]);
  return Buffer.concat([next, bitmapWire(blackLieTypes(qtype, apex, kind))]);
}
