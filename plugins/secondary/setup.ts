/**
 * `secondary [ZONES...] { transfer from ADDRESS...; fallthrough [ZONES...] }` (CoreDNS 1.15.0
 * plugin/secondary/setup.go, docs/plugins.md, secondary). Every occurrence adds its zones; each
 * `transfer from` line adds primaries to the occurrence's zones, tried in order; the last
 * `fallthrough` applies to the whole plugin.
 */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, option, parseOccurrence, str, zoneArg } from '../../src/corefile/options.js';
import { ConfigError } from '../../src/corefile/types.js';
import { normalizeZoneArgs } from '../../src/dns/name.js';
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
      summary: 'RFC 9432 catalog zones: not supported by clusterdns (a setup error)',
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
}

export function parseSecondary(d: Dispenser, blockZones: readonly string[]): SecondaryConfig {
  const cfg: SecondaryConfig = { names: [], zones: new Map(), fallthrough: null };
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
        case 'catalog':
          throw occ.error(o, 'catalog zones (RFC 9432) are not supported by clusterdns');
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
