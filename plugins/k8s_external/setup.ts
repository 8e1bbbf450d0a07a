/**
 * `k8s_external [ZONES...] { apex APEX; ttl TTL; headless; fallthrough [ZONES...] }` (README.md),
 * parsed with the declared options. As in CoreDNS 1.15.0: `ttl` and `apex` read their first
 * argument and ignore the rest, `headless` takes none (a word after it is an unknown property),
 * several occurrences in one block each replace the settings of the one before.
 */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { ConfigError } from '../../src/corefile/types.js';
import { directive, int, option, parseOccurrence, str, zoneArg } from '../../src/corefile/options.js';
import { parseFallthrough } from '../../src/fallthrough.js';

export const K8S_EXTERNAL_OPTIONS = directive('k8s_external', {
  args: { rest: zoneArg() },
  options: [
    option('apex', { args: [str('APEX')], rest: str('IGNORED') }),
    option('ttl', {
      args: [int({ min: 0, max: 3600, range: (v) => `ttl must be in range [0, 3600]: ${v}`, meta: 'TTL' })],
      rest: str('IGNORED'),
    }),
    option('headless', { rest: str('IGNORED') }),
    option('fallthrough', { rest: zoneArg() }),
  ],
});

export interface ExternalConfig {
  /** Normalised zones (the server block's when none are given), in order. */
  zones: string[];
  /** Label of the subdomain holding the name server records (`dns`). */
  apex: string;
  ttl: number;
  headless: boolean;
  /** Fallthrough zones (`.` = all), or null when off. */
  fallthrough: string[] | null;
}

export function parseExternal(d: Dispenser, blockZones: readonly string[]): ExternalConfig {
  const cfg: ExternalConfig = { zones: [...blockZones], apex: 'dns', ttl: 5, headless: false, fallthrough: null };
  while (d.next()) {
    const occ = parseOccurrence(d, K8S_EXTERNAL_OPTIONS);
    const zones = occ.directive.values.map(String);
    cfg.zones = zones.length ? [...new Set(zones)] : [...blockZones];
    for (const o of occ.options) {
      switch (o.name) {
        case 'apex':
          cfg.apex = o.raw[0]!;
          break;
        case 'ttl':
          cfg.ttl = o.values[0] as number;
          break;
        case 'headless':
          // CoreDNS reads a word after `headless` as the next property.
          if (o.raw.length > 0)
            throw new ConfigError(`unknown property '${o.raw[0]}'`, o.token.file, o.token.line, 'k8s_external');
          cfg.headless = true;
          break;
        case 'fallthrough':
          cfg.fallthrough = parseFallthrough(o.values.map(String));
          break;
      }
    }
  }
  return cfg;
}
