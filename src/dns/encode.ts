/**
 * Message encoder with name compression (dns-packet does not compress). Compression matters for
 * fitting answers into 512-byte UDP replies as CoreDNS does, and it lets answer owners point at
 * the question so they echo the client's letter case for free.
 *
 * Names in NS/CNAME/PTR/MX/SOA RDATA are compressed (RFC 1035 types, as miekg/dns does); SRV,
 * SVCB/HTTPS targets and DNAME are written uncompressed but, as in miekg/dns, registered in the
 * compression table so that later names (the additional section's owners) point at them; SVCB and
 * HTTPS records carry their RDATA as wire bytes (dns-packet has no codec); other RDATA is encoded
 * by dns-packet.
 */
import type * as DnsPacket from 'dns-packet';
import type { Answer, Question } from 'dns-packet';
import { requireCjs } from '../util/require.js';
import { Flag, packetClassCode, packetTypeCode, Qclass } from './constants.js';
import { randomId } from './ids.js';
import type { Message } from './message.js';

const dnsPacket = requireCjs('dns-packet') as typeof DnsPacket;

/** Name suffix → offset. `exact`: compress only names of the same letter case (as miekg/dns does). */
type CompressionMap = Map<string, number> & { exact?: boolean };

/** dns-packet's per-type RDATA codecs (exported at runtime, missing from @types/dns-packet). */
interface RdataCodec {
  encode: ((data: unknown, buf: Buffer, offset: number) => Buffer) & { bytes: number };
  encodingLength(data: unknown): number;
}
const rdata = (dnsPacket as unknown as { record(type: string): RdataCodec }).record;

/** Split a (dns-packet style or absolute) name into label byte arrays, honouring `\.` and `\DDD`. */
export function nameToLabels(name: string): Buffer[] {
  if (name === '' || name === '.') return [];
  const labels: Buffer[] = [];
  let cur: number[] = [];
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c === 0x5c /* \ */ && i + 1 < name.length) {
      const d = name.slice(i + 1, i + 4);
      if (/^\d{3}$/.test(d)) {
        cur.push(Number(d) & 0xff);
        i += 3;
      } else {
        cur.push(name.charCodeAt(i + 1) & 0xff);
        i += 1;
      }
    } else if (c === 0x2e /* . */) {
      if (cur.length) labels.push(Buffer.from(cur));
      cur = [];
    } else if (c < 0x80) {
      cur.push(c);
    } else {
      for (const b of Buffer.from(name[i]!, 'utf8')) cur.push(b);
    }
  }
  if (cur.length) labels.push(Buffer.from(cur));
  return labels;
}

/**
 * Write `name` at `off`. With `comp`, every suffix not yet in the table is registered at the offset
 * it is written at, so later names can point at it; with `compress` false (RDATA names that RFCs
 * say must not be compressed: SRV target, DNAME, ...) the name itself is written in full but its
 * suffixes are still registered, as miekg/dns's packDomainName does.
 */
function writeName(name: string, buf: Buffer, off: number, comp: CompressionMap | null, compress = true): number {
  const labels = nameToLabels(name);
  for (let i = 0; i < labels.length; i++) {
    if (comp) {
      const key = labels
        .slice(i)
        .map((l) => (comp.exact ? l.toString('latin1') : l.toString('latin1').toLowerCase()))
        .join('.');
      const ptr = comp.get(key);
      if (ptr !== undefined) {
        if (compress) {
          buf.writeUInt16BE(0xc000 | ptr, off);
          return off + 2;
        }
      } else if (off < 0x3fff) comp.set(key, off);
    }
    const l = labels[i]!;
    if (l.length > 63) throw new Error(`label too long in ${name}`);
    buf[off] = l.length;
    l.copy(buf, off + 1);
    off += l.length + 1;
  }
  buf[off] = 0;
  return off + 1;
}

function typeCode(type: string): number {
  const n = packetTypeCode(type);
  if (n === undefined) throw new Error(`unknown record type ${type}`);
  return n;
}

function classCode(klass: string | undefined): number {
  return klass === undefined ? 1 : (packetClassCode(klass) ?? 1);
}

function writeQuestion(q: Question, buf: Buffer, off: number, comp: CompressionMap): number {
  off = writeName(q.name, buf, off, comp);
  buf.writeUInt16BE(typeCode(q.type), off);
  buf.writeUInt16BE(classCode(q.class), off + 2);
  return off + 4;
}

interface OptRecord {
  type: 'OPT';
  udpPayloadSize?: number;
  extendedRcode?: number;
  ednsVersion?: number;
  flags?: number;
  options?: { code: number | string; data?: Buffer }[];
}

function writeRecord(rr: Answer, buf: Buffer, off: number, comp: CompressionMap): number {
  if (rr.type === 'OPT') {
    const opt = rr as unknown as OptRecord;
    buf[off] = 0;
    buf.writeUInt16BE(41, off + 1);
    buf.writeUInt16BE(opt.udpPayloadSize ?? 4096, off + 3);
    buf[off + 5] = opt.extendedRcode ?? 0;
    buf[off + 6] = opt.ednsVersion ?? 0;
    buf.writeUInt16BE(opt.flags ?? 0, off + 7);
    // dns-packet's OPT option encoder (handles typed options such as CLIENT_SUBNET).
    const codec = rdata('OPT');
    codec.encode(opt.options ?? [], buf, off + 9);
    return off + 9 + codec.encode.bytes;
  }
  off = writeName(rr.name, buf, off, comp);
  buf.writeUInt16BE(typeCode(rr.type), off);
  const r = rr as Answer & { class?: string; ttl?: number; flush?: boolean };
  buf.writeUInt16BE(classCode(r.class) | (r.flush ? 0x8000 : 0), off + 2);
  buf.writeUInt32BE((r.ttl ?? 0) >>> 0, off + 4);
  const rdlenAt = off + 8;
  let p = off + 10;
  const data = (rr as { data: unknown }).data;
  switch (rr.type as string) {
    case 'NS':
    case 'CNAME':
    case 'PTR':
    case 'DNAME':
      p = writeName(data as string, buf, p, comp, rr.type !== 'DNAME');
      break;
    case 'MX': {
      const mx = data as { preference?: number; exchange: string };
      buf.writeUInt16BE(mx.preference ?? 0, p);
      p = writeName(mx.exchange, buf, p + 2, comp);
      break;
    }
    case 'SOA': {
      const soa = data as {
        mname: string;
        rname: string;
        serial?: number;
        refresh?: number;
        retry?: number;
        expire?: number;
        minimum?: number;
      };
      p = writeName(soa.mname, buf, p, comp);
      p = writeName(soa.rname, buf, p, comp);
      buf.writeUInt32BE((soa.serial ?? 0) >>> 0, p);
      buf.writeUInt32BE((soa.refresh ?? 0) >>> 0, p + 4);
      buf.writeUInt32BE((soa.retry ?? 0) >>> 0, p + 8);
      buf.writeUInt32BE((soa.expire ?? 0) >>> 0, p + 12);
      buf.writeUInt32BE((soa.minimum ?? 0) >>> 0, p + 16);
      p += 20;
      break;
    }
    case 'SRV': {
      const srv = data as { priority?: number; weight?: number; port?: number; target: string };
      buf.writeUInt16BE(srv.priority ?? 0, p);
      buf.writeUInt16BE(srv.weight ?? 0, p + 2);
      buf.writeUInt16BE(srv.port ?? 0, p + 4);
      // RFC 2782: the target is not compressed; it is still registered for later owners.
      p = writeName(srv.target, buf, p + 6, comp, false);
      break;
    }
    case 'SVCB':
    case 'HTTPS': {
      // RDATA in wire form (dns-packet has no codec): RFC 9460 forbids compressing the target, but
      // miekg/dns registers it for later names, as for SRV.
      const raw = data as Buffer;
      raw.copy(buf, p, 0, 2);
      const labels: string[] = [];
      let q = 2;
      while (q < raw.length && raw[q]! !== 0) {
        const len = raw[q]!;
        labels.push(
          [...raw.subarray(q + 1, q + 1 + len)]
            .map((c) =>
              c === 0x2e || c === 0x5c
                ? `\\${String.fromCharCode(c)}`
                : c < 0x21 || c > 0x7e
                  ? `\\${String(c).padStart(3, '0')}`
                  : String.fromCharCode(c),
            )
            .join(''),
        );
        q += len + 1;
      }
      p = writeName(labels.length ? labels.join('.') : '.', buf, p + 2, comp, false);
      raw.copy(buf, p, q + 1);
      p += Math.max(0, raw.length - (q + 1));
      break;
    }
    default: {
      // dns-packet writes RDLENGTH + RDATA itself.
      const enc = rdata(rr.type);
      enc.encode(data, buf, rdlenAt);
      return rdlenAt + enc.encode.bytes;
    }
  }
  buf.writeUInt16BE(p - off - 10, rdlenAt);
  return p;
}

/** Upper bound of the encoded size (dns-packet's uncompressed length). */
export function maxEncodingLength(msg: Message): number {
  return dnsPacket.encodingLength(msg);
}

export interface EncodeResult {
  buf: Buffer;
  /** True when records had to be dropped to fit (any section, as CoreDNS; TC was set). */
  truncated: boolean;
}

/**
 * Encode `msg` with compression. With `limit`, whole records are dropped from the end (additional,
 * then authority, then answer) until it fits; TC is set when any record was dropped, additional
 * ones included, as CoreDNS 1.15.0 does (miekg/dns Msg.Truncate). The OPT record is always kept.
 * `exactCase`: a name is compressed only against names of the same letter case, as miekg/dns does
 * (by default a lower-cased owner points at the question and echoes the client's case).
 */
export function encodeFitted(msg: Message, limit = 65535, exactCase = false): EncodeResult {
  const size = maxEncodingLength(msg) + 16;
  const buf = Buffer.allocUnsafe(Math.max(size, 512));
  const comp: CompressionMap = new Map();
  if (exactCase) comp.exact = true;
  const flags = ((msg.flags ?? 0) & 0x7fff) | (msg.type === 'response' ? Flag.QR : 0);
  buf.writeUInt16BE(msg.id ?? 0, 0);
  buf.writeUInt16BE(flags, 2);
  buf.writeUInt16BE(msg.questions.length, 4);
  let off = 12;
  for (const q of msg.questions) off = writeQuestion(q, buf, off, comp);
  const opt = msg.additionals.find((r) => r.type === 'OPT');
  const optLen = opt ? 11 + (rdata('OPT').encodingLength((opt as unknown as OptRecord).options ?? []) - 2) : 0;
  const sections: Answer[][] = [msg.answers, msg.authorities, msg.additionals.filter((r) => r.type !== 'OPT')];
  const counts = [0, 0, 0];
  let truncated = false;
  let full = false;
  for (let s = 0; s < 3 && !full; s++) {
    for (const rr of sections[s]!) {
      const before = off;
      const compBefore = comp.size;
      off = writeRecord(rr, buf, off, comp);
      if (off + optLen > limit) {
        off = before;
        if (comp.size !== compBefore) {
          for (const [k, v] of comp) if (v >= before) comp.delete(k);
        }
        full = true;
        // As miekg/dns's Msg.Truncate: TC when any record was left out, additional ones included.
        truncated = true;
        break;
      }
      counts[s]!++;
    }
  }
  let ar = counts[2]!;
  if (opt) {
    off = writeRecord(opt, buf, off, comp);
    ar++;
  }
  buf.writeUInt16BE(counts[0]!, 6);
  buf.writeUInt16BE(counts[1]!, 8);
  buf.writeUInt16BE(ar, 10);
  if (truncated) buf.writeUInt16BE(flags | Flag.TC, 2);
  return { buf: Buffer.from(buf.subarray(0, off)), truncated };
}

/** Encode with compression, no size limit (`exactCase`: see encodeFitted). */
export function encodeMessage(msg: Message, exactCase = false): Buffer {
  return encodeFitted(msg, 65535, exactCase).buf;
}

/**
 * A query packet for `name` (absolute), class IN, no EDNS, with a random id: the queries clusterdns
 * sends itself (forward's health check, loop's self-query).
 */
export function buildQuery(name: string, qtype: number, rd: boolean): Buffer {
  const labels = nameToLabels(name);
  let len = 12 + 1 + 4;
  for (const l of labels) len += l.length + 1;
  const buf = Buffer.alloc(len);
  buf.writeUInt16BE(randomId(), 0);
  buf.writeUInt16BE(rd ? 0x0100 : 0, 2);
  buf.writeUInt16BE(1, 4);
  let off = 12;
  for (const l of labels) {
    buf[off] = l.length;
    l.copy(buf, off + 1);
    off += l.length + 1;
  }
  buf[off] = 0;
  buf.writeUInt16BE(qtype, off + 1);
  buf.writeUInt16BE(Qclass.IN, off + 3);
  return buf;
}
