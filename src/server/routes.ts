/**
 * Per-listener routing (corefile.md §7.3): the block with the longest matching zone key wins,
 * then the root block, else REFUSED. DS queries go to the parent of a matching zone.
 */
import { Qtype } from '../dns/constants.js';
import type { Handler } from '../plugin.js';

export interface Route {
  /** The zone key that matched (`cluster.local.`), used as `q.zone`. */
  readonly zone: string;
  /** The block's chain; null for a block without plugins (REFUSED). */
  readonly chain: Handler | null;
}

export class RouteTable {
  private readonly zones = new Map<string, Route>();
  private root: Route | undefined;
  /** Some block on this listener has a plugin that answers every class. */
  anyClass = false;

  add(route: Route): void {
    this.zones.set(route.zone, route);
    if (route.zone === '.') this.root = route;
  }

  get size(): number {
    return this.zones.size;
  }

  routes(): IterableIterator<Route> {
    return this.zones.values();
  }

  lookup(lname: string, qtype: number): Route | undefined {
    if (this.zones.size === 1 && this.root) return this.root;
    let found: Route | undefined;
    let i = 0;
    while (i < lname.length) {
      const r = this.zones.get(i === 0 ? lname : lname.slice(i));
      if (r && r.zone !== '.') {
        found = r;
        // DS lives in the parent zone: keep looking for a shorter match.
        if (qtype !== Qtype.DS) return r;
      }
      const dot = lname.indexOf('.', i);
      if (dot < 0 || dot === lname.length - 1) break;
      i = dot + 1;
    }
    return found ?? this.root;
  }
}
