/**
 * A lookup "through the whole server", in process (CoreDNS's `upstream.Lookup`, which re-enters
 * `ServeDNS` with a ResponseWriter that keeps the reply instead of writing it): the derived query
 * is served as if it had arrived on the client's listener — routed to the server block that would
 * get it and served by that block's whole chain (cache, kubernetes, hosts, forward …), counted by
 * its prometheus and logged by its log plugin with the client's transport, its reply fitted to the
 * client's buffer or a bare reply written when no plugin wrote one — and the reply is handed back
 * to the plugin that asked. Used by kubernetes (ExternalName targets outside the zone,
 * docs/records.md §2.6), k8s_external (CNAMEs to load-balancer hostnames), template (CNAME
 * targets) and rewrite (cname rules).
 *
 * Cycles: each nested query carries the chain of lookups that led to it (`Query.lookups`, the
 * `qtype lname` of every lookup along the way). A lookup whose key is already in its chain is not
 * run (CNAME and ExternalName cycles, also across zones, blocks and plugins; rewrite, which bounds
 * its repetitions as CoreDNS does, asks for `repeats`), nor one whose chain
 * is already MAX_LOOKUP_CHAIN long, so no answer data can make one client query grow into more
 * than that many nested queries deep. Lookups of the same name for different clients run
 * independently. The chain lives on the query, not in per-thread state, and the nested query is
 * served in the thread that serves its client, so with query threads (docs/multicore.md) a cycle is
 * caught the same way whichever thread the client's query reached.
 */
import { decode, type Message } from '../dns/message.js';
import { LOOKUP_REFUSED, type SelfLookup } from '../plugin.js';
import type { LookupChain, Query } from '../query.js';
import { dispatchPacket, type DispatchOptions } from './dispatch.js';
import type { Exchange } from './listener.js';
import type { RouteTable } from './routes.js';

/**
 * Most nested lookups one client query can lead to, one inside the other. Legitimate chains are
 * short (a template CNAME to a Service whose ExternalName is forwarded is two deep); rewrite's cname
 * rule nests up to nine as CoreDNS 1.15.0 does (its own depth limit, 8, counted from 0).
 */
export const MAX_LOOKUP_CHAIN = 16;

/** The routes and reply options of a listener, by its name (`dns://:53`); undefined when none serves it. */
export type ListenerRoutes = (
  server: string,
) => { readonly table: RouteTable; readonly opts: DispatchOptions } | undefined;

/** The key a lookup is known by in a chain. */
export function lookupKey(qtype: number, lname: string): string {
  return `${qtype} ${lname}`;
}

/** Lookups through a running server's listeners. */
export class InProcessLookup implements SelfLookup {
  constructor(private readonly routes: ListenerRoutes) {}

  lookup(sub: Query, opts?: { readonly repeats?: boolean }): Promise<Message | null | typeof LOOKUP_REFUSED> {
    const key = lookupKey(sub.qtype, sub.lname);
    const parent = sub.lookups;
    const keys = parent?.keys ?? [];
    if (keys.length >= MAX_LOOKUP_CHAIN || (opts?.repeats !== true && keys.includes(key)))
      return Promise.resolve(refuse(parent));
    const t = sub.transport;
    const listener = this.routes(t.server);
    if (listener === undefined) return Promise.resolve(null);
    const chain: LookupChain = { keys: [...keys, key], depth: sub.depth, refused: false };
    return new Promise((resolve) => {
      let reply: Buffer | null = null;
      // The client's transport, with a reply that is kept instead of sent (CoreDNS's nonwriter).
      const ex: Exchange = {
        proto: t.proto,
        family: t.family,
        remoteAddress: t.remoteAddress,
        remotePort: t.remotePort,
        localAddress: t.localAddress,
        localPort: t.localPort,
        server: t.server,
        respond: (b) => {
          reply ??= b;
        },
        // A refusal anywhere below fails every lookup above it, up to the client's query.
        done: () => resolve(chain.refused ? refuse(parent) : reply === null ? null : decodeOrNull(reply)),
      };
      dispatchPacket(listener.table, listener.opts, sub.raw, ex, chain);
    });
  }
}

/** Refuse a lookup: the query that asked for it (a nested one, or the client's) is failing. */
function refuse(parent: LookupChain | null): typeof LOOKUP_REFUSED {
  if (parent !== null) parent.refused = true;
  return LOOKUP_REFUSED;
}

/** No server to go through (setups checked without one, `-validate`): no lookup gets a reply. */
export const NO_SELF_LOOKUP: SelfLookup = {
  lookup: () => Promise.resolve(null),
};

function decodeOrNull(b: Buffer): Message | null {
  try {
    return decode(b);
  } catch {
    return null;
  }
}
