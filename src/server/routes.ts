/**
 * Per-listener routing (docs/corefile.md §7.3): the block with the longest matching zone key wins,
 * then the root block, else REFUSED. DS queries go to the parent of a matching zone. Blocks with a
 * view share a zone with others: among a zone's blocks, in Corefile order, the first whose view
 * takes the query (or that has none) wins, else shorter zones are tried (CoreDNS's ServeDNS loop).
 */
import { Qtype } from '../dns/constants.js';
import type { TsigKeyring } from '../dns/tsig.js';
import type { Handler } from '../plugin.js';
import type { Query } from '../query.js';
import type { ViewFilter } from '../view.js';

export interface Route {
  /** The zone key that matched (`cluster.local.`), used as `q.zone`. */
  readonly zone: string;
  /** The block's chain; null for a block without plugins (REFUSED). */
  readonly chain: Handler | null;
  /** The block's view; absent or null for a block without one. */
  readonly view?: ViewFilter | null;
  /** The TSIG keys of every block on the listener (src/server/listenopts.ts); absent = none. */
  readonly tsigKeys?: TsigKeyring;
  /** The block takes UPDATE messages (dynupdate); without it an UPDATE is answered NOTIMP. */
  readonly update?: boolean;
}

export class RouteTable {
  private readonly zones = new Map<string, Route>();
  private root: Route | undefined;
  /** Some block on this listener has a plugin that answers every class. */
  anyClass = false;
  /**
   * Some block on this listener has a view: route with `lookupViews` (the query is built first,
   * for the filters to read). Listeners without views keep the plain lookup.
   */
  hasViews = false;
  /** Every block of each zone, in Corefile order (views and the fallback). */
  private readonly all = new Map<string, Route[]>();

  /** The non-root routes, longest zone first (the scan for listeners with few zones). */
  private ordered: Route[] = [];

  add(route: Route): void {
    const list = this.all.get(route.zone);
    if (list === undefined) this.all.set(route.zone, [route]);
    else list.push(route);
    if (route.view) this.hasViews = true;
    if (this.zones.has(route.zone)) return;
    this.zones.set(route.zone, route);
    if (route.zone === '.') this.root = route;
    this.ordered = [...this.zones.values()].filter((r) => r.zone !== '.').sort((a, b) => b.zone.length - a.zone.length);
  }

  get size(): number {
    return this.zones.size;
  }

  routes(): IterableIterator<Route> {
    return this.zones.values();
  }

  lookup(lname: string, qtype: number): Route | undefined {
    if (this.zones.size === 1 && this.root) return this.root;
    // A handful of zones: compare suffixes in place. Walking the name's suffixes instead costs a
    // substring and a hash per label, per query; it wins only with many zones.
    if (this.ordered.length <= 8) return this.scan(lname, qtype);
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

  private scan(lname: string, qtype: number): Route | undefined {
    let found: Route | undefined;
    for (const r of this.ordered) {
      const z = r.zone;
      if (!lname.endsWith(z) || (lname.length > z.length && lname.charCodeAt(lname.length - z.length - 1) !== 46))
        continue;
      // DS lives in the parent zone: keep looking for a shorter match.
      if (qtype !== Qtype.DS) return r;
      found = r;
    }
    return found ?? this.root;
  }

  /**
   * Routing when views are present (CoreDNS 1.15.0 core/dnsserver/server.go ServeDNS): walk the
   * name's suffixes, longest first; at each zone try its blocks in order and take the first whose
   * view passes (a block without plugins answers REFUSED at once: returned with a null chain). A DS
   * query keeps the last passing block and goes on to the parent. The root's blocks come last.
   */
  lookupViews(lname: string, qtype: number, q: Query): Route | undefined {
    let ds: Route | undefined;
    let i = 0;
    for (;;) {
      const list = this.all.get(i === 0 ? lname : lname.slice(i));
      if (list !== undefined) {
        for (const r of list) {
          if (r.chain === null) return r;
          if (r.view && !r.view.pass(q)) continue;
          if (qtype !== Qtype.DS) return r;
          ds = r;
        }
      }
      const dot = lname.indexOf('.', i);
      if (dot < 0 || dot === lname.length - 1) break;
      i = dot + 1;
    }
    if (ds !== undefined) return ds;
    const roots = this.all.get('.');
    if (roots === undefined) return undefined;
    for (const r of roots) {
      if (r.chain === null) continue;
      if (!r.view || r.view.pass(q)) return r;
    }
    return undefined;
  }
}
