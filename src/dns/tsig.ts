/**
 * TSIG (RFC 8945) on the wire, as miekg/dns v1.1.73 (CoreDNS 1.15.0's) verifies and signs it:
 * reading the TSIG RR of a request, checking its MAC and time, and appending a TSIG RR to a reply
 * (docs/plugins.md, tsig). What miekg does, and therefore what a client sees from CoreDNS:
 * - the key is looked up by the TSIG owner name as it came (keys are stored lower-case, so another
 *   letter case is BADKEY);
 * - HMAC-SHA1/224/256/384/512 only: HMAC-MD5 or another algorithm fails like a wrong MAC (BADSIG);
 * - a MAC of another length than the algorithm's (a truncated MAC, RFC 8945 §5.2.2.1) is BADSIG —
 *   miekg never answers BADTRUNC;
 * - the time is checked after the MAC, against the request's own fudge (BADTIME);
 * - a reply to BADKEY/BADSIG carries an unsigned TSIG (time 0, no MAC), a reply to BADTIME is
 *   signed and carries the client's time and the server's time in its other data; the fudge of
 *   a reply's TSIG is always 300.
 * Messages after the first of a zone transfer are signed over the prior MAC, the message and the
 * timers only (RFC 8945 §5.3.1).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Qclass, Qtype, Rcode } from './constants.js';
import { forEachRecord, readName, writePlainName } from './wire.js';

/** TSIG error codes (RFC 8945 §3). */
export const TsigError = { BADSIG: 16, BADKEY: 17, BADTIME: 18 } as const;
/** The fudge miekg/dns puts in every TSIG it writes (its zero value replaced by RFC's 300). */
export const REPLY_FUDGE = 300;

/** A key's secret: the decoded bytes, or null when the base64 text does not decode strictly. */
export type TsigSecret = Buffer | null;
/** Key name (lower-case, absolute, as written in the configuration) → secret. */
export type TsigKeyring = ReadonlyMap<string, TsigSecret>;

/** Hash of each algorithm miekg/dns signs with, by the algorithm's lower-case name. */
const HASHES: ReadonlyMap<string, string> = new Map([
  ['hmac-sha1.', 'sha1'],
  ['hmac-sha224.', 'sha224'],
  ['hmac-sha256.', 'sha256'],
  ['hmac-sha384.', 'sha384'],
  ['hmac-sha512.', 'sha512'],
]);

/** The algorithms a key may be used with (for docs and tests). */
export const TSIG_ALGORITHMS: readonly string[] = [...HASHES.keys()];

/** Decode a secret as Go's base64.StdEncoding does: padded, no stray characters. */
export function decodeSecret(text: string): TsigSecret {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  return Buffer.from(text, 'base64');
}

/** A TSIG RR read from a message. */
export interface TsigRecord {
  /** Offset of the RR in the message. */
  readonly at: number;
  /** Offset just past the RR. */
  readonly end: number;
  /** Owner name as text (the key name as sent: the lookup key). */
  readonly name: string;
  /** Owner name, uncompressed, in the letter case sent (written back in the reply's TSIG). */
  readonly nameWire: Buffer;
  readonly ttl: number;
  /** Algorithm name, uncompressed, in the letter case sent. */
  readonly algorithmWire: Buffer;
  /** Algorithm name, lower-case text. */
  readonly algorithm: string;
  readonly timeSigned: number;
  readonly fudge: number;
  readonly mac: Buffer;
  readonly origId: number;
  readonly error: number;
  readonly other: Buffer;
}

/** A name at `off` written out uncompressed, and the offset after it in the current run. */
function nameWire(buf: Buffer, off: number): [Buffer, number] | null {
  const parts: number[] = [];
  let end = -1;
  let jumps = 0;
  for (;;) {
    if (off >= buf.length) return null;
    const len = buf[off]!;
    if (len === 0) {
      if (end < 0) end = off + 1;
      parts.push(0);
      break;
    }
    if ((len & 0xc0) === 0xc0) {
      if (off + 1 >= buf.length || ++jumps > 126) return null;
      if (end < 0) end = off + 2;
      off = ((len & 0x3f) << 8) | buf[off + 1]!;
      continue;
    }
    if ((len & 0xc0) !== 0 || off + 1 + len > buf.length) return null;
    for (let i = off; i <= off + len; i++) parts.push(buf[i]!);
    off += len + 1;
  }
  return [Buffer.from(parts), end];
}

/** The name with ASCII letters lower-cased (miekg's CanonicalName), as the MAC covers it. */
function canonicalWire(name: Buffer): Buffer {
  const out = Buffer.from(name);
  let off = 0;
  while (off < out.length && out[off] !== 0) {
    const len = out[off]!;
    for (let i = off + 1; i <= off + len; i++) {
      const c = out[i]!;
      if (c >= 0x41 && c <= 0x5a) out[i] = c | 0x20;
    }
    off += len + 1;
  }
  return out;
}

/** Read the TSIG RR at `at` (its owner name); null when it is malformed. */
export function readTsig(buf: Buffer, at: number): TsigRecord | null {
  const owner = nameWire(buf, at);
  const text = readName(buf, at);
  if (owner === null || text === null) return null;
  let off = owner[1];
  if (off + 10 > buf.length) return null;
  const ttl = buf.readUInt32BE(off + 4);
  const rdlen = buf.readUInt16BE(off + 8);
  off += 10;
  const end = off + rdlen;
  if (end > buf.length) return null;
  const alg = nameWire(buf, off);
  const algText = readName(buf, off);
  if (alg === null || algText === null) return null;
  off = alg[1];
  if (off + 10 > end) return null;
  const timeSigned = buf.readUIntBE(off, 6);
  const fudge = buf.readUInt16BE(off + 6);
  const macLen = buf.readUInt16BE(off + 8);
  off += 10;
  if (off + macLen + 6 > end) return null;
  const mac = buf.subarray(off, off + macLen);
  off += macLen;
  const origId = buf.readUInt16BE(off);
  const error = buf.readUInt16BE(off + 2);
  const otherLen = buf.readUInt16BE(off + 4);
  off += 6;
  if (off + otherLen > end) return null;
  return {
    at,
    end,
    name: text[0],
    nameWire: owner[0],
    ttl,
    algorithmWire: alg[0],
    algorithm: algText[0].toLowerCase(),
    timeSigned,
    fudge,
    mac,
    origId,
    error,
    other: buf.subarray(off, off + otherLen),
  };
}

function u48(n: number): Buffer {
  const b = Buffer.alloc(6);
  b.writeUIntBE(n, 0, 6);
  return b;
}

/**
 * The TSIG variables the MAC covers after the message (RFC 8945 §4.3.3): name and algorithm in
 * canonical form, class ANY, the TTL, time, fudge, error and other data — or with `timersOnly`
 * just time and fudge (§4.3.1, messages after the first of a transfer).
 */
function variables(
  nameCanonical: Buffer,
  ttl: number,
  algorithmCanonical: Buffer,
  time: number,
  fudge: number,
  error: number,
  other: Buffer,
  timersOnly: boolean,
): Buffer {
  if (timersOnly) {
    const b = Buffer.alloc(8);
    b.writeUIntBE(time, 0, 6);
    b.writeUInt16BE(fudge, 6);
    return b;
  }
  const fixed = Buffer.alloc(6);
  fixed.writeUInt16BE(Qclass.ANY, 0);
  fixed.writeUInt32BE(ttl, 2);
  const tail = Buffer.alloc(6);
  tail.writeUInt16BE(error, 0);
  tail.writeUInt16BE(other.length, 2);
  // time (6) + fudge (2) follow the algorithm; error and other length come after them.
  const timers = Buffer.alloc(8);
  timers.writeUIntBE(time, 0, 6);
  timers.writeUInt16BE(fudge, 6);
  return Buffer.concat([nameCanonical, fixed, algorithmCanonical, timers, tail.subarray(0, 4), other]);
}

function mac(hash: string, secret: Buffer, parts: readonly Buffer[]): Buffer {
  const h = createHmac(hash, secret);
  for (const p of parts) h.update(p);
  return h.digest();
}

/** The MAC's prefix for a reply: the request's (or prior message's) MAC with its length. */
function priorMac(prior: Buffer): Buffer {
  if (prior.length === 0) return prior;
  const b = Buffer.allocUnsafe(2 + prior.length);
  b.writeUInt16BE(prior.length, 0);
  prior.copy(b, 2);
  return b;
}

/**
 * Verify the request's TSIG as miekg/dns's server does before the chain runs: 0 when it holds,
 * else the TSIG error the tsig plugin puts in its NOTAUTH reply (BADKEY, BADSIG or BADTIME).
 * `nowSec`: the server's clock in seconds.
 */
export function verifyTsig(raw: Buffer, t: TsigRecord, keys: TsigKeyring, nowSec: number): number {
  const secret = keys.get(t.name);
  if (secret === undefined) return TsigError.BADKEY;
  // A message whose own RCODE is NOTAUTH is not verified (miekg's ErrAuth).
  if ((raw[3]! & 0xf) === Rcode.NOTAUTH) return TsigError.BADSIG;
  const hash = HASHES.get(t.algorithm);
  if (hash === undefined || secret === null) return TsigError.BADSIG;
  const msg = Buffer.from(raw.subarray(0, t.at));
  msg.writeUInt16BE(t.origId, 0);
  msg.writeUInt16BE(msg.readUInt16BE(10) - 1, 10);
  const vars = variables(
    canonicalWire(t.nameWire),
    t.ttl,
    canonicalWire(t.algorithmWire),
    t.timeSigned,
    t.fudge,
    t.error,
    t.other,
    false,
  );
  const want = mac(hash, secret, [msg, vars]);
  if (want.length !== t.mac.length || !timingSafeEqual(want, t.mac)) return TsigError.BADSIG;
  if (Math.abs(nowSec - t.timeSigned) > t.fudge) return TsigError.BADTIME;
  return 0;
}

/**
 * Signs the replies to one TSIG request: the first over the request's MAC and the full TSIG
 * variables, each later one (a zone transfer's) over the prior reply's MAC and the timers.
 */
export class TsigSigner {
  private prior: Buffer;
  private timersOnly = false;
  private readonly hash: string | undefined;
  private readonly nameCanonical: Buffer;
  private readonly algorithmCanonical: Buffer;

  constructor(
    private readonly t: TsigRecord,
    private readonly secret: TsigSecret | undefined,
    /** The TSIG error of the replies (0, or the verification's failure). */
    readonly error: number,
  ) {
    this.prior = Buffer.from(t.mac);
    this.hash = HASHES.get(t.algorithm);
    this.nameCanonical = canonicalWire(t.nameWire);
    this.algorithmCanonical = canonicalWire(t.algorithmWire);
  }

  /**
   * `msg` with a TSIG RR appended (and ARCOUNT raised): unsigned for BADKEY/BADSIG, else signed.
   * Null when there is nothing to sign with (miekg/dns then fails the write: nothing is sent).
   */
  sign(msg: Buffer, nowSec: number): Buffer | null {
    const t = this.t;
    const unsigned = this.error === TsigError.BADKEY || this.error === TsigError.BADSIG;
    let time = this.error === TsigError.BADTIME ? t.timeSigned : nowSec;
    const other = this.error === TsigError.BADTIME ? u48(nowSec) : Buffer.alloc(0);
    let digest: Buffer = Buffer.alloc(0);
    if (!unsigned) {
      if (this.hash === undefined || this.secret === undefined || this.secret === null) return null;
      const vars = variables(
        this.nameCanonical,
        0,
        this.algorithmCanonical,
        time,
        REPLY_FUDGE,
        this.error,
        other,
        this.timersOnly,
      );
      digest = mac(this.hash, this.secret, [priorMac(this.prior), msg, vars]);
      this.prior = digest;
      this.timersOnly = true;
    } else time = 0;
    const rdata = Buffer.alloc(t.algorithmWire.length + 16 + digest.length + other.length);
    let off = t.algorithmWire.copy(rdata, 0);
    rdata.writeUIntBE(time, off, 6);
    rdata.writeUInt16BE(REPLY_FUDGE, off + 6);
    rdata.writeUInt16BE(digest.length, off + 8);
    off += 10;
    off += digest.copy(rdata, off);
    rdata.writeUInt16BE(msg.readUInt16BE(0), off);
    rdata.writeUInt16BE(this.error, off + 2);
    rdata.writeUInt16BE(other.length, off + 4);
    other.copy(rdata, off + 6);
    const rrHead = Buffer.alloc(10);
    rrHead.writeUInt16BE(Qtype.TSIG, 0);
    rrHead.writeUInt16BE(Qclass.ANY, 2);
    rrHead.writeUInt32BE(0, 4);
    rrHead.writeUInt16BE(rdata.length, 8);
    const out = Buffer.concat([msg, t.nameWire, rrHead, rdata]);
    out.writeUInt16BE(msg.readUInt16BE(10) + 1, 10);
    return out;
  }
}

/** The request without its TSIG RR (the RR at `t.at` is the message's last), ARCOUNT lowered. */
export function stripTsig(raw: Buffer, t: TsigRecord): Buffer {
  const out = Buffer.from(raw.subarray(0, t.at));
  out.writeUInt16BE(out.readUInt16BE(10) - 1, 10);
  return out;
}

/** A name of plain labels as wire bytes. */
function plainNameWire(name: string): Buffer {
  const buf = Buffer.alloc(Buffer.byteLength(name) + 2);
  return buf.subarray(0, writePlainName(name, buf, 0));
}

/** What a client signs a request with (tests; a plugin that signs the queries it sends). */
export interface RequestKey {
  /** Key name, absolute (`key1.`). */
  readonly name: string;
  /** Algorithm name, absolute (`hmac-sha256.`). */
  readonly algorithm: string;
  readonly secret: Buffer;
}

/**
 * `msg` signed as a client signs its request (RFC 8945 §4.3.3; no prior MAC): a TSIG RR appended
 * with the given time and fudge. `macBytes` keeps only that many leading bytes of the MAC (a
 * truncated MAC). Returns the message and the full MAC.
 */
export function signRequest(
  msg: Buffer,
  key: RequestKey,
  timeSigned: number,
  fudge = REPLY_FUDGE,
  macBytes?: number,
): { wire: Buffer; mac: Buffer } {
  const hash = HASHES.get(key.algorithm.toLowerCase()) ?? 'sha256';
  const nameW = plainNameWire(key.name);
  const algW = plainNameWire(key.algorithm);
  const vars = variables(canonicalWire(nameW), 0, canonicalWire(algW), timeSigned, fudge, 0, Buffer.alloc(0), false);
  const full = mac(hash, key.secret, [msg, vars]);
  const sent = macBytes === undefined ? full : full.subarray(0, macBytes);
  const rdata = Buffer.alloc(algW.length + 16 + sent.length);
  let off = algW.copy(rdata, 0);
  rdata.writeUIntBE(timeSigned, off, 6);
  rdata.writeUInt16BE(fudge, off + 6);
  rdata.writeUInt16BE(sent.length, off + 8);
  off += 10;
  off += sent.copy(rdata, off);
  rdata.writeUInt16BE(msg.readUInt16BE(0), off);
  const head = Buffer.alloc(10);
  head.writeUInt16BE(Qtype.TSIG, 0);
  head.writeUInt16BE(Qclass.ANY, 2);
  head.writeUInt16BE(rdata.length, 8);
  const wire = Buffer.concat([msg, nameW, head, rdata]);
  wire.writeUInt16BE(msg.readUInt16BE(10) + 1, 10);
  return { wire, mac: full };
}

/** Offset of the last RR of a message, -1 when it has none or is malformed. */
export function lastRecordAt(buf: Buffer): number {
  let at = -1;
  return forEachRecord(buf, (_s, rr) => {
    at = rr;
  })
    ? at
    : -1;
}

/**
 * Check a signed reply's TSIG as a client does: the MAC over `prior` (the request's or the
 * previous message's MAC), the message and the variables (`timersOnly` for a transfer's later
 * messages). Returns the reply's TSIG and whether its MAC holds.
 */
export function checkReply(
  reply: Buffer,
  prior: Buffer,
  secret: Buffer,
  timersOnly = false,
): { tsig: TsigRecord; ok: boolean } | null {
  const at = lastRecordAt(reply);
  const t = at < 0 ? null : readTsig(reply, at);
  if (t === null) return null;
  const hash = HASHES.get(t.algorithm);
  if (hash === undefined || t.mac.length === 0) return { tsig: t, ok: false };
  const msg = Buffer.from(reply.subarray(0, at));
  msg.writeUInt16BE(t.origId, 0);
  msg.writeUInt16BE(msg.readUInt16BE(10) - 1, 10);
  const vars = variables(
    canonicalWire(t.nameWire),
    t.ttl,
    canonicalWire(t.algorithmWire),
    t.timeSigned,
    t.fudge,
    t.error,
    t.other,
    timersOnly,
  );
  const want = mac(hash, secret, [priorMac(prior), msg, vars]);
  return { tsig: t, ok: want.equals(t.mac) };
}
