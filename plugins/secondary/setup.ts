/**
 * `secondary [ZONES...] { transfer from ADDRESS...; catalog [MEMBER-ZONES...]; fallthrough [ZONES...] }` (CoreDNS 1.15.0
 * plugin/secondary/setup.go, docs/plugins.md, secondary). Every occurrence adds its zones; each
 * `transfer from` line adds primaries to the occurrence's zones, tried in order; the last
 * `fallthrough` applies to the whole plugin.
 */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, option, parseOccurrence, str, zoneArg } from '../../src/corefile/options.js';
import { ConfigError } from '../../src/corefile/types.js';
import { normalizeZoneArg, normalizeZoneArgs } from '../../src/dns/name.js';
import { parseFallthrough, type Fallthrough } from '../../src/fallthrough.js';
import { normalizeHostPort } from '../../src/util/hostport.js';

export const SECONDARY_OPTIONS = directive('secondary', {
  args: { rest: zoneArg(), max: Infinity },
  options: [
    option('transfer', {
      args: [str('from')],
      rest: str('ADDRESS'),
      min: 1,
      repeat: 'all',
      summary: 'the primaries the zone is pulled from, tried in order',
    }),
    option('catalog', {
      rest: str('MEMBER-ZONES'),
      min: 0,
      repeat: 'all',
      summary: 'the zone is an RFC 9432 catalog: its member zones (at or below MEMBER-ZONES) are pulled too',
    }),
    option('fallthrough', { rest: zoneArg(), min: 0 }),
  ],
});

export interface SecondaryZoneConfig {
  /** Lower-case absolute origin. */
  readonly origin: string;
  /** The primaries, `host:port`, in the order they are tried. */
  readonly from: string[];
}

export interface SecondaryConfig {
  /** Zone origins in Corefile order (a repeated origin keeps one zone, as CoreDNS's map). */
  readonly names: string[];
  readonly zones: Map<string, SecondaryZoneConfig>;
  fallthrough: Fallthrough;
  /**
   * The catalog zones (`catalog`) and the member zones each accepts, each at or below one of them;
   * an empty list accepts every member.
   */
  readonly catalogs: Map<string, string[]>;
}

/**
 * CoreDNS's mergeCatalogMemberZones: a second `catalog` line for a zone adds its names, and a line
 * without names (on either side) accepts every member.
 */
function mergeMemberZones(catalogs: Map<string, string[]>, origin: string, zones: readonly string[]): string[] {
  const existing = catalogs.get(origin);
  if (existing !== undefined && (existing.length === 0 || zones.length === 0)) return [];
  const merged = [...(existing ?? [])];
  for (const z of zones) if (!merged.includes(z)) merged.push(z);
  return merged;
}

export function parseSecondary(d: Dispenser, blockZones: readonly string[]): SecondaryConfig {
  const cfg: SecondaryConfig = { names: [], zones: new Map(), fallthrough: null, catalogs: new Map() };
  while (d.next()) {
    const occ = parseOccurrence(d, SECONDARY_OPTIONS);
    const args = occ.directive.raw;
    const origins = args.length > 0 ? normalizeZoneArgs(args) : [...blockZones];
    for (const origin of origins) {
      // CoreDNS makes a new zone for each occurrence naming it (file.NewZone): the last one wins.
      cfg.zones.set(origin, { origin, from: [] });
      cfg.names.push(origin);
    }
    let hasTransfer = false;
    for (const o of occ.options) {
      switch (o.name) {
        case 'transfer': {
          const [kind, ...addrs] = o.raw;
          // parse.TransferIn: `from` is the only direction a secondary takes.
          if (kind !== 'from') throw occ.error(o, `unknown property ${kind}`);
          if (addrs.length === 0) throw occ.error(o, "Wrong argument count or unexpected line ending after 'from'");
          const from: string[] = [];
          for (const a of addrs) {
            // Returned bare by CoreDNS: clusterdns adds the line (docs/corefile.md §11).
            if (a === '*') throw occ.error(o, "can't use '*' in transfer from");
            const n = normalizeHostPort(a, '53');
            if (n instanceof Error) throw occ.error(o, n.message);
            from.push(n);
          }
          for (const origin of origins) cfg.zones.get(origin)!.from.push(...from);
          hasTransfer = true;
          break;
        }
        case 'catalog': {
          const members: string[] = [];
          for (const a of o.raw) {
            // plugin.Host(arg).NormalizeExact() gives nothing (its SplitHostPort fails on a colon
            // without a port after it).
            const n = a.endsWith(':') ? [] : normalizeZoneArg(a);
            if (n.length === 0) throw occ.error(o, `invalid catalog member zone ${JSON.stringify(a)}`);
            for (const z of n) members.push(z);
          }
          for (const origin of origins) cfg.catalogs.set(origin, mergeMemberZones(cfg.catalogs, origin, members));
          break;
        }
        case 'fallthrough':
          cfg.fallthrough = parseFallthrough(o.values.map(String));
          break;
      }
    }
    if (!hasTransfer) {
      // Caddy's c.Err: the last token read, the block's `}` (or the directive line without one).
      const last = d.token() ?? occ.directive.token;
      throw new ConfigError('secondary zones require a transfer from property', last.file, last.line, 'secondary');
    }
  }
  return cfg;
}
