/**
 * The `metadata` directive (README.md): collects the labels of the block's metadata providers
 * (src/metadata.ts) into `q.meta` when a query's name is inside its zones, then passes the query on.
 */
import { directive, zoneArg } from '../../src/corefile/options.js';
import { isSubdomain, normalizeZoneArgs } from '../../src/dns/name.js';
import { METADATA_COLLECTOR, type MetadataProvider } from '../../src/metadata.js';
import { nextOrFailure, type Handler, type PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';

export const METADATA_OPTIONS = directive('metadata', { args: { rest: zoneArg() } });

class MetadataHandler implements Handler {
  readonly name = 'metadata';
  constructor(
    private readonly zones: readonly string[],
    private readonly providers: readonly MetadataProvider[],
    private readonly next: Handler | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    const n = this.providers.length;
    if (n > 0 && this.inZones(q.lname)) {
      const meta = q.meta;
      for (let i = 0; i < n; i++) this.providers[i]!(q, meta);
    }
    return nextOrFailure(this.name, this.next, q);
  }

  private inZones(lname: string): boolean {
    for (const z of this.zones) if (isSubdomain(lname, z)) return true;
    return false;
  }
}

export const metadata: PluginDef = {
  name: 'metadata',
  repeat: 'all',
  options: METADATA_OPTIONS,
  setup(d, ctx) {
    d.next();
    const args = d.remainingArgs();
    // As CoreDNS: no block content and a single occurrence, both reported as an argument error.
    if (d.nextBlock() || d.next()) throw d.argErr();
    const zones = args.length ? normalizeZoneArgs(args) : [...ctx.block.zones];
    const providers: MetadataProvider[] = [];
    ctx.provide(METADATA_COLLECTOR, { addProvider: (p) => void providers.push(p) });
    return (next) => new MetadataHandler(zones, providers, next);
  },
};
