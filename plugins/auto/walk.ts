/**
 * One scan of the `auto` directory (CoreDNS 1.15.0 plugin/auto/walk.go): every file below it whose
 * base name matches the regexp names a zone through the origin template; new zones are read and
 * inserted, zones whose file is gone are deleted, and a zone already loaded only follows its file
 * to its current path (its content is re-read by the zone's own reload, src/zone/reload.ts).
 */
import { lstatSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { isAbsolute, join, normalize, relative } from 'node:path';
import { lowerName } from '../../src/dns/name.js';
import type { Logger } from '../../src/log.js';
import { loadZone, openErrorText } from '../../src/zone/load.js';
import type { ReloadableZone } from '../../src/zone/reload.js';

/** The zones an `auto` handler serves, replaced by scans. */
export class AutoZones {
  readonly z = new Map<string, ReloadableZone>();
  /** The loaded origins, in the order CoreDNS keeps them (appended; rebuilt from the map on removal). */
  names: string[] = [];

  add(z: ReloadableZone): void {
    this.z.set(z.origin, z);
    this.names = [...this.names, z.origin];
  }

  remove(origin: string): void {
    this.z.delete(origin);
    this.names = [...this.z.keys()];
  }
}

/**
 * Go's regexp.Expand: `$name` / `${name}` (name a group number or a named group; unknown or
 * unmatched: empty), `$$` a dollar; a `$` not followed by a valid reference is kept.
 */
export function expandTemplate(template: string, m: RegExpExecArray): string {
  let out = '';
  for (let i = 0; i < template.length; i++) {
    const c = template[i];
    if (c !== '$') {
      out += c;
      continue;
    }
    const rest = template.slice(i + 1);
    if (rest.startsWith('$')) {
      out += '$';
      i++;
      continue;
    }
    const ref = /^\{([A-Za-z0-9_]+)\}/.exec(rest) ?? /^([A-Za-z0-9_]+)/.exec(rest);
    if (ref === null) {
      out += c;
      continue;
    }
    const name = ref[1]!;
    out += (/^\d+$/.test(name) ? m[Number(name)] : m.groups?.[name]) ?? '';
    i += ref[0].length;
  }
  return out;
}

/** CoreDNS's `matches`: the origin (absolute, as written) a file name gives, or null. */
export function originOf(re: RegExp, template: string, base: string): string | null {
  const m = re.exec(base);
  if (m === null) return null;
  const o = expandTemplate(template, m);
  return o.endsWith('.') ? o : `${o}.`;
}

/** Files below `dir` in filepath.Walk's order (lexical, depth first); symlinks are not entered. */
function* walkFiles(dir: string, log: Logger): Generator<{ path: string; name: string }> {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (e) {
    log.warning(`error reading ${dir}: ${openErrorText(dir, e)}`);
    return;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) yield* walkFiles(path, log);
    else yield { path, name: e.name };
  }
}

export interface WalkParams {
  readonly directory: string;
  readonly re: RegExp;
  readonly template: string;
}

/** One scan. Returns the origins inserted by it (their reload starts with the next tick). */
export function walk(p: WalkParams, zones: AutoZones, log: Logger): Set<string> {
  let dir = p.directory;
  try {
    // filepath.EvalSymlinks: a relative directory stays relative (paths in the log lines too).
    const real = realpathSync(dir);
    dir = isAbsolute(dir) ? real : relative(process.cwd(), real) || '.';
  } catch {
    // As filepath.EvalSymlinks failing: walk the path as given.
  }
  const toDelete = new Map<string, boolean>();
  for (const n of zones.names) toDelete.set(n, true);
  const seen = new Map<string, string>();
  const inserted = new Set<string>();
  let readable = true;
  try {
    lstatSync(dir);
  } catch (e) {
    // filepath.Walk's Lstat of the root failed: reported once, nothing walked.
    log.warning(`error reading ${dir}: ${openErrorText(dir, e).replace(/^open /, 'lstat ')}`);
    readable = false;
  }
  for (const { path, name } of readable ? walkFiles(dir, log) : []) {
    const written = originOf(p.re, p.template, name);
    if (written === null) continue;
    // Lower-cased: queries are matched on lower-case names (CoreDNS keeps the case as written).
    const origin = lowerName(written);
    if (origin === null) continue;
    const clean = normalize(path);
    const previous = seen.get(origin);
    if (previous !== undefined && previous !== clean) {
      log.warning(
        `Multiple zone files match origin ${JSON.stringify(origin)}: using ${JSON.stringify(previous)} instead of ${JSON.stringify(clean)}`,
      );
      toDelete.set(origin, false);
      continue;
    }
    seen.set(origin, clean);
    const z = zones.z.get(origin);
    if (z !== undefined) {
      toDelete.set(origin, false);
      z.file = clean;
      continue;
    }
    let text: string;
    try {
      text = readFileSync(clean, 'latin1');
    } catch (e) {
      log.warning(`Opening ${path} failed: ${openErrorText(path, e)}`);
      continue;
    }
    let data;
    try {
      // Serial 0: a new zone (CoreDNS passes 0, so a file whose SOA serial is 0 is not loaded).
      data = loadZone(text, origin, path, 0);
    } catch (e) {
      log.warning(`Parse zone \`${origin}': ${(e as Error).message}`);
      continue;
    }
    zones.add({ origin, file: clean, data, byMtime: false, mtimeMs: 0 });
    inserted.add(origin);
    log.info(`Inserting zone \`${origin}' from: ${path}`);
    toDelete.set(origin, false);
  }
  for (const [origin, del] of toDelete) {
    if (!del) continue;
    zones.remove(origin);
    log.info(`Deleting zone \`${origin}'`);
  }
  return inserted;
}
