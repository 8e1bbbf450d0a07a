/**
 * Views (CoreDNS's dnsserver.Viewer): a server block whose `view` plugin holds expressions takes a
 * query only when they all hold for it, so several blocks may serve the same zone and port, told
 * apart by their view; a block without a view is the fallback (docs/corefile.md §7.3). The `view`
 * plugin offers its filter under this capability; the core reads it to route (src/server/routes.ts)
 * and to name the block's view in the `view` label of metrics (BlockInfo.view).
 */
import { capability } from './capabilities.js';
import type { Query } from './query.js';

export interface ViewFilter {
  /** The view's name: the `view` label of the block's metrics and the `view/name` metadata. */
  readonly name: string;
  /** Does the block take `q`? Runs before the block's chain, on every query routed past it. */
  pass(q: Query): boolean;
}

export const VIEW = capability<ViewFilter>('view.filter');
