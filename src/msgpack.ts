/**
 * A MessagePack encoder (https://github.com/msgpack/msgpack/blob/master/spec.md) for the few types
 * the Datadog agent's trace API takes (plugins/trace/datadog.ts): maps, arrays, strings, integers
 * up to 64 bits, float64, booleans and nil. Integers take the shortest form, as tinylib/msgp
 * (dd-trace-go's encoder) writes them; the agent's decoder takes any.
 */

export class MsgpackWriter {
  private buf: Buffer;
  private len = 0;

  constructor(initial = 256) {
    this.buf = Buffer.allocUnsafe(initial);
  }

  /** The bytes written so far (a view, valid until the next write). */
  bytes(): Buffer {
    return this.buf.subarray(0, this.len);
  }

  get length(): number {
    return this.len;
  }

  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  nil(): this {
    this.room(1);
    this.buf[this.len++] = 0xc0;
    return this;
  }

  bool(v: boolean): this {
    this.room(1);
    this.buf[this.len++] = v ? 0xc3 : 0xc2;
    return this;
  }

  arrayHeader(n: number): this {
    return this.header(n, 0x90, 0xdc, 0xdd);
  }

  mapHeader(n: number): this {
    return this.header(n, 0x80, 0xde, 0xdf);
  }

  private header(n: number, fix: number, c16: number, c32: number): this {
    this.room(5);
    if (n < 16) this.buf[this.len++] = fix | n;
    else if (n <= 0xffff) {
      this.buf[this.len++] = c16;
      this.len = this.buf.writeUInt16BE(n, this.len);
    } else {
      this.buf[this.len++] = c32;
      this.len = this.buf.writeUInt32BE(n, this.len);
    }
    return this;
  }

  str(s: string): this {
    const n = Buffer.byteLength(s);
    this.room(5 + n);
    if (n < 32) this.buf[this.len++] = 0xa0 | n;
    else if (n <= 0xff) {
      this.buf[this.len++] = 0xd9;
      this.buf[this.len++] = n;
    } else if (n <= 0xffff) {
      this.buf[this.len++] = 0xda;
      this.len = this.buf.writeUInt16BE(n, this.len);
    } else {
      this.buf[this.len++] = 0xdb;
      this.len = this.buf.writeUInt32BE(n, this.len);
    }
    this.len += this.buf.write(s, this.len, 'utf8');
    return this;
  }

  float64(v: number): this {
    this.room(9);
    this.buf[this.len++] = 0xcb;
    this.len = this.buf.writeDoubleBE(v, this.len);
    return this;
  }

  /** An integer: a safe-integer number, or a bigint from -2^63 to 2^64-1. */
  int(v: number | bigint): this {
    if (typeof v === 'number') {
      if (!Number.isSafeInteger(v)) throw new RangeError(`msgpack: ${v} is not a safe integer`);
      if (v >= 0 && v < 0x80) {
        this.room(1);
        this.buf[this.len++] = v;
        return this;
      }
      if (v < 0 && v >= -32) {
        this.room(1);
        this.buf[this.len++] = v & 0xff;
        return this;
      }
      return this.big(BigInt(v));
    }
    return this.big(v);
  }

  private big(v: bigint): this {
    this.room(9);
    if (v >= 0n) {
      if (v <= 0xffn) {
        this.buf[this.len++] = 0xcc;
        this.buf[this.len++] = Number(v);
      } else if (v <= 0xffffn) {
        this.buf[this.len++] = 0xcd;
        this.len = this.buf.writeUInt16BE(Number(v), this.len);
      } else if (v <= 0xffffffffn) {
        this.buf[this.len++] = 0xce;
        this.len = this.buf.writeUInt32BE(Number(v), this.len);
      } else if (v <= 0xffffffffffffffffn) {
        this.buf[this.len++] = 0xcf;
        this.len = this.buf.writeBigUInt64BE(v, this.len);
      } else throw new RangeError(`msgpack: ${v} does not fit 64 bits`);
    } else if (v >= -0x80n) {
      this.buf[this.len++] = 0xd0;
      this.len = this.buf.writeInt8(Number(v), this.len);
    } else if (v >= -0x8000n) {
      this.buf[this.len++] = 0xd1;
      this.len = this.buf.writeInt16BE(Number(v), this.len);
    } else if (v >= -0x80000000n) {
      this.buf[this.len++] = 0xd2;
      this.len = this.buf.writeInt32BE(Number(v), this.len);
    } else if (v >= -0x8000000000000000n) {
      this.buf[this.len++] = 0xd3;
      this.len = this.buf.writeBigInt64BE(v, this.len);
    } else throw new RangeError(`msgpack: ${v} does not fit 64 bits`);
    return this;
  }

  /** Bytes already encoded (a whole value). */
  raw(b: Uint8Array): this {
    this.room(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
    return this;
  }
}
