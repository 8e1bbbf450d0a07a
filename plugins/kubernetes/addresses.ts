/**
 * Compact storage of the endpoint addresses in the index. At 150,000 endpoints an address kept as
 * a V8 string (32 bytes, plus an 8-byte array slot) and a Map entry keyed by it (24-48 bytes
 * depending on where the Map sits between its growth steps) were a third of the index's memory.
 * IPv4 addresses are kept as 32-bit numbers instead:
 * - a slice's addresses are packed into one string, two UTF-16 code units per address
 *   (`PackedAddresses`): 4 bytes an address, immutable, on the V8 heap, no per-slice buffer;
 * - `AddressIndex` keys IPv4 addresses by number in an open-addressing table of typed arrays.
 * IPv6 addresses stay canonical strings (few clusters have many).
 */

/** Canonical IPv4 dotted quad → its 32-bit value; -1 when the text is not one. */
export function parseIPv4(s: string): number {
  let n = 0;
  let octet = -1;
  let dots = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (octet < 0 || dots === 3) return -1;
      n = n * 256 + octet;
      octet = -1;
      dots++;
    } else if (c >= 48 && c <= 57) {
      if (octet === 0) return -1; // leading zero: not canonical
      octet = octet < 0 ? c - 48 : octet * 10 + (c - 48);
      if (octet > 255) return -1;
    } else return -1;
  }
  if (dots !== 3 || octet < 0) return -1;
  return n * 256 + octet;
}

export function formatIPv4(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** IPv4 addresses packed two code units each (one string), or IPv6 addresses as strings. */
export type PackedAddresses = string | readonly string[];

/** Pack canonical addresses: IPv4 ones into a string when every one is IPv4, else the list. */
export function packAddresses(addrs: readonly string[]): PackedAddresses {
  const codes: number[] = [];
  for (const a of addrs) {
    const n = parseIPv4(a);
    if (n < 0) return addrs.slice();
    codes.push(n >>> 16, n & 0xffff);
  }
  let out = '';
  // fromCharCode takes its codes as arguments: stay well under the engine's argument limit.
  for (let i = 0; i < codes.length; i += 8192) out += String.fromCharCode(...codes.slice(i, i + 8192));
  return out;
}

export function addressCount(a: PackedAddresses): number {
  return typeof a === 'string' ? a.length >> 1 : a.length;
}

/** The 32-bit value of IPv4 entry `i` of a packed string. */
export function ipv4At(a: string, i: number): number {
  return ((a.charCodeAt(2 * i) << 16) | a.charCodeAt(2 * i + 1)) >>> 0;
}

export function addressAt(a: PackedAddresses, i: number): string {
  return typeof a === 'string' ? formatIPv4(ipv4At(a, i)) : a[i]!;
}

/** Is entry `i` the address `ip` (canonical)? */
export function addressIs(a: PackedAddresses, i: number, ip: string): boolean {
  return typeof a === 'string' ? ipv4At(a, i) === parseIPv4(ip) : a[i] === ip;
}

export function addressList(a: PackedAddresses): string[] {
  const out: string[] = [];
  for (let i = 0; i < addressCount(a); i++) out.push(addressAt(a, i));
  return out;
}

/** A value set as the indexes keep it: a lone value as itself, several in a Set. */
type Values = string | Set<string>;

function added(cur: Values | undefined, v: string): Values {
  if (cur === undefined) return v;
  if (typeof cur === 'string') return cur === v ? cur : new Set([cur, v]);
  cur.add(v);
  return cur;
}

/** The values left after removing `v`; undefined when none. */
function removed(cur: Values, v: string): Values | undefined {
  if (typeof cur === 'string') return cur === v ? undefined : cur;
  cur.delete(v);
  if (cur.size === 0) return undefined;
  return cur.size === 1 ? (cur.values().next().value as string) : cur;
}

/**
 * A one-to-many index that stores a lone value as a plain string and only allocates a Set for keys
 * with several values: at 150,000 endpoint addresses, almost all of them in exactly one slice, a
 * Set per key was a large share of the index's memory.
 */
export class MultiIndex {
  private readonly map = new Map<string, Values>();

  get size(): number {
    return this.map.size;
  }

  has(k: string): boolean {
    return this.map.has(k);
  }

  get(k: string): Iterable<string> | undefined {
    const v = this.map.get(k);
    return typeof v === 'string' ? [v] : v;
  }

  add(k: string, v: string): void {
    this.map.set(k, added(this.map.get(k), v));
  }

  delete(k: string, v: string): void {
    const cur = this.map.get(k);
    if (cur === undefined) return;
    const left = removed(cur, v);
    if (left === undefined) this.map.delete(k);
    else if (left !== cur) this.map.set(k, left);
  }
}

/**
 * Open addressing with linear probing over 32-bit keys: 12 bytes a slot, at most 3/4 full. An
 * empty slot is one whose value is undefined, so every key (0.0.0.0 too) is storable; deletion
 * shifts the rest of the probe run back instead of leaving tombstones.
 */
class U32Table {
  private keys = new Uint32Array(16);
  private vals: (Values | undefined)[] = new Array<Values | undefined>(16).fill(undefined);
  private mask = 15;
  /** 32 - log2(capacity): the slot is the top bits of the product (Fibonacci hashing). */
  private shift = 28;
  size = 0;

  private slot(k: number): number {
    return Math.imul(k, 0x9e3779b1) >>> this.shift;
  }

  private find(k: number): number {
    for (let i = this.slot(k); ; i = (i + 1) & this.mask) {
      if (this.vals[i] === undefined || this.keys[i] === k) return i;
    }
  }

  get(k: number): Values | undefined {
    return this.vals[this.find(k)];
  }

  set(k: number, v: Values): void {
    const i = this.find(k);
    if (this.vals[i] === undefined) {
      this.keys[i] = k;
      this.size++;
    }
    this.vals[i] = v;
    if (this.size * 4 > this.keys.length * 3) this.resize(this.keys.length * 2);
  }

  delete(k: number): void {
    let i = this.find(k);
    if (this.vals[i] === undefined) return;
    this.vals[i] = undefined;
    this.size--;
    // Move back any entry of the run after i whose home slot is not between the gap and it.
    for (let j = (i + 1) & this.mask; this.vals[j] !== undefined; j = (j + 1) & this.mask) {
      const home = this.slot(this.keys[j]!);
      if (((j - home) & this.mask) >= ((j - i) & this.mask)) {
        this.keys[i] = this.keys[j]!;
        this.vals[i] = this.vals[j];
        this.vals[j] = undefined;
        i = j;
      }
    }
    if (this.keys.length > 1024 && this.size * 8 < this.keys.length) this.resize(this.keys.length / 2);
  }

  private resize(capacity: number): void {
    const keys = this.keys;
    const vals = this.vals;
    this.keys = new Uint32Array(capacity);
    this.vals = new Array<Values | undefined>(capacity).fill(undefined);
    this.mask = capacity - 1;
    this.shift = 32 - Math.log2(capacity);
    for (let i = 0; i < keys.length; i++) {
      const v = vals[i];
      if (v === undefined) continue;
      const j = this.find(keys[i]!);
      this.keys[j] = keys[i]!;
      this.vals[j] = v;
    }
  }
}

/** MultiIndex keyed by canonical IP address, IPv4 addresses by number (see the top of the file). */
export class AddressIndex {
  private readonly v4 = new U32Table();
  private readonly other = new MultiIndex();

  get size(): number {
    return this.v4.size + this.other.size;
  }

  has(ip: string): boolean {
    const n = parseIPv4(ip);
    return n < 0 ? this.other.has(ip) : this.v4.get(n) !== undefined;
  }

  get(ip: string): Iterable<string> | undefined {
    const n = parseIPv4(ip);
    if (n < 0) return this.other.get(ip);
    const v = this.v4.get(n);
    return typeof v === 'string' ? [v] : v;
  }

  add(ip: string, v: string): void {
    const n = parseIPv4(ip);
    if (n < 0) this.other.add(ip, v);
    else this.v4.set(n, added(this.v4.get(n), v));
  }

  delete(ip: string, v: string): void {
    const n = parseIPv4(ip);
    if (n < 0) return this.other.delete(ip, v);
    const cur = this.v4.get(n);
    if (cur === undefined) return;
    const left = removed(cur, v);
    if (left === undefined) this.v4.delete(n);
    else if (left !== cur) this.v4.set(n, left);
  }
}
