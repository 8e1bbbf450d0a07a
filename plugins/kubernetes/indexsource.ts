/**
 * The index in its source role (kubeindex.ts): the Store and one Reflector per watched resource
 * (docs/records.md §8.2), run where the watches run — the main thread, or a process without query
 * threads. With query threads it also keeps the shared-memory copy of the store (sharedindex.ts)
 * and offers it to the threads on its replication channel (indexfeed.ts).
 */
import type { Logger } from '../../src/log.js';
import type { Offer, ReplicationSource } from '../../src/server/replication.js';
import { ApiClient, credentialRequest } from './client.js';
import { MCS_SERVICE_LABEL, toMcSlice, toNamespace, toPod, toService, toServiceImport, toSlice } from './convert.js';
import { indexFeedChannel, type IndexFeed } from './indexfeed.js';
import type { KubeIndex, WatchSettings } from './kubeindex.js';
import { programmingDuration } from './metrics.js';
import { SharedIndexWriter, type SharedIndexUpdate } from './sharedindex.js';
import { serviceKey, Store } from './store.js';
import type { Kind, RecOf, SliceRec } from './types.js';
import { Reflector, type ResourceDef, type Sink } from './watch.js';

export const POD_FIELD_SELECTOR = 'status.phase!=Succeeded,status.phase!=Failed,status.phase!=Unknown';

/** Where the source offers its index when the process runs query threads. */
export interface SourceReplication {
  readonly source: ReplicationSource;
  /** The index's channel key (the same in every thread). */
  readonly key: string;
}

/** The shared-memory copy and its offer, while the watches run with query threads. */
interface Replicating {
  readonly writer: SharedIndexWriter;
  readonly offer: Offer<IndexFeed>;
}

export class KubeIndexSource implements KubeIndex {
  readonly store: Store;
  /** Answering reads the store itself. */
  readonly reader: Store;
  private client: ApiClient | null = null;
  private readonly reflectors: Reflector<Kind>[] = [];
  private stoppedFlag = false;
  /** The credential helper is running (in-cluster / kubeconfig). */
  private starting: Promise<void> | null = null;
  private started: Promise<void> = Promise.resolve();
  /** Kinds that completed a list (told to the query threads with every update). */
  private readonly listed = new Set<Kind>();
  private replicating: Replicating | null = null;

  constructor(
    readonly settings: WatchSettings,
    private readonly log: Logger,
    /** With query threads: the threads keep copies of this index. */
    private readonly replication?: SourceReplication,
  ) {
    this.store = new Store(settings.zonal);
    this.reader = this.store;
  }

  start(): void {
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

  get stopped(): boolean {
    return this.stoppedFlag;
  }

  whenStarted(): Promise<void> {
    return this.started;
  }

  private startWatches(): void {
    const s = this.settings;
    const client = this.client!;
    this.add(client, {
      kind: 'services',
      path: '/api/v1/services',
      labelSelector: s.labels,
      fieldSelector: null,
      convert: toService,
    });
    this.add(client, {
      kind: 'namespaces',
      path: '/api/v1/namespaces',
      labelSelector: s.namespaceLabels,
      fieldSelector: null,
      convert: toNamespace,
    });
    if (s.endpoints) {
      const slicing = { podNames: s.podNames, zones: s.zonal };
      this.add(client, {
        kind: 'endpointslices',
        path: '/apis/discovery.k8s.io/v1/endpointslices',
        labelSelector: s.labels,
        fieldSelector: null,
        convert: (o) => toSlice(o, slicing),
      });
    }
    if (s.pods) {
      this.add(client, {
        kind: 'pods',
        path: '/api/v1/pods',
        labelSelector: s.labels,
        fieldSelector: POD_FIELD_SELECTOR,
        convert: toPod,
      });
    }
    if (s.multicluster) {
      // As CoreDNS 1.15.0's controller: every EndpointSlice carrying the multicluster service-name
      // label (within `labels`), whatever `noendpoints` says, and the ServiceImports selected by
      // `namespace_labels` — CoreDNS passes the namespace selector to the import watch.
      this.add(client, {
        kind: 'mcslices',
        path: '/apis/discovery.k8s.io/v1/endpointslices',
        labelSelector: s.labels ? `${s.labels},${MCS_SERVICE_LABEL}` : MCS_SERVICE_LABEL,
        fieldSelector: null,
        convert: (o) => toMcSlice(o, { podNames: s.podNames, zones: false }),
      });
      this.add(client, {
        kind: 'serviceimports',
        path: '/apis/multicluster.x-k8s.io/v1alpha1/serviceimports',
        labelSelector: s.namespaceLabels,
        fieldSelector: null,
        convert: toServiceImport,
      });
    }
    if (this.replication) {
      // Offered before the first event: every change of the store is flushed to the copy.
      const writer = new SharedIndexWriter(this.store);
      const offer = this.replication.source.offer(indexFeedChannel(this.replication.key), () => this.snapshot(writer));
      this.replicating = { writer, offer };
    }
    for (const r of this.reflectors) r.start();
  }

  /** What a query thread starts from: the current generation of the shared index. */
  private snapshot(writer: SharedIndexWriter): IndexFeed[] {
    // Every sink call flushes, so the generation holds the whole store (a change still pending
    // reaches this thread with the next update, like every other thread).
    const update: SharedIndexUpdate = {
      deps: [],
      serial: this.store.serial,
      externalSerial: this.store.externalSerial,
      multiclusterSerial: this.store.multiclusterSerial,
      generation: writer.generation,
      snapshot: true,
    };
    return [
      { op: 'kinds', kinds: this.reflectors.map((r) => r.def.kind) },
      { op: 'shared', listed: [...this.listed], update },
    ];
  }

  /** Write the store's latest changes to the shared index and tell the query threads. */
  private replicate(listedChanged: boolean): void {
    const r = this.replicating;
    if (!r) return;
    const update = r.writer.flush();
    if (!update && !listedChanged) return;
    r.offer.publish({
      op: 'shared',
      listed: [...this.listed],
      update: update ?? {
        deps: [],
        serial: this.store.serial,
        externalSerial: this.store.externalSerial,
        multiclusterSerial: this.store.multiclusterSerial,
      },
    });
  }

  private add<K extends Kind>(client: ApiClient, def: ResourceDef<K>): void {
    this.reflectors.push(
      new Reflector<K>(def, client, this.sink(def.kind), this.log, this.settings.tuning) as unknown as Reflector<Kind>,
    );
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
      beginReplace: () => {
        const replacing = store.beginReplace(kind);
        return {
          page: (recs) => {
            replacing.page(recs);
            this.replicate(false);
            if (kind === 'endpointslices') for (const r of recs) this.observeProgramming(r as SliceRec);
          },
          finish: () => {
            replacing.finish();
            this.replicate(false);
          },
        };
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
      this.log.warning(
        `Error parsing endpoints.kubernetes.io/last-change-trigger-time annotation ${JSON.stringify(s.triggerTime)} of ${s.namespace}/${s.name}`,
      );
      return;
    }
    programmingDuration.observe(
      { service_kind: svc.headless ? 'headless_with_selector' : 'cluster_ip' },
      Math.max(0, (Date.now() - t) / 1000),
    );
  }

  synced(): boolean {
    return this.reflectors.length > 0 && this.reflectors.every((r) => r.synced);
  }

  notReadyReason(): string {
    if (!this.client)
      return this.starting ? 'kubernetes: resolving API server credentials' : 'kubernetes: watches not started';
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
    this.replicating?.offer.withdraw();
    this.replicating?.writer.close();
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
