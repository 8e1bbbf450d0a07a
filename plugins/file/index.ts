/**
 * The `file` directive (docs/plugins.md, file): zones served from RFC 1035 master files. Every
 * occurrence in a block adds its zones to one handler; each zone is re-read every `reload` interval
 * and replaced when its SOA serial (or, with `reload_by_mtime`, the file's modification time)
 * changed. The files are read during setup so that a broken zone file fails the start (or the
 * reload of the Corefile) with the zone file's name, line and the reason.
 */
import { backgroundLog } from '../../src/log.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import { FileHandler } from './handler.js';
import { reloadZone } from '../../src/zone/reload.js';
import { FILE_OPTIONS, parseFile, type FileConfig } from './setup.js';
import { TRANSFER, type TransferHub, type TransferSource } from '../../src/transfer.js';

/** The zones of a `file` handler as a transfer source (CoreDNS's File.Transfer). */
function transferSource(cfg: FileConfig): TransferSource {
  return {
    plugin: 'file',
    transfer(zone, serial) {
      // Only the zone itself, not a name inside it (lookupZone's `matched != zone`).
      const z = cfg.zones.get(zone);
      if (z === undefined || z.data.soa === null) return null;
      return z.data.transferRecords(serial);
    },
  };
}

export { reloadZone };

export const file: PluginDef = {
  name: 'file',
  repeat: 'all',
  options: FILE_OPTIONS,
  setup(d, ctx) {
    const cfg = parseFile(d, ctx.block.zones, ctx.log, ctx.resolvePath);
    const timers: NodeJS.Timeout[] = [];
    let xfer: TransferHub | null = null;
    // Every query thread loads and reloads its own copy of the zones (docs/multicore.md); the main
    // thread alone tells the secondaries and logs the reload (src/log.ts, backgroundLog), so each
    // change is heard and logged once, as from CoreDNS.
    const notifies = !ctx.process.queryThread;
    const reloadLog = backgroundLog(ctx.log, ctx.process.queryThread);
    // After a reload: NOTIFY the secondaries, logging those that did not accept (CoreDNS's reload.go).
    const reloaded = (origin: string): void => {
      if (!notifies) return;
      void xfer?.notify(origin).then((err) => {
        if (err !== null) ctx.log.warning(`Failed sending notifies: ${err.message}`);
      });
    };
    ctx.onStartup(() => {
      // With `transfer` in the block: offer the zones, and NOTIFY every zone once at start (errors
      // not logged, as CoreDNS's setup.go).
      xfer = ctx.lookup(TRANSFER) ?? null;
      if (xfer !== null) {
        xfer.addSource(transferSource(cfg));
        if (notifies) for (const name of cfg.names) void xfer.notify(name);
      }
      for (const name of new Set(cfg.names)) {
        const z = cfg.zones.get(name)!;
        if (z.reloadMs <= 0) continue;
        const t = setInterval(() => reloadZone(z, reloadLog, reloaded), z.reloadMs);
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
