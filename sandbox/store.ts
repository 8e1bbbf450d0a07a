/**
 * The sandbox's object store: one global revision counter (like etcd's), objects kept as
 * pre-serialised JSON, an in-memory event log for watch replay with a compaction point, and
 * point-in-time snapshots for consistent paged lists.
 */
import {
  type Indexed,
  type JsonObject,
  type Normalised,
  type ResourceDef,
  RESOURCES,
  indexObject,
} from './resources.js';

export interface Rec extends Indexed {
  res: ResourceDef;
  /** etcd-style key relative to the resource prefix: `ns/name`, or `name` if cluster-scoped */
  key: string;
  namespace: string;
  name: string;
  rv: number;
  /** the object as a list item: no kind/apiVersion, metadata.resourceVersion = rv */
  json: string;
}

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  rv: number;
  type: EventType;
  /** the new state; for DELETED the last state, carrying the deletion revision */
  rec: Rec;
  /** the state before a MODIFIED or DELETED */
  prev?: Rec;
}

export function keyOf(res: ResourceDef, namespace: string | undefined, name: string): string {
  return res.namespaced ? `${namespace ?? ''}/${name}` : name;
}

/** Serialise with metadata first and the server-set fields in the API server's order. */
export function serialise(body: JsonObject, rv: number): string {
  const md = body['metadata'] as JsonObject;
  const { name, namespace, uid, creationTimestamp, resourceVersion: _old, ...restMd } = md;
  void _old;
  const metadata: JsonObject = { name };
  if (namespace !== undefined) metadata['namespace'] = namespace;
  metadata['uid'] = uid;
  metadata['resourceVersion'] = String(rv);
  metadata['creationTimestamp'] = creationTimestamp;
  Object.assign(metadata, restMd);
  const out: JsonObject = { metadata };
  for (const [k, v] of Object.entries(body)) if (k !== 'metadata') out[k] = v;
  return JSON.stringify(out);
}

function withRv(rec: Rec, rv: number): Rec {
  const body = JSON.parse(rec.json) as JsonObject;
  return { ...rec, rv, json: serialise(body, rv) };
}

export class Store {
  private rev = 0;
  private readonly objects = new Map<ResourceDef, Map<string, Rec>>();
  private readonly sorted = new Map<ResourceDef, Rec[]>();
  /** newest event revision per resource, to know when a snapshot equals the current state */
  private readonly lastChange = new Map<ResourceDef, number>();
  private history: StoreEvent[] = [];
  private historyStart = 0;
  /** events with rv <= compactedRv are gone from the history */
  private compacted = 0;
  private readonly snapshots = new Map<string, Rec[]>();
  private readonly listeners = new Set<(ev: StoreEvent) => void>();

  constructor(private readonly historyLimit: number) {
    for (const r of RESOURCES) this.objects.set(r, new Map());
  }

  get revision(): number {
    return this.rev;
  }

  get compactedRevision(): number {
    return this.compacted;
  }

  subscribe(fn: (ev: StoreEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  get(res: ResourceDef, namespace: string | undefined, name: string): Rec | undefined {
    return this.objects.get(res)?.get(keyOf(res, namespace, name));
  }

  count(res: ResourceDef): number {
    return this.objects.get(res)?.size ?? 0;
  }

  /** Server-set metadata of a stored object, to keep it across a replace. */
  identity(rec: Rec): { uid: unknown; creationTimestamp: unknown } {
    const md = (JSON.parse(rec.json) as JsonObject)['metadata'] as JsonObject;
    return { uid: md['uid'], creationTimestamp: md['creationTimestamp'] };
  }

  put(n: Normalised): StoreEvent {
    const map = this.objects.get(n.res) as Map<string, Rec>;
    const key = keyOf(n.res, n.namespace, n.name);
    const prev = map.get(key);
    const rv = ++this.rev;
    const rec: Rec = {
      res: n.res,
      key,
      namespace: n.namespace,
      name: n.name,
      rv,
      json: serialise(n.body, rv),
      ...indexObject(n.res, n.body),
    };
    map.set(key, rec);
    const ev: StoreEvent = prev ? { rv, type: 'MODIFIED', rec, prev } : { rv, type: 'ADDED', rec };
    this.record(ev);
    return ev;
  }

  delete(res: ResourceDef, namespace: string | undefined, name: string): StoreEvent | undefined {
    const map = this.objects.get(res) as Map<string, Rec>;
    const key = keyOf(res, namespace, name);
    const prev = map.get(key);
    if (!prev) return undefined;
    map.delete(key);
    const rv = ++this.rev;
    const ev: StoreEvent = { rv, type: 'DELETED', rec: withRv(prev, rv), prev };
    this.record(ev);
    return ev;
  }

  /** Drop all history: watches and consistent reads from any revision older than now get 410. */
  compact(): void {
    this.compacted = this.rev;
    this.history = [];
    this.historyStart = 0;
    this.snapshots.clear();
  }

  /**
   * An API server restart over a compacted etcd: the revision moves on by one (the writes a
   * restarting API server makes to objects nobody here watches: leases, its own endpoints) and the
   * history is dropped there, so every watch resumes from a revision older than the history and
   * gets 410 Expired — what makes every client relist (kubernetes/kubernetes#139117).
   */
  restart(): void {
    this.rev++;
    this.compact();
  }

  /**
   * The revision counter goes back to `rv` (etcd restored from an older backup, or wiped): the
   * history is dropped and the next change gets `rv + 1`. Stored objects keep their content and
   * their own resourceVersions.
   */
  rewind(rv: number): void {
    this.rev = rv;
    this.compacted = rv;
    this.history = [];
    this.historyStart = 0;
    this.snapshots.clear();
    for (const [res, at] of this.lastChange) if (at > rv) this.lastChange.set(res, rv);
  }

  private record(ev: StoreEvent): void {
    this.sorted.delete(ev.rec.res);
    this.lastChange.set(ev.rec.res, ev.rv);
    this.history.push(ev);
    const len = this.history.length - this.historyStart;
    if (len > this.historyLimit) {
      const dropped = this.history[this.historyStart] as StoreEvent;
      this.compacted = dropped.rv;
      this.historyStart++;
      if (this.historyStart > 4096 && this.historyStart * 2 > this.history.length) {
        this.history = this.history.slice(this.historyStart);
        this.historyStart = 0;
      }
      for (const k of this.snapshots.keys()) {
        const at = Number(k.slice(k.indexOf('@') + 1));
        if (at < this.compacted) this.snapshots.delete(k);
      }
    }
    for (const fn of this.listeners) fn(ev);
  }

  /** Events with rv > after, oldest first; undefined if part of that range was compacted. */
  eventsSince(after: number): StoreEvent[] | undefined {
    if (after < this.compacted) return undefined;
    const h = this.history;
    let lo = this.historyStart;
    let hi = h.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((h[mid] as StoreEvent).rv <= after) lo = mid + 1;
      else hi = mid;
    }
    return h.slice(lo);
  }

  /** The resource's objects now, sorted by key (etcd order). The array is never mutated. */
  current(res: ResourceDef): Rec[] {
    let arr = this.sorted.get(res);
    if (!arr) {
      arr = [...(this.objects.get(res) as Map<string, Rec>).values()];
      arr.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      this.sorted.set(res, arr);
    }
    return arr;
  }

  /**
   * The resource's objects as they were at revision `at`, sorted by key; undefined if `at` is
   * older than the compaction point (the caller answers 410 Expired).
   */
  snapshotAt(res: ResourceDef, at: number): Rec[] | undefined {
    if (at < this.compacted) return undefined;
    if ((this.lastChange.get(res) ?? 0) <= at) return this.current(res);
    const ck = `${res.plural}@${at}`;
    const cached = this.snapshots.get(ck);
    if (cached) return cached;
    const state = new Map<string, Rec>();
    for (const r of this.current(res)) state.set(r.key, r);
    const evs = this.eventsSince(at) ?? [];
    for (let i = evs.length - 1; i >= 0; i--) {
      const ev = evs[i] as StoreEvent;
      if (ev.rec.res !== res) continue;
      if (ev.prev) state.set(ev.prev.key, ev.prev);
      else state.delete(ev.rec.key);
    }
    const arr = [...state.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    this.snapshots.set(ck, arr);
    if (this.snapshots.size > 16) {
      const oldest = this.snapshots.keys().next().value;
      if (oldest !== undefined) this.snapshots.delete(oldest);
    }
    return arr;
  }
}

/** First index in a key-sorted array whose key is >= k. */
export function lowerBound(arr: readonly Rec[], k: string): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((arr[mid] as Rec).key < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
