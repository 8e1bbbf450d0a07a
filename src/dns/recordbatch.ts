/**
 * Resource records written straight into wire form (uncompressed, as a zone transfer sends them)
 * by a source that has no record objects to hand: the kubernetes plugin writes its zone here
 * (plugins/kubernetes/xfr.ts) and the transfer plugin copies the records into its messages.
 * A transfer of a 10,000-Service zone is ~46,000 records; building a dns-packet Answer, its name
 * strings and its data object per record was ~360 bytes of garbage each, a young-generation
 * collection every few milliseconds while transfers ran (docs/benchmarks.md, issue 27).
 *
 * A batch is written, read and reset: its source reuses it for the next records once the reader
 * has pulled again, so a reader copies what it keeps before asking for more.
 */
import type * as DnsPacket from 'dns-packet';
import type { Answer } from 'dns-packet';
import { requireCjs } from '../util/require.js';
import { writeName } from './rrwrite.js';

interface NameCodec {
  encode: ((n: string, buf: Buffer, offset: number) => Buffer) & { bytes: number };
}
interface AnswerDecoder {
  decode: ((buf: Buffer, offset: number) => Answer) & { bytes: number };
}
const codec = requireCjs('dns-packet') as typeof DnsPacket & { name: NameCodec; answer: AnswerDecoder };

const CLASS_IN = 1;

/**
 * The most a {@link WireName} can hold: a prefix of labels (dns-packet writes non-ASCII ones as
 * UTF-8, up to three bytes a character) before a whole name. Room made before each record: an
 * owner and an RDATA name, the fixed fields, and an IPv6 address or the SRV fields.
 */
const NAME_ROOM = 3 * 253 + 256;
const RECORD_ROOM = 2 * NAME_ROOM + 10 + 16;

/**
 * `len` bytes from `src` at `from` to `dst` at `to`. Names and records are tens of bytes, where
 * `Buffer.copy` of a range costs a typed-array view of garbage per call (Node's `_copyActual`)
 * and the native call's overhead: a loop does them in place.
 */
export function copyBytes(src: Buffer, from: number, len: number, dst: Buffer, to: number): number {
  if (len > 128) return src.copy(dst, to, from, from + len);
  for (let i = 0; i < len; i++) dst[to + i] = src[from + i]!;
  return len;
}

/**
 * A name in wire form (its labels and the root label), assembled from pieces and copied into
 * records: `clear()`, then labels, then `end()` with the name it ends in (or `set` in one go).
 */
export class WireName {
  readonly bytes = Buffer.allocUnsafe(NAME_ROOM);
  length = 0;

  /** Sets the name to `text` (dns-packet form: no trailing dot, `.` for the root). */
  set(text: string): this {
    this.length = writeLabels(text, this.bytes, 0);
    this.bytes[this.length++] = 0;
    return this;
  }

  /** Sets the name to the labels of `prefix` (dotted, may be empty) followed by `suffix`. */
  setPrefixed(prefix: string, suffix: WireName): this {
    return this.clear().labels(prefix).end(suffix);
  }

  /** Starts assembling the name. */
  clear(): this {
    this.length = 0;
    return this;
  }

  /** Appends the labels of `text` (dotted, no trailing dot). */
  labels(text: string): this {
    this.length = writeLabels(text, this.bytes, this.length);
    return this;
  }

  /**
   * Appends one label, `_` and `text` lower-cased (a port's or protocol's SRV label); `text` of
   * anything but printable ASCII without dots goes as {@link labels} writes `_${lower}`.
   */
  underscoreLabel(text: string): this {
    const b = this.bytes;
    const at = this.length;
    if (text.length === 0 || text.length > 62) return this.labels(`_${text.toLowerCase()}`);
    for (let i = 0; i < text.length; i++) {
      let c = text.charCodeAt(i);
      if (c <= 0x20 || c > 0x7e || c === 0x2e) {
        this.length = at;
        return this.labels(`_${text.toLowerCase()}`);
      }
      if (c >= 0x41 && c <= 0x5a) c |= 0x20;
      b[at + 2 + i] = c;
    }
    b[at] = text.length + 1;
    b[at + 1] = 0x5f;
    this.length = at + 2 + text.length;
    return this;
  }

  /** Ends the name with `suffix` (a whole name, down to the root). */
  end(suffix: WireName): this {
    this.length += copyBytes(suffix.bytes, 0, suffix.length, this.bytes, this.length);
    return this;
  }
}

/**
 * The labels of `text` (dotted, no trailing dot) at `off`, without the root label; returns the
 * offset after them. Plain ASCII labels are written here; anything else as dns-packet's name
 * encoder writes it, as the records written through dns-packet were.
 */
function writeLabels(text: string, buf: Buffer, off: number): number {
  if (text === '.' || text === '') return off;
  const o = writeName(text, buf, off);
  if (o >= 0) return o - 1;
  codec.name.encode(text, buf, off);
  return off + codec.name.encode.bytes - 1;
}

export class WireRecordBatch {
  private buf: Buffer;
  private ends: Uint32Array;
  /** Records in the batch. */
  count = 0;
  private off = 0;
  private rdata = 0;

  constructor(bytes = 16 * 1024, records = 256) {
    this.buf = Buffer.allocUnsafe(bytes);
    this.ends = new Uint32Array(records);
  }

  /** The records, one after the other: record `i` spans `start(i)` to `end(i)`. */
  get buffer(): Buffer {
    return this.buf;
  }

  start(i: number): number {
    return i === 0 ? 0 : this.ends[i - 1]!;
  }

  end(i: number): number {
    return this.ends[i]!;
  }

  /** Bytes of the records written. */
  get byteLength(): number {
    return this.count === 0 ? 0 : this.ends[this.count - 1]!;
  }

  /** Empties the batch for the next records (what was read from it is overwritten). */
  reset(): void {
    this.count = 0;
    this.off = 0;
  }

  /** Starts a record of `type` (class IN) owned by `owner`; its RDATA follows, then {@link endRecord}. */
  beginRecord(owner: WireName, type: number, ttl: number): void {
    if (this.buf.length - this.off < RECORD_ROOM) {
      const bigger = Buffer.allocUnsafe(2 * this.buf.length + RECORD_ROOM);
      this.buf.copy(bigger, 0, 0, this.off);
      this.buf = bigger;
    }
    const buf = this.buf;
    const o = this.off + copyBytes(owner.bytes, 0, owner.length, buf, this.off);
    buf.writeUInt16BE(type, o);
    buf.writeUInt16BE(CLASS_IN, o + 2);
    buf.writeUInt32BE(ttl >>> 0, o + 4);
    this.rdata = o + 10;
    this.off = o + 10;
  }

  /** RDATA: an IPv4 address given as its 32-bit value. */
  ipv4(n: number): void {
    this.buf.writeUInt32BE(n >>> 0, this.off);
    this.off += 4;
  }

  /** RDATA: raw bytes (an IPv6 address). */
  bytes(b: Uint8Array): void {
    this.buf.set(b, this.off);
    this.off += b.length;
  }

  /** RDATA: a 16-bit field. */
  uint16(v: number): void {
    this.buf.writeUInt16BE(v & 0xffff, this.off);
    this.off += 2;
  }

  /** RDATA: a name. */
  name(name: WireName): void {
    this.off += copyBytes(name.bytes, 0, name.length, this.buf, this.off);
  }

  /** Ends the record begun last: its RDLENGTH is filled in. */
  endRecord(): void {
    this.buf.writeUInt16BE(this.off - this.rdata, this.rdata - 2);
    if (this.count === this.ends.length) {
      const more = new Uint32Array(2 * this.ends.length);
      more.set(this.ends);
      this.ends = more;
    }
    this.ends[this.count++] = this.off;
  }

  /** The records as dns-packet decodes them (tests, and readers that want objects). */
  answers(): Answer[] {
    const out: Answer[] = [];
    for (let i = 0; i < this.count; i++) out.push(codec.answer.decode(this.buf, this.start(i)));
    return out;
  }
}
