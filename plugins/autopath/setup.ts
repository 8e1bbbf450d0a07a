/**
 * `autopath [ZONES...] RESOLV-CONF` (docs/plugins.md, autopath). The last argument is either `@PLUGIN`
 * (the search path comes from that plugin per query; only `@kubernetes` supplies one) or a
 * resolv.conf-style file whose `search` (or `domain`) list, normalised and followed by the empty
 * element, is the search path for every client.
 */
import { readFileSync } from 'node:fs';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, parseOccurrences, str } from '../../src/corefile/options.js';
import { normalizeZoneArgs } from '../../src/dns/name.js';
import { resolvConfSearch } from '../../src/util/resolvconf.js';

export interface AutopathConfig {
  /** Zones the plugin acts on (normalised, absolute); the block's zones when none are given. */
  readonly zones: readonly string[];
  /** `kubernetes` for `@kubernetes`; null when a resolv.conf file was given. */
  readonly plugin: string | null;
  /** The search path from the file: normalised domains then `''`; empty with `@PLUGIN`. */
  readonly search: readonly string[];
}

function readError(path: string, e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  if (err.code === 'ENOENT') return `open ${path}: no such file or directory`;
  if (err.code === 'EACCES') return `open ${path}: permission denied`;
  if (err.code === 'EISDIR') return `read ${path}: is a directory`;
  return err.message;
}

export const AUTOPATH_OPTIONS = directive('autopath', {
  args: { rest: str('ZONES|RESOLV-CONF'), min: 1, arity: 'no resolv-conf specified' },
});

export function parseAutopath(d: Dispenser, blockZones: readonly string[]): AutopathConfig {
  let cfg: AutopathConfig = { zones: blockZones, plugin: null, search: [] };
  for (const occ of parseOccurrences(d, AUTOPATH_OPTIONS)) {
    const args = occ.directive.raw;
    const resolv = args.at(-1)!;
    let plugin: string | null = null;
    let search: string[] = [];
    if (resolv.startsWith('@')) {
      plugin = resolv.slice(1);
    } else {
      let text: string;
      try {
        text = readFileSync(resolv, 'utf8');
      } catch (e) {
        throw occ.error(occ.directive, `failed to parse "${resolv}": ${readError(resolv, e)}`);
      }
      search = [...resolvConfSearch(text), ''];
    }
    const zoneArgs = args.slice(0, -1);
    cfg = { zones: zoneArgs.length ? normalizeZoneArgs(zoneArgs) : blockZones, plugin, search };
  }
  return cfg;
}
