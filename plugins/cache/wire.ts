/**
 * Reading and patching cached replies in wire form: one walk over the records collects what the
 * cache needs to classify a reply (docs/plugins.md, cache, "Storing") and the offsets of every TTL, so
 * that a hit only copies the bytes and patches id, flags, question case and TTLs.
 */
import { Flag, Opcode, Qtype, Rcode } from '../../src/dns/constants.js';
import { typify, type ReplyType } from '../../src/dns/response.js';
import { lowerName } from '../../src/dns/name.js';
import { readName } from '../../src/dns/wire.js';
import { skipName } from '../../src/dns/wire.js';

export interface Analysis {
  readonly rcode: number;
  readonly flags: number;
  /** Offsets of the TTL field of every record except OPT. */
  readonly ttlOffsets: number[];
  /** Smallest TTL over the non-OPT records (Infinity when there are none). */
  readonly minTtl: number;
  /** Start and end of the OPT record (-1 when absent). */
  readonly optStart: number;
  readonly optEnd: number;
  /** response.Typify's name for the reply: the cache stores NOERROR/DELEGATION as success, NXDOMAIN/NODATA/SERVERERROR as denial. */
  readonly kind: ReplyType;
  /** The question matches the query (QR=1, one question, same name/type/class). */
  readonly questionMatches: boolean;
}

interface AnswerRR {
  owner: string;
  type: number;
  /** CNAME/DNAME target (lower-cased), else ''. */
  target: string;
}

/** Does a 32-bit serial-arithmetic time `a` come before `b` (RFC 1982)? */
function serialBefore(a: number, b: number): boolean {
  return a !== b && (b - a) >>> 0 < 0x80000000;
}

/**
 * Analyse a reply to (lname, qtype, qclass). Returns null when the message does not parse.
 * `checkSigs`: the query had DO, so expired RRSIGs in the answer make the reply uncacheable.
 */
export function analyze(
  buf: Buffer,
  lname: string,
  qtype: number,
  qclass: number,
  checkSigs: boolean,
  nowSec: number,
): Analysis | null {
  if (buf.length < 12) return null;
  const flags = buf.readUInt16BE(2);
  const rcode = flags & 0xf;
  const qd = buf.readUInt16BE(4);
  let off = 12;
  let questionMatches = (flags & Flag.QR) !== 0 && qd === 1;
  for (let i = 0; i < qd; i++) {
    const r = readName(buf, off);
    if (!r) return null;
    const [name, end] = r;
    if (end + 4 > buf.length) return null;
    if (
      i === 0 &&
      (lowerName(name) !== lname || buf.readUInt16BE(end) !== qtype || buf.readUInt16BE(end + 2) !== qclass)
    )
      questionMatches = false;
    off = end + 4;
  }
  const counts = [buf.readUInt16BE(6), buf.readUInt16BE(8), buf.readUInt16BE(10)];
  const ttlOffsets: number[] = [];
  const answers: AnswerRR[] = [];
  let minTtl = Infinity;
  let optStart = -1;
  let optEnd = -1;
  let soa = false;
  let ns = 0;
  let expired = false;
  for (let s = 0; s < 3; s++) {
    for (let i = 0; i < counts[s]!; i++) {
      const start = off;
      const t = skipName(buf, off);
      if (t < 0 || t + 10 > buf.length) return null;
      const type = buf.readUInt16BE(t);
      const rdlen = buf.readUInt16BE(t + 8);
      const rdata = t + 10;
      if (rdata + rdlen > buf.length) return null;
      if (type === Qtype.OPT) {
        if (s === 2) {
          optStart = start;
          optEnd = rdata + rdlen;
        }
      } else {
        ttlOffsets.push(t + 4);
        const ttl = buf.readUInt32BE(t + 4);
        if (ttl < minTtl) minTtl = ttl;
        if (s === 0) {
          const owner = readName(buf, start);
          let target = '';
          if (type === Qtype.CNAME || type === 39 /* DNAME */) {
            const tn = readName(buf, rdata);
            if (tn) target = lowerName(tn[0]);
          }
          answers.push({ owner: owner ? lowerName(owner[0]) : '', type, target });
          if (checkSigs && type === Qtype.RRSIG && rdlen >= 18) {
            const expiration = buf.readUInt32BE(rdata + 8);
            const inception = buf.readUInt32BE(rdata + 12);
            const now = nowSec >>> 0;
            if (serialBefore(now, inception) || serialBefore(expiration, now)) expired = true;
          }
        } else if (s === 1) {
          if (type === Qtype.SOA) soa = true;
          else if (type === Qtype.NS) ns++;
        }
      }
      off = rdata + rdlen;
    }
  }
  // Only QUERY requests reach the analysis (the handler passes other opcodes by).
  const kind = typify({
    rcode,
    opcode: Opcode.QUERY,
    qtype,
    answers: answers.length,
    authoritySoa: soa,
    authorityNs: ns,
    expiredSignature: expired,
    answerMissesQuestion: answers.length > 0 && rcode === Rcode.NOERROR && !reaches(answers, lname, qtype),
  });
  return { rcode, flags, ttlOffsets, minTtl, optStart, optEnd, kind, questionMatches };
}

function reaches(answers: AnswerRR[], lname: string, qtype: number): boolean {
  if (qtype === Qtype.CNAME || qtype === Qtype.ANY || qtype === Qtype.RRSIG) return true;
  if (answers.some((a) => a.type !== Qtype.CNAME && a.type !== 39 && a.type !== Qtype.RRSIG)) {
    // Follow the chain from the question; tolerate owners spelled differently as long as the
    // answer holds the asked type.
    let name = lname;
    for (let hops = 0; hops < 16; hops++) {
      if (answers.some((a) => a.owner === name && a.type === qtype)) return true;
      const c = answers.find((a) => a.owner === name && a.type === Qtype.CNAME);
      if (!c) break;
      name = c.target;
    }
    return answers.some((a) => a.type === qtype);
  }
  return false;
}

/**
 * A copy of `buf` without its OPT record, or null when that would need re-encoding (the OPT is
 * not the last record, so later names might point past it).
 */
export function withoutOpt(buf: Buffer, optStart: number, optEnd: number): Buffer | null {
  if (optStart < 0) return Buffer.from(buf);
  if (optEnd !== buf.length) return null;
  const out = Buffer.from(buf.subarray(0, optStart));
  out.writeUInt16BE(out.readUInt16BE(10) - 1, 10);
  return out;
}
