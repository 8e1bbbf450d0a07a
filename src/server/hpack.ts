/**
 * HPACK (RFC 7541): the header-block decoder of one HTTP/2 connection's receiving side, and the two
 * field representations our DoH responses are written with.
 *
 * This is on DoH's per-request path, so the decoder allocates nothing per field beyond the name
 * and value strings it returns: the dynamic table is a ring of two string arrays sized for the
 * most entries the table can hold, integers and positions live in fields of the decoder, Huffman
 * strings decode into one reusable scratch buffer (hpackhuffman.ts). Strings are latin1: HTTP/2
 * header names and values are octets, and latin1 keeps string length equal to octet count, which
 * is what table entry sizes (§4.1) and SETTINGS_MAX_HEADER_LIST_SIZE count.
 *
 * After 'compression-error' the decoder's table no longer matches the peer's: the connection must
 * end with COMPRESSION_ERROR (RFC 9113 §4.3) and the decoder must not be used again.
 */
import { huffmanDecode, huffmanDecodedMax } from './hpackhuffman.js';

/** Decoding outcome of one header block. */
export type HpackResult = 'ok' | 'compression-error' | 'too-large';

/** RFC 7541 Appendix A; index 0 is unused so that the arrays are indexed as the wire indexes them. */
const STATIC_NAMES: readonly string[] = [
  '',
  ':authority',
  ':method',
  ':method',
  ':path',
  ':path',
  ':scheme',
  ':scheme',
  ':status',
  ':status',
  ':status',
  ':status',
  ':status',
  ':status',
  ':status',
  'accept-charset',
  'accept-encoding',
  'accept-language',
  'accept-ranges',
  'accept',
  'access-control-allow-origin',
  'age',
  'allow',
  'authorization',
  'cache-control',
  'content-disposition',
  'content-encoding',
  'content-language',
  'content-length',
  'content-location',
  'content-range',
  'content-type',
  'cookie',
  'date',
  'etag',
  'expect',
  'expires',
  'from',
  'host',
  'if-match',
  'if-modified-since',
  'if-none-match',
  'if-range',
  'if-unmodified-since',
  'last-modified',
  'link',
  'location',
  'max-forwards',
  'proxy-authenticate',
  'proxy-authorization',
  'range',
  'referer',
  'refresh',
  'retry-after',
  'server',
  'set-cookie',
  'strict-transport-security',
  'transfer-encoding',
  'user-agent',
  'vary',
  'via',
  'www-authenticate',
];
const STATIC_VALUES: readonly string[] = [
  '',
  '',
  'GET',
  'POST',
  '/',
  '/index.html',
  'http',
  'https',
  '200',
  '204',
  '206',
  '304',
  '400',
  '404',
  '500',
  '',
  'gzip, deflate',
];
const STATIC_COUNT = 61;

function staticValue(index: number): string {
  return index < STATIC_VALUES.length ? STATIC_VALUES[index]! : '';
}

const EMPTY = Buffer.alloc(0);

/** Entry overhead of §4.1, also what SETTINGS_MAX_HEADER_LIST_SIZE adds per field (RFC 9113 §6.5.2). */
const ENTRY_OVERHEAD = 32;
/** Integers above this are refused (no HPACK quantity we accept comes near it). */
const MAX_INT = 0x7fffffff;
/** An integer's continuation bytes carry 7 bits each; 5 of them reach past MAX_INT already. */
const MAX_SHIFT = 28;

export class HpackDecoder {
  /** SETTINGS_HEADER_TABLE_SIZE we advertise: the bound of the peer's size updates. */
  private readonly maxTableSize: number;
  /** The table size the peer's encoder uses now (its last size update, else maxTableSize). */
  private capacity: number;
  /** Octets in the table by the §4.1 count. */
  private size = 0;
  // The dynamic table: a ring; `head` is the slot the next entry goes into, the newest entry is just
  // before it, and `count` entries back from there are live.
  private readonly names: string[];
  private readonly values: string[];
  private readonly slots: number;
  private head = 0;
  private count = 0;
  // The block being decoded (only during decode(), so that no caller's buffer is kept alive) and
  // the read position, kept here rather than returned in objects.
  private block: Buffer = EMPTY;
  private pos = 0;
  /** Where the block being decoded ends in `block`. */
  private end = 0;
  /** Huffman output; allocated on first use (a connection costs little until it sends headers). */
  private scratch: Buffer = EMPTY;

  /** maxTableSize: our SETTINGS_HEADER_TABLE_SIZE (4096 default); size updates above it are errors. */
  constructor(maxTableSize = 4096) {
    this.maxTableSize = maxTableSize;
    this.capacity = maxTableSize;
    // Every entry costs at least ENTRY_OVERHEAD octets, so this many slots can never overflow.
    this.slots = Math.floor(maxTableSize / ENTRY_OVERHEAD) + 1;
    this.names = new Array<string>(this.slots).fill('');
    this.values = new Array<string>(this.slots).fill('');
  }

  /**
   * Decode one complete header block (HEADERS + CONTINUATION payloads already joined, padding and
   * priority removed). Pushes name, value, name, value… onto `out` in order. `maxListSize` bounds the
   * decoded header list as SETTINGS_MAX_HEADER_LIST_SIZE counts it (sum of name.length + value.length
   * + 32 octets): past it, returns 'too-large' — but the dynamic table must still be updated for the
   * whole block (keep decoding, stop pushing), so the connection's HPACK state stays in step.
   * Any malformed input (bad integer, index 0 or out of range, truncated string, invalid Huffman
   * padding/EOS, size update not at the start of the block or above the max) returns 'compression-error'.
   */
  decode(block: Buffer, out: string[], maxListSize: number, start = 0, end = block.length): HpackResult {
    // The block may be a range of a larger buffer (a frame read in place): no view is made of it.
    this.block = block;
    this.pos = start;
    this.end = end;
    const result = this.decodeBlock(out, maxListSize);
    this.block = EMPTY;
    return result;
  }

  private decodeBlock(out: string[], maxListSize: number): HpackResult {
    const block = this.block;
    const end = this.end;
    let listSize = 0;
    let tooLarge = false;
    let fieldSeen = false;
    while (this.pos < end) {
      const first = block[this.pos]!;
      let name: string;
      let value: string;
      if (first & 0x80) {
        // §6.1 indexed header field.
        const index = this.readInt(7);
        if (index <= 0) return 'compression-error';
        if (index <= STATIC_COUNT) {
          name = STATIC_NAMES[index]!;
          value = staticValue(index);
        } else {
          const slot = this.slotOf(index);
          if (slot < 0) return 'compression-error';
          name = this.names[slot]!;
          value = this.values[slot]!;
        }
      } else if ((first & 0xe0) === 0x20) {
        // §6.3 dynamic table size update: only before the block's first field (§4.2).
        if (fieldSeen) return 'compression-error';
        const newSize = this.readInt(5);
        if (newSize < 0 || newSize > this.maxTableSize) return 'compression-error';
        this.capacity = newSize;
        this.evictTo(newSize);
        continue;
      } else {
        // §6.2: with incremental indexing (01xxxxxx, 6-bit index), without indexing (0000xxxx) or
        // never indexed (0001xxxx), both with a 4-bit index.
        const indexing = (first & 0x40) !== 0;
        const index = this.readInt(indexing ? 6 : 4);
        if (index < 0) return 'compression-error';
        if (index === 0) {
          const literal = this.readString();
          if (literal === null) return 'compression-error';
          name = literal;
        } else if (index <= STATIC_COUNT) {
          name = STATIC_NAMES[index]!;
        } else {
          const slot = this.slotOf(index);
          if (slot < 0) return 'compression-error';
          name = this.names[slot]!;
        }
        const literal = this.readString();
        if (literal === null) return 'compression-error';
        value = literal;
        if (indexing) this.insert(name, value);
      }
      fieldSeen = true;
      listSize += name.length + value.length + ENTRY_OVERHEAD;
      if (listSize > maxListSize) tooLarge = true;
      if (!tooLarge) out.push(name, value);
    }
    return tooLarge ? 'too-large' : 'ok';
  }

  /** Ring slot of wire index `index` (> 61), or -1 if the table holds no such entry. */
  private slotOf(index: number): number {
    const back = index - STATIC_COUNT;
    if (back > this.count) return -1;
    const slot = this.head - back;
    return slot < 0 ? slot + this.slots : slot;
  }

  /** §4.4: evict from the oldest end to make room; an entry larger than the table empties it. */
  private insert(name: string, value: string): void {
    const entrySize = name.length + value.length + ENTRY_OVERHEAD;
    if (entrySize > this.capacity) {
      this.evictTo(0);
      return;
    }
    this.evictTo(this.capacity - entrySize);
    this.names[this.head] = name;
    this.values[this.head] = value;
    this.head = this.head + 1 === this.slots ? 0 : this.head + 1;
    this.count++;
    this.size += entrySize;
  }

  /** Evict oldest entries until the table holds at most `limit` octets. */
  private evictTo(limit: number): void {
    while (this.size > limit) {
      let oldest = this.head - this.count;
      if (oldest < 0) oldest += this.slots;
      this.size -= this.names[oldest]!.length + this.values[oldest]!.length + ENTRY_OVERHEAD;
      // Drop the references so that evicted strings can be collected.
      this.names[oldest] = '';
      this.values[oldest] = '';
      this.count--;
    }
  }

  /** §5.1 integer with an N-bit prefix at `pos`; -1 if truncated or too large. */
  private readInt(prefixBits: number): number {
    const block = this.block;
    const mask = (1 << prefixBits) - 1;
    let value = block[this.pos++]! & mask;
    if (value < mask) return value;
    let shift = 0;
    for (;;) {
      if (this.pos >= this.end || shift > MAX_SHIFT) return -1;
      const b = block[this.pos++]!;
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) break;
      shift += 7;
    }
    return value > MAX_INT ? -1 : value;
  }

  /** §5.2 string literal at `pos` as latin1; null if truncated or its Huffman code is invalid. */
  private readString(): string | null {
    const block = this.block;
    if (this.pos >= this.end) return null;
    const huffman = (block[this.pos]! & 0x80) !== 0;
    const length = this.readInt(7);
    if (length < 0 || length > this.end - this.pos) return null;
    const start = this.pos;
    this.pos += length;
    if (!huffman) return block.toString('latin1', start, start + length);
    const need = huffmanDecodedMax(length);
    if (need > this.scratch.length) this.scratch = Buffer.allocUnsafe(Math.max(need, 256, this.scratch.length * 2));
    const decoded = huffmanDecode(block, start, start + length, this.scratch);
    if (decoded < 0) return null;
    return this.scratch.toString('latin1', 0, decoded);
  }
}

/** §5.1: `value` with an N-bit prefix into buf[off], whose high bits are `flags`; returns the new offset. */
function writeInt(buf: Buffer, off: number, value: number, prefixBits: number, flags: number): number {
  const mask = (1 << prefixBits) - 1;
  if (value < mask) {
    buf[off++] = flags | value;
    return off;
  }
  buf[off++] = flags | mask;
  let rest = value - mask;
  while (rest >= 0x80) {
    buf[off++] = (rest & 0x7f) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  buf[off++] = rest;
  return off;
}

/** §5.2 string literal, raw (H = 0), latin1. */
function writeString(buf: Buffer, off: number, s: string): number {
  off = writeInt(buf, off, s.length, 7, 0);
  return off + buf.write(s, off, 'latin1');
}

/** Append a literal header field without indexing (RFC 7541 §6.2.2) with a static-table name index (or 0 = literal name), raw (non-Huffman) value, to `buf` at `off`; returns the new offset. Caller makes sure there is room. */
export function writeLiteralWithoutIndexing(
  buf: Buffer,
  off: number,
  nameIndex: number,
  name: string,
  value: string,
): number {
  off = writeInt(buf, off, nameIndex, 4, 0x00);
  if (nameIndex === 0) off = writeString(buf, off, name);
  return writeString(buf, off, value);
}

/** Append an indexed header field (§6.1) for a static table index. */
export function writeIndexed(buf: Buffer, off: number, index: number): number {
  return writeInt(buf, off, index, 7, 0x80);
}

/** Static table index of `:status` values 200, 204, 206, 304, 400, 404, 500 (RFC 7541 Appendix A), or 0. */
export function staticStatusIndex(status: number): number {
  switch (status) {
    case 200:
      return 8;
    case 204:
      return 9;
    case 206:
      return 10;
    case 304:
      return 11;
    case 400:
      return 12;
    case 404:
      return 13;
    case 500:
      return 14;
    default:
      return 0;
  }
}
