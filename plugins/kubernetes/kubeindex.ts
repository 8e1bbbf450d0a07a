/**
 * The watch-backed index the plugin answers from, shared by the plugin instances that watch the
 * same things (it survives a reload with unchanged watch settings, via `ctx.shared`). It comes in
 * two roles, two types behind the one {@link KubeIndex} the plugin's setup uses:
 * - {@link KubeIndexSource} (indexsource.ts): the watches and the Store; with query threads also
 *   the shared-memory copy and the replication offer. The main thread, or a process without threads.
 * - {@link KubeIndexReplica} (indexreplica.ts): a query thread's reader of the main thread's copy.
 * Answering reads either through `reader`, the same {@link IndexReader} calls.
 */
import type { Logger } from '../../src/log.js';
import type { IndexReplication } from '../../src/server/replication.js';
import type { ClientSettings } from './client.js';
import { KubeIndexReplica } from './indexreplica.js';
import { KubeIndexSource } from './indexsource.js';
import type { IndexReader } from './store.js';
import type { WatchTuning } from './watch.js';

export interface WatchSettings extends ClientSettings {
  labels: string | null;
  namespaceLabels: string | null;
  endpoints: boolean;
  pods: boolean;
  /** `zonal`: endpoint topology zones are DNS data. */
  zonal: boolean;
  /** `endpoint_pod_names`: endpoint pod names are DNS data. */
  podNames: boolean;
  /** `multicluster`: ServiceImports and multicluster EndpointSlices are watched (docs/records.md §8.4). */
  multicluster: boolean;
  /** Liveness bound, backoff and list page bound of the watches (defaults in watch.ts; tests make them small). */
  tuning?: WatchTuning;
}

/** What the plugin's setup, readiness and answering use of an index, in either role. */
export interface KubeIndex {
  /** What answering reads (the store, or a query thread's view of the main thread's copy). */
  readonly reader: IndexReader;
  /** stop() was called (a reload replaced this index). */
  readonly stopped: boolean;
  /**
   * Start following the cluster. Idempotent. A source with endpoint settings starts synchronously
   * (and throws when the configuration cannot be built); in-cluster / kubeconfig settings first
   * run the credential helper — await {@link whenStarted} for their startup error.
   */
  start(): void;
  /** Settles when the last start() is through: rejects with the startup error. */
  whenStarted(): Promise<void>;
  /** Every watched kind completed its first list. */
  synced(): boolean;
  /** Why the index is not ready (readiness probe text). */
  notReadyReason(): string;
  stop(): Promise<void>;
}

/**
 * The index for `settings` in this thread's role: with query threads, the main thread's source
 * offers it under `key` and a query thread's replica subscribes to it (docs/multicore.md); with
 * none, a source of its own.
 */
export function kubeIndex(
  settings: WatchSettings,
  log: Logger,
  replication: IndexReplication | undefined,
  key: string,
): KubeIndex {
  if (replication?.role === 'replica') return new KubeIndexReplica(replication, key);
  return new KubeIndexSource(settings, log, replication ? { source: replication, key } : undefined);
}
