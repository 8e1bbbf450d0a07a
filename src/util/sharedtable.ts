/**
 * A string → string table in one SharedArrayBuffer: one writer (the main thread), any number of
 * readers (query threads) reading it while it is written, without locks (docs/multicore.md §2).
 *
 * Layout of a generation (one SharedArrayBuffer, little-endian words):
 *   [0..HEADER)              header: magic, slot count
 *   [HEADER..HEADER+4·slots) slots: Int32 byte offset of the key's current entry, 0 = empty
 *   [arena...)               entries, appended, never changed once published:
 *                            u32 key length (UTF-16 units) · u32 value length (bytes, DELETED = removed)
 *                            · key as UTF-16 units · value as UTF-8, padded to 4 bytes
 *
 * Why this is safe without locks: an entry is written completely before its offset is stored in
 * the slot with `Atomics.store`, and readers load slots with `Atomics.load`, so a reader sees either
 * the old entry or the whole new one. Entries are never overwritten and keys never leave their slot,
 * so a probe chain never breaks under a reader. Replaced entries are garbage until the writer runs
 * out of arena or slots; then it builds a new generation from its source and hands it to the
 * readers (the old one is freed when the last reader lets go of it).
 */

const MAGIC = 0x53544231; // "STB1"
const HEADER = 16;
const DELETED = 0xffffffff;
/** Keys above this share of the slots make a new generation (probe chains stay short). */
const MAX_LOAD = 0.5;
/** Slots hold byte offsets in an Int32: a generation stays below 2 GiB. */
const MAX_BYTES = 2 ** 31 - 1;

/** What crosses to a reader: the buffer of one generation. */
export interface SharedTableGeneration {
  readonly sab: SharedArrayBuffer;
}

function hashKey(key: string): number {
  // FNV-1a over UTF-16 units.
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function align4(n: number): number {
  return (n + 3) & ~3;
}

function nextPow2(n: number): number {
  let p = 1024;
  while (p < n) p *= 2;
  return p;
}

/** Views over one generation, shared by the reader and the writer. */
class Views {
  readonly i32: Int32Array;
  readonly u32: Uint32Array;
  readonly u16: Uint16Array;
  readonly bytes: Buffer;
  readonly slots: number;
  readonly mask: number;
  readonly arenaStart: number;

  constructor(readonly sab: SharedArrayBuffer) {
    this.i32 = new Int32Array(sab);
    this.u32 = new Uint32Array(sab);
    this.u16 = new Uint16Array(sab);
    this.bytes = Buffer.from(sab);
    if (this.u32[0] !== MAGIC) throw new Error('not a shared table');
    this.slots = this.u32[1]!;
    this.mask = this.slots - 1;
    this.arenaStart = HEADER + 4 * this.slots;
  }

  /** The slot index holding `key`, or the empty slot where it would go. */
  find(key: string, h: number): { slot: number; entry: number } {
    const keyLen = key.length;
    for (let i = h & this.mask; ; i = (i + 1) & this.mask) {
      const entry = Atomics.load(this.i32, (HEADER >> 2) + i);
      if (entry === 0) return { slot: i, entry: 0 };
      if (this.u32[entry >> 2] !== keyLen) continue;
      const k = (entry + 8) >> 1;
      let same = true;
      for (let j = 0; j < keyLen; j++) {
        if (this.u16[k + j] !== key.charCodeAt(j)) {
          same = false;
          break;
        }
      }
      if (same) return { slot: i, entry };
    }
  }

  /** The value of the entry at `entry`, or undefined when it records a removal. */
  value(entry: number): string | undefined {
    const valLen = this.u32[(entry >> 2) + 1]!;
    if (valLen === DELETED) return undefined;
    const start = entry + 8 + align4(2 * this.u32[entry >> 2]!);
    return this.bytes.toString('utf8', start, start + valLen);
  }
}

/** A query thread's side: look keys up in the generation it was handed last. */
export class SharedTableReader {
  private views: Views;

  constructor(gen: SharedTableGeneration) {
    this.views = new Views(gen.sab);
  }

  /** Switch to a newer generation (the writer rebuilt the table). */
  adopt(gen: SharedTableGeneration): void {
    this.views = new Views(gen.sab);
  }

  get(key: string): string | undefined {
    const v = this.views;
    const { entry } = v.find(key, hashKey(key));
    return entry === 0 ? undefined : v.value(entry);
  }

  /**
   * The keys that start with `prefix` and hold a value, in slot order (a walk over every slot: for
   * rare whole-table reads such as a zone transfer, not for answering).
   */
  keys(prefix: string): string[] {
    const v = this.views;
    const out: string[] = [];
    for (let i = 0; i < v.slots; i++) {
      const entry = Atomics.load(v.i32, (HEADER >> 2) + i);
      if (entry === 0) continue;
      const keyLen = v.u32[entry >> 2]!;
      if (keyLen < prefix.length || v.u32[(entry >> 2) + 1] === DELETED) continue;
      const k = (entry + 8) >> 1;
      let match = true;
      for (let j = 0; j < prefix.length; j++) {
        if (v.u16[k + j] !== prefix.charCodeAt(j)) {
          match = false;
          break;
        }
      }
      if (match) out.push(String.fromCharCode(...v.u16.subarray(k, k + keyLen)));
    }
    return out;
  }
}

/** Sizes of the current generation (tests, docs/multicore.md). */
export interface SharedTableStats {
  readonly bytes: number;
  readonly slots: number;
  readonly keys: number;
  readonly arenaUsed: number;
  readonly liveBytes: number;
}

/**
 * The main thread's side. `set` and `delete` change the current generation in place and return
 * false when it is full: the caller then builds a new one with {@link rebuild} from its own source
 * of truth (the writer keeps no copy of the values).
 */
export class SharedTableWriter {
  private views: Views;
  private used: number;
  private keys = 0;
  /** Bytes of the entries that are current (garbage = used − arenaStart − live). */
  private live = 0;
  /** What the last refused `set`/`delete` ran out of. */
  private full: 'slots' | 'arena' | null = null;

  constructor(slots = 1024, arenaBytes = 1 << 20) {
    this.views = SharedTableWriter.allocate(slots, arenaBytes);
    this.used = this.views.arenaStart;
  }

  private static allocate(slots: number, arenaBytes: number): Views {
    const bytes = HEADER + 4 * slots + align4(arenaBytes);
    if (bytes > MAX_BYTES) throw new RangeError(`shared table of ${bytes} bytes: more than 2 GiB`);
    const sab = new SharedArrayBuffer(bytes);
    const u32 = new Uint32Array(sab);
    u32[0] = MAGIC;
    u32[1] = slots;
    return new Views(sab);
  }

  get generation(): SharedTableGeneration {
    return { sab: this.views.sab };
  }

  get stats(): SharedTableStats {
    const v = this.views;
    return {
      bytes: v.sab.byteLength,
      slots: v.slots,
      keys: this.keys,
      arenaUsed: this.used - v.arenaStart,
      liveBytes: this.live,
    };
  }

  /** The current value of `key` (the writer reads what it wrote before). */
  get(key: string): string | undefined {
    const { entry } = this.views.find(key, hashKey(key));
    return entry === 0 ? undefined : this.views.value(entry);
  }

  set(key: string, value: string): boolean {
    return this.put(key, value);
  }

  delete(key: string): boolean {
    return this.put(key, null);
  }

  private put(key: string, value: string | null): boolean {
    const v = this.views;
    const h = hashKey(key);
    const { slot, entry: old } = v.find(key, h);
    if (old === 0) {
      if (value === null) return true;
      if (this.keys + 1 > v.slots * MAX_LOAD) {
        this.full = 'slots';
        return false;
      }
    } else if (value === null && v.u32[(old >> 2) + 1] === DELETED) {
      return true;
    }
    const keyBytes = align4(2 * key.length);
    // UTF-8 is at most 3 bytes per UTF-16 unit.
    const maxVal = value === null ? 0 : 3 * value.length;
    const start = this.used;
    if (start + 8 + keyBytes + align4(maxVal) > v.sab.byteLength) {
      this.full = 'arena';
      return false;
    }
    v.u32[start >> 2] = key.length;
    const k = (start + 8) >> 1;
    for (let j = 0; j < key.length; j++) v.u16[k + j] = key.charCodeAt(j);
    // Values are well-formed UTF-16 (JSON text): UTF-8 round-trips them.
    const valLen = value === null ? DELETED : v.bytes.write(value, start + 8 + keyBytes, maxVal, 'utf8');
    v.u32[(start >> 2) + 1] = valLen;
    const size = 8 + keyBytes + (value === null ? 0 : align4(valLen));
    this.used += size;
    if (old !== 0) this.live -= this.entrySize(old);
    else this.keys++;
    this.live += size;
    // Publish: the entry is complete before a reader can reach it.
    Atomics.store(v.i32, (HEADER >> 2) + slot, start);
    return true;
  }

  private entrySize(entry: number): number {
    const v = this.views;
    const valLen = v.u32[(entry >> 2) + 1]!;
    return 8 + align4(2 * v.u32[entry >> 2]!) + (valLen === DELETED ? 0 : align4(valLen));
  }

  /** More than twice as much garbage as live entries: time for a new generation (its pages stay resident). */
  get wasteful(): boolean {
    const garbage = this.used - this.views.arenaStart - this.live;
    return garbage > 2 * this.live + (1 << 20);
  }

  /**
   * A new generation holding exactly the entries `fill` sets, sized for `keyCount` keys and
   * `byteEstimate` bytes with as much again to grow into. Readers keep the old one until they
   * adopt this one. When a guess is short, only what ran out is doubled and the fill runs again;
   * if allocating throws, the current generation stays as it was.
   */
  rebuild(keyCount: number, byteEstimate: number, fill: (set: (key: string, value: string) => void) => void): void {
    let slots = nextPow2(Math.ceil((keyCount + 1) / MAX_LOAD) * 2);
    let arena = Math.max(1 << 20, 2 * byteEstimate);
    const previous = { views: this.views, used: this.used, keys: this.keys, live: this.live };
    for (;;) {
      try {
        this.views = SharedTableWriter.allocate(slots, arena);
      } catch (e) {
        this.views = previous.views;
        this.used = previous.used;
        this.keys = previous.keys;
        this.live = previous.live;
        throw e;
      }
      this.used = this.views.arenaStart;
      this.keys = 0;
      this.live = 0;
      this.full = null;
      fill((key, value) => {
        if (this.full === null) this.put(key, value);
      });
      if (this.full === null) return;
      if (this.full === 'slots') slots *= 2;
      else arena *= 2;
    }
  }
}
