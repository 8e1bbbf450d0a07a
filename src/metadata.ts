/**
 * Query metadata (CoreDNS's plugin/metadata): labels such as `kubernetes/namespace` that plugins
 * attach to a query for others to read — the log plugin's `{/LABEL}`, template's `.Meta`. The
 * `metadata` plugin offers a collector through `ctx.provide(METADATA_COLLECTOR, …)`; a plugin that
 * has metadata to give looks it up in a startup hook and adds a provider. When a query enters the
 * block (and its name is in the metadata plugin's zones), every provider writes its labels into
 * `q.meta`, before any other plugin of the chain sees the query. Without the metadata plugin in
 * the block nothing is collected and readers see no labels (the log plugin prints `-`).
 */
import { capability } from './capabilities.js';
import type { Query } from './query.js';

/** Write this plugin's labels for `q` into `meta` (called once per query; keep it cheap). */
export type MetadataProvider = (q: Query, meta: Map<string, string>) => void;

export interface MetadataCollector {
  /** Register a provider; call from an `onStartup` hook. Providers run in registration order. */
  addProvider(p: MetadataProvider): void;
  /**
   * Write the providers' labels for `q` now (when its name is in the plugin's zones): a view's
   * filter reads metadata before the block's chain runs, as CoreDNS collects before filtering.
   */
  collect(q: Query): void;
}

export const METADATA_COLLECTOR = capability<MetadataCollector>('metadata.collector');
