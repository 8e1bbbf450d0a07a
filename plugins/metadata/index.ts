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
    collect(this.zones, this.providers, q);
    return nextOrFailure(this.name, this.next, q);
  }
}

function collect(zones: readonly string[], providers: readonly MetadataProvider[], q: Query): void {
  const n = providers.length;
  if (n > 0 && inZones(zones, q.lname)) {
    const meta = q.meta;
    for (let i = 0; i < n; i++) providers[i]!(q, meta);
  }
}

function inZones(zones: readonly string[], lname: string): boolean {
  for (const z of zones) if (isSubdomain(lname, z)) return true;
  return false;
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
    ctx.provide(METADATA_COLLECTOR, {
      addProvider: (p) => void providers.push(p),
      collect: (q) => collect(zones, providers, q),
    });
    return (next) => new MetadataHandler(zones, providers, next);
  },
};
