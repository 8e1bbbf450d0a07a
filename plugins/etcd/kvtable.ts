/**
 * The etcd keys under the plugin's path as the lookups read them, in one shared table
 * (src/util/sharedtable.ts) so that query threads read the main thread's copy instead of keeping
 * their own (docs/multicore.md §2). CoreDNS answers every lookup with a prefix range read; the
 * table answers the same two questions — one key, and every key below a directory — from memory:
 *
 *   `k` + key  →  lease id, a newline, the value
 *   `d` + dir  →  JSON array of the names directly below `dir` (a key `dir/x`, or a directory `dir/x`)
 *   `l` + id   →  the lease's expiry time (ms since the epoch), while a key uses the lease
 *   `!`        →  JSON {synced, error}: has the index been listed once, and the last failure
 *
 * A "directory" is any key prefix that ends before a `/`: etcd keys are flat, and the subtree a
 * prefix range over `dir/` returns is exactly the keys reached by walking these entries.
 */
import type { SharedTableGeneration } from '../../src/util/sharedtable.js';

export const STATUS_KEY = '!';

export interface KvEntry {
  readonly key: string;
  readonly value: string;
  /** Lease id, '0' when none. */
  readonly lease: string;
}

export interface IndexStatus {
  /** The prefix has been listed at least once: answers come from the index. */
  readonly synced: boolean;
  /** Why the index is not (or no longer) following etcd; null while it is. */
  readonly error: string | null;
}

/** Something with a table's `get` (the main thread's writer or a thread's reader). */
export interface TableGet {
  get(key: string): string | undefined;
}

export function encodeEntry(value: string, lease: string): string {
  return `${lease}\n${value}`;
}

/** Byte order of UTF-8 keys, as etcd returns a range (UTF-16 order differs only above the BMP). */
function byteOrder(a: KvEntry, b: KvEntry): number {
  return Buffer.compare(Buffer.from(a.key, 'utf8'), Buffer.from(b.key, 'utf8'));
}

/** The read side: what a lookup asks of the index, the same in every thread. */
export class KvView {
  constructor(private readonly table: () => TableGet | null) {}

  status(): IndexStatus {
    const t = this.table();
    if (!t) return { synced: false, error: 'waiting for the index of the main thread' };
    const s = t.get(STATUS_KEY);
    if (s === undefined) return { synced: false, error: 'not listed yet' };
    return JSON.parse(s) as IndexStatus;
  }

  get(key: string): KvEntry | undefined {
    const raw = this.table()?.get(`k${key}`);
    if (raw === undefined) return undefined;
    const nl = raw.indexOf('\n');
    return { key, lease: raw.slice(0, nl), value: raw.slice(nl + 1) };
  }

  /** Every key starting with `dir` + '/', in etcd's key order (a prefix range over `dir/`). */
  below(dir: string): KvEntry[] {
    const t = this.table();
    if (!t) return [];
    const out: KvEntry[] = [];
    const walk = (d: string): void => {
      const raw = t.get(`d${d}`);
      if (raw === undefined) return;
      for (const child of JSON.parse(raw) as string[]) {
        const full = `${d}/${child}`;
        const e = this.get(full);
        if (e) out.push(e);
        walk(full);
      }
    };
    walk(dir);
    return out.sort(byteOrder);
  }

  /** Seconds left on a lease, 0 when unknown or expired (then the value's own TTL applies). */
  leaseTtl(lease: string, now = Date.now()): number {
    const raw = this.table()?.get(`l${lease}`);
    if (raw === undefined) return 0;
    const left = Math.ceil((Number(raw) - now) / 1000);
    return left > 0 ? left : 0;
  }
}

/** The message a query thread gets: a new generation of the table. */
export interface TableFeed {
  readonly generation: SharedTableGeneration;
}

export function parseTableFeed(m: unknown): TableFeed {
  if (typeof m !== 'object' || m === null) throw new Error('etcd: index feed from the main thread is not an object');
  const gen = (m as { generation?: unknown }).generation;
  if (typeof gen !== 'object' || gen === null || !((gen as { sab?: unknown }).sab instanceof SharedArrayBuffer))
    throw new Error('etcd: index feed from the main thread has no SharedArrayBuffer');
  return { generation: { sab: (gen as { sab: SharedArrayBuffer }).sab } };
}
