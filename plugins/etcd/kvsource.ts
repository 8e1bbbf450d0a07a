/**
 * The etcd index of one (endpoints, path, credentials, TLS) in the main thread: list the prefix
 * once, watch it from the listed revision, and keep the keys in memory and in the shared table
 * the lookups read (kvtable.ts). One per process whatever the number of query threads: the threads
 * read the same table (kvreplica.ts), as the kubernetes index is shared (docs/multicore.md §2).
 *
 * Failures (README.md, "Consistency and failures"): before the first list succeeds the index is
 * not synced and lookups answer SERVFAIL; once listed, a broken watch, an unreachable etcd or a
 * compacted revision keeps the last known keys answering while the source lists again with a
 * backoff (0.5 s doubling to 10 s), and the new list replaces them in one batch. A watch is
 * checked every 10 s with a one-key read, so an endpoint that stops answering without closing its
 * connection is left within about 15 s.
 */
import type { Logger } from '../../src/log.js';
import type { Offer, ReplicationSource } from '../../src/server/replication.js';
import { SharedTableWriter } from '../../src/util/sharedtable.js';
import type { EtcdClient, Kv, Watch, WatchEvent } from './client.js';
import { encodeEntry, KvView, parseTableFeed, STATUS_KEY, type IndexStatus, type TableFeed } from './kvtable.js';

const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 10_000;
const PING_MS = 10_000;
const LEASE_REFRESH_MS = 10_000;

interface Stored {
  readonly value: string;
  readonly lease: string;
}

export interface SourceOptions {
  readonly client: EtcdClient;
  /** The prefix watched: the plugin's path root with a trailing `/` (`/skydns/`). */
  readonly prefix: string;
  readonly log: Logger;
  readonly replication?: { readonly source: ReplicationSource; readonly key: string };
}

export class KvSource {
  private readonly keys = new Map<string, Stored>();
  /** dir → (child name → number of keys at or below `dir/child`). */
  private readonly dirs = new Map<string, Map<string, number>>();
  /** lease id → number of keys using it. */
  private readonly leases = new Map<string, number>();
  private readonly leaseDeadlines = new Map<string, number>();
  private readonly writer = new SharedTableWriter();
  private readonly offer: Offer<TableFeed> | null;
  readonly view: KvView;
  private status: IndexStatus = { synced: false, error: 'not listed yet' };
  private watch: Watch | null = null;
  private timer: NodeJS.Timeout | null = null;
  private pinger: NodeJS.Timeout | null = null;
  private leaseTimer: NodeJS.Timeout | null = null;
  private backoff = BACKOFF_MIN_MS;
  private stopped = false;
  /** Set when a failure was logged, so that the recovery is logged once too. */
  private failing = false;
  private started: Promise<void> | null = null;

  constructor(private readonly o: SourceOptions) {
    this.view = new KvView(() => this.writer);
    this.writeStatus();
    this.offer =
      o.replication?.source.offer({ key: o.replication.key, parse: parseTableFeed }, () => [
        { generation: this.writer.generation },
      ]) ?? null;
  }

  /** Start listing (once); resolves after the first attempt, whatever its outcome. */
  start(): Promise<void> {
    this.started ??= this.cycle();
    this.leaseTimer ??= setInterval(() => void this.refreshLeases(), LEASE_REFRESH_MS).unref();
    return this.started;
  }

  /** One list then a watch; on any failure the next cycle is scheduled. */
  private async cycle(): Promise<void> {
    if (this.stopped) return;
    const c = this.o.client;
    let revision: number;
    try {
      const r = await c.rangePrefix(this.o.prefix);
      if (this.stopped) return;
      revision = r.revision;
      this.replaceAll(r.kvs);
      // Listed: the keys answer from now on, even if the watch that follows fails.
      this.setStatus({ synced: true, error: this.status.error });
    } catch (e) {
      this.fail(`list of ${this.o.prefix} on ${c.endpoint}: ${(e as Error).message}`);
      return;
    }
    this.watch = c.watch(this.o.prefix, revision + 1, {
      created: () => {
        this.backoff = BACKOFF_MIN_MS;
        if (this.failing) this.o.log.info(`watching ${this.o.prefix} on ${c.endpoint} again from revision ${revision}`);
        this.failing = false;
        this.setStatus({ synced: true, error: null });
        this.pinger = setInterval(() => {
          c.ping(this.o.prefix).catch((e: unknown) => {
            const w = this.watch;
            this.ended(new Error(`no answer to a read: ${(e as Error).message}`), false);
            w?.close();
          });
        }, PING_MS).unref();
      },
      events: (events) => this.apply(events),
      ended: (err, compacted) => this.ended(err, compacted),
    });
  }

  private ended(err: Error, compacted: boolean): void {
    if (this.stopped || this.watch === null) return;
    this.watch = null;
    if (this.pinger) clearInterval(this.pinger);
    this.pinger = null;
    if (compacted) this.backoff = 0;
    this.fail(`watch of ${this.o.prefix} on ${this.o.client.endpoint}: ${err.message}`);
  }

  private fail(why: string): void {
    if (!this.failing) this.o.log.warning(`${why}; listing again`);
    this.failing = true;
    // The keys listed last keep answering (synced stays as it was); the error says why they may be old.
    this.setStatus({ synced: this.status.synced, error: why });
    const wait = this.backoff;
    this.backoff = Math.min(BACKOFF_MAX_MS, Math.max(BACKOFF_MIN_MS, this.backoff * 2));
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.cycle();
    }, wait);
    this.timer.unref();
  }

  private setStatus(s: IndexStatus): void {
    if (s.synced === this.status.synced && s.error === this.status.error) return;
    this.status = s;
    this.writeStatus();
  }

  private writeStatus(): void {
    this.put(STATUS_KEY, JSON.stringify(this.status));
  }

  /** A list result: every key as listed, the rest deleted. */
  private replaceAll(kvs: readonly Kv[]): void {
    const seen = new Set<string>();
    const changes: WatchEvent[] = [];
    for (const kv of kvs) {
      seen.add(kv.key);
      const old = this.keys.get(kv.key);
      if (!old || old.value !== kv.value || old.lease !== kv.lease) changes.push({ type: 'put', kv });
    }
    for (const k of this.keys.keys()) if (!seen.has(k)) changes.push({ type: 'delete', key: k });
    this.apply(changes);
  }

  private apply(events: readonly WatchEvent[]): void {
    const dirty = new Set<string>();
    const newLeases: string[] = [];
    for (const e of events) {
      const key = e.type === 'put' ? e.kv.key : e.key;
      if (!key.startsWith(this.o.prefix)) continue;
      const old = this.keys.get(key);
      if (old) this.release(old.lease);
      if (e.type === 'delete') {
        if (!old) continue;
        this.keys.delete(key);
        this.count(key, -1, dirty);
        this.put(`k${key}`, null);
        continue;
      }
      const stored = { value: e.kv.value, lease: e.kv.lease };
      this.keys.set(key, stored);
      if (!old) this.count(key, 1, dirty);
      if (stored.lease !== '0' && this.hold(stored.lease)) newLeases.push(stored.lease);
      this.put(`k${key}`, encodeEntry(stored.value, stored.lease));
    }
    for (const d of dirty) {
      const children = this.dirs.get(d);
      this.put(`d${d}`, children ? JSON.stringify([...children.keys()]) : null);
    }
    if (this.writer.wasteful) this.rebuild();
    for (const l of newLeases) void this.fetchLease(l);
  }

  /** Count `key` in (or out of) every directory above it, from the prefix's own down. */
  private count(key: string, delta: 1 | -1, dirty: Set<string>): void {
    const start = this.o.prefix.length - 1;
    for (let i = key.indexOf('/', start); i >= 0; i = key.indexOf('/', i + 1)) {
      const dir = key.slice(0, i);
      const next = key.indexOf('/', i + 1);
      const child = key.slice(i + 1, next < 0 ? key.length : next);
      let m = this.dirs.get(dir);
      if (!m) this.dirs.set(dir, (m = new Map()));
      const n = (m.get(child) ?? 0) + delta;
      if (n > 0) {
        if (!m.has(child)) dirty.add(dir);
        m.set(child, n);
      } else {
        m.delete(child);
        dirty.add(dir);
        if (m.size === 0) this.dirs.delete(dir);
      }
    }
  }

  /** One more key on `lease`; true when it is the first. */
  private hold(lease: string): boolean {
    const n = this.leases.get(lease) ?? 0;
    this.leases.set(lease, n + 1);
    return n === 0;
  }

  private release(lease: string): void {
    if (lease === '0') return;
    const n = (this.leases.get(lease) ?? 1) - 1;
    if (n > 0) {
      this.leases.set(lease, n);
      return;
    }
    this.leases.delete(lease);
    this.leaseDeadlines.delete(lease);
    this.put(`l${lease}`, null);
  }

  /** CoreDNS asks etcd for a lease's TTL on every lookup; the index asks when a key takes a lease and every 10 s. */
  private async fetchLease(lease: string): Promise<void> {
    try {
      const ttl = await this.o.client.leaseTimeToLive(lease);
      if (!this.leases.has(lease) || this.stopped) return;
      const deadline = Date.now() + ttl * 1000;
      this.leaseDeadlines.set(lease, deadline);
      this.put(`l${lease}`, ttl > 0 ? String(deadline) : null);
    } catch {
      // Unknown: the value's own TTL answers until the next refresh.
    }
  }

  private async refreshLeases(): Promise<void> {
    for (const l of [...this.leases.keys()]) await this.fetchLease(l);
  }

  /** Set or delete one table entry; a full table is rebuilt from the maps (which already hold the change). */
  private put(key: string, value: string | null): void {
    const ok = value === null ? this.writer.delete(key) : this.writer.set(key, value);
    if (!ok) this.rebuild();
  }

  private rebuild(): void {
    let bytes = 0;
    for (const [k, v] of this.keys) bytes += 2 * k.length + 3 * v.value.length + 32;
    for (const [d, m] of this.dirs) bytes += 2 * d.length + 16 * m.size;
    this.writer.rebuild(this.keys.size + this.dirs.size + this.leaseDeadlines.size + 1, bytes, (set) => {
      set(STATUS_KEY, JSON.stringify(this.status));
      for (const [k, v] of this.keys) set(`k${k}`, encodeEntry(v.value, v.lease));
      for (const [d, m] of this.dirs) set(`d${d}`, JSON.stringify([...m.keys()]));
      for (const [l, t] of this.leaseDeadlines) set(`l${l}`, String(t));
    });
    this.offer?.publish({ generation: this.writer.generation });
  }

  /** Number of keys indexed (tests). */
  get size(): number {
    return this.keys.size;
  }

  stop(): void {
    this.stopped = true;
    this.watch?.close();
    this.watch = null;
    for (const t of [this.timer, this.pinger, this.leaseTimer]) if (t) clearTimeout(t);
    this.offer?.withdraw();
    this.o.client.close();
  }
}
