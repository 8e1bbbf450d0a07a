/**
 * One resource record written uncompressed into a buffer, byte for byte as dns-packet's
 * `answer.encode` writes it, for zone transfers (plugins/transfer): a transfer of a 10,000-Service
 * zone writes ~46,000 records, and dns-packet's name encoder (a regular expression, a split and a
 * `Buffer.write` per label) was most of a transfer's CPU. The types a zone transfer is made of
 * (A, AAAA, NS, CNAME, PTR, SRV with plain ASCII names) are written here directly; any other record
 * or name goes through dns-packet unchanged.
 */
import type * as DnsPacket from 'dns-packet';
import type { Answer } from 'dns-packet';
import { requireCjs } from '../util/require.js';

interface AnswerCodec {
  encode: ((a: Answer, buf: Buffer, offset: number) => Buffer) & { bytes: number };
}
const answerCodec = (requireCjs('dns-packet') as typeof DnsPacket & { answer: AnswerCodec }).answer;

/** The largest record: a 255-byte owner name, type, class, TTL, RDLENGTH and 65,535 bytes of RDATA. */
export const MAX_RECORD_BYTES = 255 + 10 + 65535;

/**
 * `name` (dns-packet form: no trailing dot, root `.`) at `off` as labels; -1 when it is not plain
 * ASCII of labels of 1–63 bytes (the caller then leaves the record to dns-packet, which writes
 * such names its own way).
 */
export function writeName(name: string, buf: Buffer, off: number): number {
  if (name === '.' || name === '') {
    buf[off] = 0;
    return off + 1;
  }
  const end = name.length;
  if (name.charCodeAt(0) === 0x2e || name.charCodeAt(end - 1) === 0x2e || end > 253) return -1;
  let lenAt = off;
  let o = off + 1;
  for (let i = 0; i < end; i++) {
    const c = name.charCodeAt(i);
    if (c === 0x2e) {
      const len = o - lenAt - 1;
      if (len === 0 || len > 63) return -1;
      buf[lenAt] = len;
      lenAt = o;
      o++;
    } else {
      // Non-ASCII (UTF-8 in dns-packet) and newlines (its multi-line trim) go the general way.
      if (c > 0x7e || c === 0x0a) return -1;
      buf[o++] = c;
    }
  }
  const len = o - lenAt - 1;
  if (len === 0 || len > 63) return -1;
  buf[lenAt] = len;
  buf[o++] = 0;
  return o;
}

/** A dotted IPv4 address as four bytes at `off`; false when `ip` is not one. */
function writeIPv4(ip: string, buf: Buffer, off: number): boolean {
  let part = 0;
  let digits = 0;
  let n = 0;
  for (let i = 0; i < ip.length; i++) {
    const c = ip.charCodeAt(i);
    if (c === 0x2e) {
      if (digits === 0 || n > 2) return false;
      buf[off + n++] = part;
      part = 0;
      digits = 0;
    } else if (c >= 0x30 && c <= 0x39 && digits < 3) {
      part = part * 10 + (c - 0x30);
      digits++;
      if (part > 255) return false;
    } else return false;
  }
  if (digits === 0 || n !== 3) return false;
  buf[off + 3] = part;
  return true;
}

const TYPE_A = 1;
const TYPE_NS = 2;
const TYPE_CNAME = 5;
const TYPE_PTR = 12;
const TYPE_SRV = 33;

function fastType(t: string): number {
  switch (t) {
    case 'A':
      return TYPE_A;
    case 'NS':
      return TYPE_NS;
    case 'CNAME':
      return TYPE_CNAME;
    case 'PTR':
      return TYPE_PTR;
    case 'SRV':
      return TYPE_SRV;
    default:
      return 0;
  }
}

/** The fast path; -1 when the record is not one it writes (nothing useful is left in `buf`). */
function writeFast(answer: Answer, buf: Buffer, off: number): number {
  const type = fastType(answer.type);
  if (type === 0) return -1;
  // Not OPT (fastType said so): a record with class, TTL and data.
  const rr = answer as { name: string; class?: string; ttl?: number; flush?: boolean; data: unknown };
  if ((rr.class !== undefined && rr.class !== 'IN') || rr.flush) return -1;
  let o = writeName(rr.name, buf, off);
  if (o < 0) return -1;
  buf.writeUInt16BE(type, o);
  buf.writeUInt16BE(1, o + 2);
  buf.writeUInt32BE(rr.ttl || 0, o + 4);
  const rd = o + 10;
  const data = rr.data;
  if (type === TYPE_A) {
    if (typeof data !== 'string' || !writeIPv4(data, buf, rd)) return -1;
    o = rd + 4;
  } else if (type === TYPE_SRV) {
    const s = data as { priority?: number; weight?: number; port?: number; target: string };
    buf.writeUInt16BE(s.priority || 0, rd);
    buf.writeUInt16BE(s.weight || 0, rd + 2);
    buf.writeUInt16BE(s.port || 0, rd + 4);
    o = writeName(s.target, buf, rd + 6);
  } else {
    if (typeof data !== 'string') return -1;
    o = writeName(data, buf, rd);
  }
  if (o < 0) return -1;
  buf.writeUInt16BE(o - rd, rd - 2);
  return o - off;
}

/**
 * Writes `rr` at `off` in `buf` (which must have {@link MAX_RECORD_BYTES} from `off`) and returns
 * the number of bytes written: the same bytes as dns-packet's `answer.encode`.
 */
export function writeRecord(rr: Answer, buf: Buffer, off: number): number {
  const n = writeFast(rr, buf, off);
  if (n >= 0) return n;
  answerCodec.encode(rr, buf, off);
  return answerCodec.encode.bytes;
}
