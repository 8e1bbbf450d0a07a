/**
 * `file DBFILE [ZONES...] { reload DURATION; reload_by_mtime; fallthrough [ZONES...]; upstream }`
 * (docs/plugins.md, file). Each occurrence adds its zones; `reload` carries over to later
 * occurrences as in CoreDNS 1.15.0, and the last `fallthrough` applies to the whole plugin.
 */
import { readFileSync, statSync } from 'node:fs';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { ConfigError } from '../../src/corefile/types.js';
import { directive, duration, file, option, parseOccurrence, str, zoneArg } from '../../src/corefile/options.js';
import { normalizeZoneArgs } from '../../src/dns/name.js';
import { parseFallthrough } from '../../src/fallthrough.js';
import { formatGoDuration } from '../../src/util/duration.js';
import type { Logger } from '../../src/log.js';
import { loadZone, openErrorText } from '../../src/zone/load.js';
import { ZoneData } from '../../src/zone/zone.js';

export const FILE_OPTIONS = directive('file', {
  args: { args: [file('DBFILE')], rest: zoneArg(), min: 1 },
  options: [
    option('reload', { args: [duration()] }),
    option('reload_by_mtime'),
    option('fallthrough', { rest: zoneArg(), min: 0 }),
    option('upstream', { rest: str('ADDRESS'), min: 0, summary: 'accepted and ignored, as in CoreDNS' }),
  ],
});

/** One served zone: its origin, file and current data (replaced by reloads). */
export interface FileZone {
  readonly origin: string;
  readonly file: string;
  /** The data served; without an SOA (file missing at start) every query gets SERVFAIL. */
  data: ZoneData;
  reloadMs: number;
  byMtime: boolean;
  mtimeMs: number;
}

export interface FileConfig {
  /** Zone origins in Corefile order (a repeated origin keeps its last file, as CoreDNS's map). */
  readonly names: string[];
  readonly zones: Map<string, FileZone>;
  /** null: no fallthrough; otherwise the zones that fall through (`.` = all). */
  fallthrough: string[] | null;
}

export function parseFile(
  d: Dispenser,
  blockZones: readonly string[],
  log: Logger,
  /** The block's root applied to the file name (SetupContext.resolvePath). */
  resolvePath = (p: string): string => p,
): FileConfig {
  const cfg: FileConfig = { names: [], zones: new Map(), fallthrough: null };
  let reloadMs = 60_000;
  let byMtime = false;
  let openErr: { text: string; file: string; line: number } | null = null;
  while (d.next()) {
    const occ = parseOccurrence(d, FILE_OPTIONS);
    const fileName = resolvePath(occ.directive.raw[0]!);
    const args = normalizeZoneArgs(occ.directive.raw.slice(1));
    const origins = occ.directive.raw.length > 1 ? args : [...blockZones];
    let text: string | null = null;
    let mtimeMs = 0;
    try {
      text = readFileSync(fileName, 'latin1');
    } catch (e) {
      openErr = { text: openErrorText(fileName, e), file: occ.directive.token.file, line: occ.directive.token.line };
    }
    if (text !== null) {
      try {
        mtimeMs = statSync(fileName).mtimeMs;
      } catch {
        mtimeMs = 0;
      }
    }
    const created: FileZone[] = [];
    for (const origin of origins) {
      let data = new ZoneData(origin);
      if (text !== null) {
        try {
          data = loadZone(text, origin, fileName, -1);
        } catch (e) {
          const at = occ.directive.token;
          throw new ConfigError((e as Error).message, at.file, at.line, 'file');
        }
      }
      const z: FileZone = { origin, file: fileName, data, reloadMs, byMtime, mtimeMs };
      cfg.zones.set(origin, z);
      cfg.names.push(origin);
      created.push(z);
    }
    for (const o of occ.options) {
      switch (o.name) {
        case 'fallthrough':
          cfg.fallthrough = parseFallthrough(o.values.map(String));
          break;
        case 'reload':
          reloadMs = o.values[0] as number;
          break;
        case 'reload_by_mtime':
          byMtime = true;
          break;
      }
    }
    for (const z of created) {
      z.reloadMs = reloadMs;
      z.byMtime = byMtime;
    }
  }
  if (openErr !== null) {
    if (reloadMs === 0) throw new ConfigError(openErr.text, openErr.file, openErr.line, 'file');
    log.warning(`Failed to open ${JSON.stringify(openErr.text)}: trying again in ${formatGoDuration(reloadMs)}`);
  }
  return cfg;
}
