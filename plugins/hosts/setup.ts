/** Parsing of `hosts [FILE [ZONES...]] { ... }` (docs/plugins.md, hosts). */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, duration, file, int, option, parseOccurrences, str, zoneArg } from '../../src/corefile/options.js';
import { parseFallthrough } from '../../src/fallthrough.js';

export interface HostsConfig {
  path: string;
  /** Zones (empty → the block keys). */
  zones: string[];
  inline: string[];
  ttl: number;
  autoReverse: boolean;
  reloadMs: number;
  /** null = no fallthrough; [] never happens (no zones means root). */
  fallthrough: string[] | null;
  fallthroughUnsupported: boolean;
}

export const HOSTS_OPTIONS = directive('hosts', {
  args: { args: [file()], rest: zoneArg(), min: 0 },
  options: [
    option('ttl', {
      args: [
        int({
          meta: 'SECONDS',
          min: 1,
          max: 65535,
          invalid: () => 'ttl needs a number of second',
          range: () => 'ttl provided is invalid',
        }),
      ],
      rest: str(),
      arity: 'ttl needs a time in second',
    }),
    option('no_reverse', { rest: str() }),
    option('reload', {
      args: [
        duration({
          min: 0,
          invalid: (v) => `invalid duration for reload '${v}'`,
          range: (_, v) => `invalid negative duration for reload '${v}'`,
        }),
      ],
      arity: 'reload needs a duration (zero seconds to disable)',
    }),
    option('fallthrough', { rest: zoneArg() }),
    option('fallthrough_unsupported'),
  ],
  // Inline entries in hosts-file format.
  other: 'keep',
});

export function parseHosts(d: Dispenser): HostsConfig {
  const cfg: HostsConfig = {
    path: '/etc/hosts',
    zones: [],
    inline: [],
    ttl: 3600,
    autoReverse: true,
    reloadMs: 5000,
    fallthrough: null,
    fallthroughUnsupported: false,
  };
  parseOccurrences(d, HOSTS_OPTIONS, (occ) => {
    const [path, ...zones] = occ.directive.values as string[];
    if (path !== undefined) cfg.path = path;
    cfg.zones = [...new Set(zones)];
    for (const o of occ.options) {
      // As CoreDNS: a line that is no option is an inline entry until a `fallthrough` line.
      if (o.name === '*' && cfg.fallthrough !== null) throw occ.error(o, `unknown property '${o.raw[0]}'`);
      if (o.name === '*') cfg.inline.push(o.raw.join(' '));
      else if (o.name === 'fallthrough') cfg.fallthrough = parseFallthrough(o.values as string[]);
    }
    cfg.fallthroughUnsupported ||= occ.has('fallthrough_unsupported');
    cfg.autoReverse &&= !occ.has('no_reverse');
    cfg.ttl = occ.num('ttl', 0, cfg.ttl);
    cfg.reloadMs = occ.num('reload', 0, cfg.reloadMs);
  });
  if (cfg.fallthroughUnsupported && cfg.fallthrough === null)
    throw d.err('fallthrough_unsupported requires fallthrough');
  return cfg;
}
