/**
 * The search-path capability (docs/ARCHITECTURE.md, "Capabilities"): a plugin that knows each
 * client's DNS search path offers it to `autopath @PLUGIN` of its server block. CoreDNS calls this
 * the AutoPather interface; only `kubernetes` implements it (with `pods verified`).
 */
import { capability } from './capabilities.js';
import type { Query } from './query.js';

export interface SearchPathProvider {
  /** The directive of the plugin offering it (the PLUGIN of `autopath @PLUGIN`). */
  readonly plugin: string;
  /** The search path of the client of `q`, or null when it has none. */
  autoPath(q: Query): readonly string[] | null;
}

export const SEARCH_PATH = capability<SearchPathProvider>('autopath.searchPath');
