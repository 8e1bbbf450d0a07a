/**
 * A protocol-buffers writer for the few wire types dnstap uses: varint (enums, uint32/uint64),
 * fixed32 and length-delimited bytes. Hand-written so dnstap needs no protobuf dependency; fields
 * are written in the order the caller adds them (Go's proto.Marshal writes ascending field
 * numbers, so callers do the same and the bytes equal CoreDNS's).
 */
/** The bytes of `v` as a varint (up to 2^53). */
export function varintSize(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 0x80);
    n++;
  }
  return n;
}

/** Byte strings up to this long are copied by a loop: a typed-array `set` costs more for them. */
const SHORT_COPY = 32;

export class ProtoWriter {
  private buf: Buffer;
  private len = 0;

  constructor(private readonly initial = 256) {
    this.buf = Buffer.allocUnsafe(initial);
  }

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  private varint(v: number): void {
    this.reserve(10);
    const buf = this.buf;
    let at = this.len;
    if (v <= 0xffffffff) {
      // Ports, lengths and today's seconds: 32-bit shifts.
      while (v >= 0x80) {
        buf[at++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
    } else {
      // Up to 2^53: the division keeps bits above 32 that `>>>` would lose.
      while (v >= 0x80) {
        buf[at++] = (v % 0x80) | 0x80;
        v = Math.floor(v / 0x80);
      }
    }
    buf[at++] = v;
    this.len = at;
  }

  /** Wire type 0: an enum, uint32 or uint64 field. */
  uint(field: number, v: number): this {
    this.varint(field << 3);
    this.varint(v);
    return this;
  }

  /** Wire type 5: a fixed32 field, little-endian. */
  fixed32(field: number, v: number): this {
    this.varint((field << 3) | 5);
    this.reserve(4);
    const buf = this.buf;
    const at = this.len;
    buf[at] = v & 0xff;
    buf[at + 1] = (v >>> 8) & 0xff;
    buf[at + 2] = (v >>> 16) & 0xff;
    buf[at + 3] = (v >>> 24) & 0xff;
    this.len = at + 4;
    return this;
  }

  /** Wire type 2: a bytes, string or embedded-message field. */
  bytes(field: number, v: Uint8Array): this {
    this.varint((field << 3) | 2);
    this.varint(v.length);
    return this.raw(v);
  }

  /**
   * The tag and length of a length-delimited field whose `n` bytes the caller writes next (an
   * embedded message written in place).
   */
  lengthDelimited(field: number, n: number): this {
    this.varint((field << 3) | 2);
    this.varint(n);
    return this;
  }

  /** Bytes already encoded (fields prepared once), appended as they are. */
  raw(v: Uint8Array): this {
    const n = v.length;
    this.reserve(n);
    const buf = this.buf;
    const at = this.len;
    if (n <= SHORT_COPY) for (let i = 0; i < n; i++) buf[at + i] = v[i] as number;
    else buf.set(v, at);
    this.len = at + n;
    return this;
  }

  /** Bytes written so far. */
  get length(): number {
    return this.len;
  }

  /** Four bytes to be filled in later with {@link setUInt32BE}; their offset. */
  placeholder32(): number {
    this.reserve(4);
    const at = this.len;
    this.len += 4;
    return at;
  }

  /** A big-endian uint32 at `at` (a Frame Streams frame length, outside the protobuf). */
  setUInt32BE(at: number, v: number): void {
    this.buf.writeUInt32BE(v >>> 0, at);
  }

  /**
   * The bytes written so far, handed over: the writer starts a new buffer, so the caller may keep
   * them (a socket write in flight) without a copy. The new one is as large as the old, unless that
   * grew past four times the initial size (a backlog behind a slow reader), which is not kept.
   */
  take(): Buffer {
    const out = this.buf.subarray(0, this.len);
    this.buf = Buffer.allocUnsafe(this.buf.length <= 4 * this.initial ? this.buf.length : this.initial);
    this.len = 0;
    return out;
  }

  /** Start over, keeping the buffer (a scratch writer reused for every record). */
  reset(): this {
    this.len = 0;
    return this;
  }

  /** The bytes written so far: a view of the writer's buffer, valid until the next write or reset. */
  finish(): Buffer {
    return this.buf.subarray(0, this.len);
  }
}
