/**
 * The `file` directive (docs/plugins.md, file): zones served from RFC 1035 master files. Every
 * occurrence in a block adds its zones to one handler; each zone is re-read every `reload` interval
 * and replaced when its SOA serial (or, with `reload_by_mtime`, the file's modification time)
 * changed. The files are read during setup so that a broken zone file fails the start (or the
 * reload of the Corefile) with the zone file's name, line and the reason.
 */
import { readFileSync, statSync } from 'node:fs';
import type { Handler, PluginDef } from '../../src/plugin.js';
import type { Logger } from '../../src/log.js';
import { FileHandler } from './handler.js';
import { loadZone, openErrorText, UnchangedSerial } from './load.js';
import { FILE_OPTIONS, parseFile, type FileZone } from './setup.js';

/** One reload check of a zone (CoreDNS's Zone.Reload ticker body). */
export function reloadZone(z: FileZone, log: Logger): void {
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
}

export const file: PluginDef = {
  name: 'file',
  repeat: 'all',
  options: FILE_OPTIONS,
  setup(d, ctx) {
    const cfg = parseFile(d, ctx.block.zones, ctx.log);
    const timers: NodeJS.Timeout[] = [];
    ctx.onStartup(() => {
      for (const name of new Set(cfg.names)) {
        const z = cfg.zones.get(name)!;
        if (z.reloadMs <= 0) continue;
        const t = setInterval(() => reloadZone(z, ctx.log), z.reloadMs);
        t.unref();
        timers.push(t);
      }
    });
    ctx.onShutdown(() => {
      for (const t of timers) clearInterval(t);
      timers.length = 0;
    });
    return (next: Handler | null): Handler => new FileHandler(cfg, next, ctx.log, ctx.selfLookup);
  },
};
