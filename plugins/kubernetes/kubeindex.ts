/**
 * The watch-backed index shared by the plugin instances that watch the same things (it survives a
 * reload with unchanged watch settings, via `ctx.shared`). It owns the Store and one Reflector per
 * watched resource (docs/records.md §8.2), and reports readiness.
 */
import type { Logger } from '../../src/log.js';
import type { IndexReplication } from '../../src/server/replication.js';
import { ApiClient, credentialRequest, type ClientSettings } from './client.js';
import { toNamespace, toPod, toService, toSlice } from './convert.js';
import { programmingDuration } from './metrics.js';
import { SharedIndexReader, SharedIndexWriter, type SharedIndexUpdate } from './sharedindex.js';
import { serviceKey, Store, type IndexReader } from './store.js';
import type { Kind, RecOf, SliceRec } from './types.js';
import { Reflector, type ResourceDef, type Sink, type WatchTuning } from './watch.js';

export interface WatchSettings extends ClientSettings {
  labels: string | null;
  namespaceLabels: string | null;
  endpoints: boolean;
  pods: boolean;
  /** `zonal`: endpoint topology zones are DNS data. */
  zonal: boolean;
  /** `endpoint_pod_names`: endpoint pod names are DNS data. */
  podNames: boolean;
  /** Liveness bound, backoff and list page bound of the watches (defaults in watch.ts; tests make them small). */
  tuning?: WatchTuning;
}

/**
 * What the main thread sends the query threads (docs/multicore.md §2): the kinds it watches, then
 * the shared-memory index's updates with the kinds listed so far.
 */
type ReplicaMessage = { op: 'kinds'; kinds: Kind[] } | { op: 'shared'; listed: Kind[]; update: SharedIndexUpdate };

/** Where this index's records come from when the process runs query threads. */
export interface IndexReplicationRef {
  readonly replication: IndexReplication;
  readonly key: string;
}

export const POD_FIELD_SELECTOR = 'status.phase!=Succeeded,status.phase!=Failed,status.phase!=Unknown';

export class KubeIndex {
  /** The main thread's index (a query thread's stays empty: it reads {@link reader}). */
  readonly store: Store;
  /** What answering reads: the store, or in a query thread the main thread's index in shared memory. */
  readonly reader: IndexReader;
  private client: ApiClient | null = null;
  private readonly reflectors: Reflector<Kind>[] = [];
  private stoppedFlag = false;
  /** The credential helper is running (in-cluster / kubeconfig). */
  private starting: Promise<void> | null = null;
  private started: Promise<void> = Promise.resolve();

  /** A query thread: the kinds the main thread watches, and those it has listed. */
  private replicaKinds: Kind[] | null = null;
  private replicaListed: readonly Kind[] = [];
  /** The main thread with query threads: the shared-memory copy it keeps for them. */
  private shared: SharedIndexWriter | null = null;
  private readonly listed = new Set<Kind>();
  private unsubscribe: (() => void) | null = null;
  private withdraw: (() => void) | null = null;

  constructor(
    readonly settings: WatchSettings,
    private readonly log: Logger,
    /** With query threads: the main thread watches and publishes, the threads keep copies. */
    private readonly repl?: IndexReplicationRef,
  ) {
    this.store = new Store(settings.zonal);
    this.reader = this.replica ? new SharedIndexReader() : this.store;
  }

  private get replica(): boolean {
    return this.repl?.replication.role === 'replica';
  }

  /**
   * Build the client and start the watches. Idempotent. Endpoint settings start synchronously (and
   * throw when the configuration cannot be built); in-cluster / kubeconfig settings first run the
   * credential helper — await {@link whenStarted} for their startup error.
   */
  start(): void {
    if (this.replica) {
      this.unsubscribe ??= this.repl!.replication.subscribe(this.repl!.key, (m) => this.applyReplica(m as ReplicaMessage));
      return;
    }
    if (this.client || this.starting || this.stoppedFlag) return;
    if (credentialRequest(this.settings)) {
      const p = ApiClient.create(this.settings).then((c) => {
        if (this.stoppedFlag) return;
        this.client = c;
        this.startWatches();
      });
      this.starting = p;
      // A failed start is retried by the next start() (a reload); whenStarted() reports it.
      p.catch(() => {
        if (this.starting === p) this.starting = null;
      });
      this.started = p;
      return;
    }
    this.client = new ApiClient(this.settings);
    this.startWatches();
  }

  /** stop() was called (a reload replaced this index). */
  get stopped(): boolean {
    return this.stoppedFlag;
  }

  /** Settles when the last start() has built the client: rejects with the startup error. */
  whenStarted(): Promise<void> {
    return this.started;
  }

  private startWatches(): void {
    const s = this.settings;
    this.add({ kind: 'services', path: '/api/v1/services', labelSelector: s.labels, fieldSelector: null, convert: toService });
    this.add({ kind: 'namespaces', path: '/api/v1/namespaces', labelSelector: s.namespaceLabels, fieldSelector: null, convert: toNamespace });
    if (s.endpoints) {
      const slicing = { podNames: s.podNames, zones: s.zonal };
      this.add({ kind: 'endpointslices', path: '/apis/discovery.k8s.io/v1/endpointslices', labelSelector: s.labels, fieldSelector: null, convert: (o) => toSlice(o, slicing) });
    }
    if (s.pods) {
      this.add({ kind: 'pods', path: '/api/v1/pods', labelSelector: s.labels, fieldSelector: POD_FIELD_SELECTOR, convert: toPod });
    }
    if (this.repl) this.shared = new SharedIndexWriter(this.store);
    for (const r of this.reflectors) r.start();
    if (this.repl) this.withdraw = this.repl.replication.offer(this.repl.key, () => this.snapshot());
  }

  /** What a query thread starts from: the current generation of the shared index. */
  private snapshot(): ReplicaMessage[] {
    const shared = this.shared!;
    // Every sink call flushes, so the generation holds the whole store (a change still pending
    // reaches this thread with the next update, like every other thread).
    const update: SharedIndexUpdate = { deps: [], serial: this.store.serial, externalSerial: this.store.externalSerial, generation: shared.generation, snapshot: true };
    return [
      { op: 'kinds', kinds: this.reflectors.map((r) => r.def.kind) },
      { op: 'shared', listed: [...this.listed], update },
    ];
  }

  /** Write the store's latest changes to the shared index and tell the query threads. */
  private replicate(listedChanged: boolean): void {
    if (!this.shared || !this.repl) return;
    const update = this.shared.flush();
    if (!update && !listedChanged) return;
    const m: ReplicaMessage = { op: 'shared', listed: [...this.listed], update: update ?? { deps: [], serial: this.store.serial, externalSerial: this.store.externalSerial } };
    this.repl.replication.publish(this.repl.key, m);
  }

  private applyReplica(m: ReplicaMessage): void {
    if (m.op === 'kinds') {
      this.replicaKinds = m.kinds;
      return;
    }
    this.replicaListed = m.listed;
    (this.reader as SharedIndexReader).apply(m.update);
  }

  private add<K extends Kind>(def: ResourceDef<K>): void {
    this.reflectors.push(new Reflector<K>(def, this.client!, this.sink(def.kind), this.log, this.settings.tuning) as unknown as Reflector<Kind>);
  }

  private sink<K extends Kind>(kind: K): Sink<K> {
    const store = this.store;
    return {
      replace: (recs) => {
        store.replace(kind, recs);
        const first = !this.listed.has(kind);
        this.listed.add(kind);
        this.replicate(first);
        if (kind === 'endpointslices') for (const r of recs) this.observeProgramming(r as SliceRec);
      },
      upsert: (rec: RecOf<K>) => {
        store.upsert(kind, rec);
        this.replicate(false);
        if (kind === 'endpointslices') this.observeProgramming(rec as SliceRec);
      },
      remove: (key) => {
        const old = kind === 'endpointslices' ? store.slices.get(key) : undefined;
        store.remove(kind, key);
        this.replicate(false);
        if (old) this.observeProgramming(old);
      },
      ignored: () => {
        /* pods being deleted stay cached until their delete event; FQDN slices are never stored */
      },
    };
  }

  /** `coredns_kubernetes_dns_programming_duration_seconds` (§8.5). */
  private observeProgramming(s: SliceRec): void {
    if (!s.triggerTime) return;
    const svc = this.store.services.get(serviceKey(s.service, s.namespace));
    if (!svc) return;
    const t = parseRfc3339(s.triggerTime);
    if (t === undefined) {
      this.log.warning(`Error parsing endpoints.kubernetes.io/last-change-trigger-time annotation ${JSON.stringify(s.triggerTime)} of ${s.namespace}/${s.name}`);
      return;
    }
    programmingDuration.observe({ service_kind: svc.headless ? 'headless_with_selector' : 'cluster_ip' }, Math.max(0, (Date.now() - t) / 1000));
  }

  /** Every started watch completed its first list. */
  synced(): boolean {
    if (this.replica) return this.replicaKinds !== null && this.replicaKinds.every((k) => this.replicaListed.includes(k));
    return this.reflectors.length > 0 && this.reflectors.every((r) => r.synced);
  }

  /** Why the index is not ready (readiness probe text). */
  notReadyReason(): string {
    if (this.replica) return 'kubernetes: waiting for the index of the main thread';
    if (!this.client) return this.starting ? 'kubernetes: resolving API server credentials' : 'kubernetes: watches not started';
    const pending = this.reflectors.filter((r) => !r.synced);
    const errs = pending.map((r) => r.lastError).filter((e): e is string => e !== null);
    const cred = this.client.credentialError;
    if (cred && errs.length) errs.push(cred);
    if (errs.length) return `kubernetes: ${errs.join('; ')}`;
    return `kubernetes: waiting for the initial list of ${pending.map((r) => r.def.kind).join(', ')}`;
  }

  /** Reflectors (tests). */
  get watches(): readonly Reflector<Kind>[] {
    return this.reflectors;
  }

  async stop(): Promise<void> {
    this.stoppedFlag = true;
    this.unsubscribe?.();
    this.withdraw?.();
    this.shared?.close();
    await Promise.all(this.reflectors.map((r) => r.stop()));
    this.client?.close();
  }
}

/** RFC 3339 with up to nanosecond fractions → epoch ms, or undefined. */
export function parseRfc3339(text: string): number | undefined {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.exec(text);
  if (!m) return undefined;
  const base = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(base)) return undefined;
  return base + (m[2] ? Number(`0${m[2]}`) * 1000 : 0);
}
