/**
 * RRSIG records over RRsets (RFC 4034 §3, §6): the canonical form of an RRset (owner and the names
 * in the RDATA of the RFC 4034 §6.2 types lower-cased, the TTL replaced by the original TTL, RRs
 * sorted by RDATA and duplicates dropped) and its signature with node:crypto, as miekg/dns's
 * `RRSIG.Sign` computes them. Shared by *dnssec* (on-line) and *sign* (off-line).
 */
import { sign as cryptoSign } from 'node:crypto';
import { Alg, type SigningKey } from './keys.js';

/** One record to sign: the owner in uncompressed wire form and the RDATA with names uncompressed. */
export interface WireRR {
  /** Owner name in wire form (labels and the root byte), letter case as received. */
  readonly owner: Buffer;
  readonly type: number;
  readonly class: number;
  readonly ttl: number;
  readonly rdata: Buffer;
}

/** Where the names sit in the RDATA of the types whose names are lower-cased for signing (miekg's list). */
const LOWER_LAYOUT: Readonly<Record<number, readonly ('n' | number)[]>> = {
  2: ['n'], // NS
  3: ['n'], // MD
  4: ['n'], // MF
  5: ['n'], // CNAME
  6: ['n', 'n'], // SOA
  7: ['n'], // MB
  8: ['n'], // MG
  9: ['n'], // MR
  12: ['n'], // PTR
  14: ['n', 'n'], // MINFO
  15: [2, 'n'], // MX
  17: ['n', 'n'], // RP
  18: [2, 'n'], // AFSDB
  21: [2, 'n'], // RT
  24: [18, 'n'], // SIG
  26: [2, 'n', 'n'], // PX
  33: [6, 'n'], // SRV
  36: [2, 'n'], // KX
  39: ['n'], // DNAME
};

/** ASCII-lower-case the uncompressed wire name at `off` of `b` in place; the offset after it. */
export function lowerWireName(b: Buffer, off: number): number {
  while (off < b.length) {
    const len = b[off]!;
    if (len === 0) return off + 1;
    for (let i = off + 1; i <= off + len && i < b.length; i++) {
      const c = b[i]!;
      if (c >= 0x41 && c <= 0x5a) b[i] = c | 0x20;
    }
    off += len + 1;
  }
  return off;
}

/** Labels of a wire name, not counting a leading `*` (the RRSIG Labels field). */
export function rrsigLabels(owner: Buffer): number {
  let n = 0;
  let off = 0;
  while (off < owner.length && owner[off] !== 0) {
    n++;
    off += owner[off]! + 1;
  }
  if (owner[0] === 1 && owner[1] === 0x2a) n--;
  return n;
}

/** The RDATA with the names of its type lower-cased (a copy when anything may change). */
function canonicalRdata(type: number, rdata: Buffer): Buffer {
  if (type === 35) return canonicalNaptr(rdata);
  const layout = LOWER_LAYOUT[type];
  if (layout === undefined) return rdata;
  const out = Buffer.from(rdata);
  let at = 0;
  for (const f of layout) {
    if (at >= out.length) break;
    at = f === 'n' ? lowerWireName(out, at) : at + f;
  }
  return out;
}

/** NAPTR: order, preference, three character strings, then the replacement name. */
function canonicalNaptr(rdata: Buffer): Buffer {
  const out = Buffer.from(rdata);
  let at = 4;
  for (let i = 0; i < 3 && at < out.length; i++) at += out[at]! + 1;
  if (at < out.length) lowerWireName(out, at);
  return out;
}

/** The canonical wire form of one RR with TTL `origTtl`. */
function canonicalRR(rr: WireRR, origTtl: number): Buffer {
  const owner = Buffer.from(rr.owner);
  lowerWireName(owner, 0);
  const rdata = canonicalRdata(rr.type, rr.rdata);
  const b = Buffer.allocUnsafe(owner.length + 10 + rdata.length);
  owner.copy(b, 0);
  let off = owner.length;
  b.writeUInt16BE(rr.type, off);
  b.writeUInt16BE(rr.class, off + 2);
  b.writeUInt32BE(origTtl >>> 0, off + 4);
  b.writeUInt16BE(rdata.length, off + 8);
  rdata.copy(b, off + 10);
  off += 10;
  return b;
}

/** Sorted, de-duplicated canonical RRs of `rrset` (RFC 4034 §6.3: by RDATA). */
export function canonicalRRset(rrset: readonly WireRR[], origTtl: number): Buffer {
  const ownerLen = rrset[0]!.owner.length;
  const wires = rrset.map((rr) => canonicalRR(rr, origTtl));
  wires.sort((a, b) => Buffer.compare(a.subarray(ownerLen + 10), b.subarray(ownerLen + 10)));
  const keep: Buffer[] = [];
  for (let i = 0; i < wires.length; i++) if (i === 0 || !wires[i]!.equals(wires[i - 1]!)) keep.push(wires[i]!);
  return Buffer.concat(keep);
}

/** A name in lower-cased wire form from its text (absolute, `\DDD` and `\.` escapes). */
export function wireNameLower(name: string): Buffer {
  const b = nameWire(name);
  lowerWireName(b, 0);
  return b;
}

/** A name's wire form from its text (absolute or not; `\DDD` and `\X` escapes honoured). */
export function nameWire(name: string): Buffer {
  if (name === '.' || name === '') return Buffer.of(0);
  const out: number[] = [];
  let label: number[] = [];
  const flush = (): void => {
    out.push(label.length, ...label);
    label = [];
  };
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c === 0x5c && i + 1 < name.length) {
      const d = name.slice(i + 1, i + 4);
      if (/^\d{3}$/.test(d)) {
        label.push(Number(d) & 0xff);
        i += 3;
      } else {
        label.push(name.charCodeAt(i + 1) & 0xff);
        i++;
      }
    } else if (c === 0x2e) flush();
    else label.push(c & 0xff);
  }
  if (label.length > 0) flush();
  out.push(0);
  return Buffer.from(out);
}

/** The fixed RRSIG fields before the signature. */
export interface RrsigFields {
  readonly signer: string;
  readonly origTtl: number;
  readonly inception: number;
  readonly expiration: number;
}

/** The signature of `data` with `key` as DNSSEC writes it (ECDSA as r‖s, RSA PKCS#1 v1.5). */
export function signData(key: SigningKey, data: Buffer): Buffer {
  switch (key.algorithm) {
    case Alg.RSASHA1:
    case Alg.RSASHA1NSEC3SHA1:
      return cryptoSign('sha1', data, key.privateKey);
    case Alg.RSASHA256:
      return cryptoSign('sha256', data, key.privateKey);
    case Alg.RSASHA512:
      return cryptoSign('sha512', data, key.privateKey);
    case Alg.ECDSAP256SHA256:
      return cryptoSign('sha256', data, { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
    case Alg.ECDSAP384SHA384:
      return cryptoSign('sha384', data, { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
    case Alg.ED25519:
      return cryptoSign(null, data, key.privateKey);
    default:
      throw new Error('dns: bad algorithm');
  }
}

/**
 * The RRSIG RDATA over `rrset` (one owner, type and class) by `key`: type covered, algorithm,
 * labels, original TTL, expiration, inception, key tag, signer (lower-cased) and signature.
 */
export function signRRset(rrset: readonly WireRR[], key: SigningKey, f: RrsigFields): Buffer {
  const first = rrset[0]!;
  const signer = wireNameLower(f.signer);
  const head = Buffer.allocUnsafe(18 + signer.length);
  head.writeUInt16BE(first.type, 0);
  head[2] = key.algorithm;
  head[3] = rrsigLabels(first.owner);
  head.writeUInt32BE(f.origTtl >>> 0, 4);
  head.writeUInt32BE(f.expiration >>> 0, 8);
  head.writeUInt32BE(f.inception >>> 0, 12);
  head.writeUInt16BE(key.tag, 16);
  signer.copy(head, 18);
  const sig = signData(key, Buffer.concat([head, canonicalRRset(rrset, f.origTtl)]));
  return Buffer.concat([head, sig]);
}

/** The expiration and inception of RRSIG RDATA (seconds, serial-number arithmetic left to the caller). */
export function rrsigTimes(rdata: Buffer): { expiration: number; inception: number } {
  return { expiration: rdata.readUInt32BE(8), inception: rdata.readUInt32BE(12) };
}

/**
 * miekg's `RRSIG.ValidityPeriod(t)`: is `t` (Unix seconds) within inception..expiration, the 32-bit
 * fields placed in the 2^31-second window nearest `t` as miekg/dns does (RFC 4034 §3.1.5).
 */
export function validAt(rdata: Buffer, t: number): boolean {
  const { expiration, inception } = rrsigTimes(rdata);
  const utc = Math.floor(t);
  const year68 = 2 ** 31;
  const ti = inception + Math.trunc((inception - utc) / year68) * year68;
  const te = expiration + Math.trunc((expiration - utc) / year68) * year68;
  return ti <= utc && utc <= te;
}
