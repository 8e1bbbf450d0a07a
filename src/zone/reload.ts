/**
 * Re-reading a zone file (CoreDNS's Zone.Reload ticker body, docs/plugins.md, file): the zone is
 * replaced when its SOA serial (or, with `byMtime`, the file's modification time) changed. Shared by
 * `file` and `auto`, whose zones reload alike.
 */
import { readFileSync, statSync } from 'node:fs';
import type { Logger } from '../log.js';
import { loadZone, openErrorText, UnchangedSerial } from './load.js';
import type { ZoneData } from './zone.js';

/** A zone read from a file, replaced in place by reloads. */
export interface ReloadableZone {
  readonly origin: string;
  file: string;
  data: ZoneData;
  byMtime: boolean;
  mtimeMs: number;
}

/**
 * One reload check of a zone (CoreDNS's Zone.Reload ticker body). `reloaded` runs after the zone
 * was replaced (the NOTIFY to its secondaries).
 */
export function reloadZone(z: ReloadableZone, log: Logger, reloaded?: (origin: string) => void): void {
  let serial = z.data.serial;
  let mtime = 0;
  if (z.byMtime) {
    let st;
    try {
      st = statSync(z.file);
    } catch (e) {
      log.error(
        `Failed to stat zone ${JSON.stringify(z.origin)} in ${JSON.stringify(z.file)}: stat ${openErrorText(z.file, e).slice(5)}`,
      );
      return;
    }
    if (!(st.mtimeMs > z.mtimeMs)) return;
    mtime = st.mtimeMs;
    serial = 0;
  }
  let text: string;
  try {
    text = readFileSync(z.file, 'latin1');
  } catch (e) {
    log.error(
      `Failed to open zone ${JSON.stringify(z.origin)} in ${JSON.stringify(z.file)}: ${openErrorText(z.file, e)}`,
    );
    return;
  }
  try {
    z.data = loadZone(text, z.origin, z.file, serial);
  } catch (e) {
    if (!(e instanceof UnchangedSerial)) log.error(`Parsing zone ${JSON.stringify(z.origin)}: ${(e as Error).message}`);
    return;
  }
  if (z.byMtime) z.mtimeMs = mtime;
  log.info(
    `Successfully reloaded zone ${JSON.stringify(z.origin)} in ${JSON.stringify(z.file)} with ${z.data.serial} SOA serial`,
  );
  reloaded?.(z.origin);
}
