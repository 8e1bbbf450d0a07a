/**
 * The `auto` directive (docs/plugins.md, auto): every zone file in a directory whose name matches a
 * regexp, served as *file* serves it. The directory is scanned at start and every `reload`
 * interval (zones added and removed); a loaded zone is re-read on the same interval when its SOA
 * serial changed, as CoreDNS's per-zone reload does. With *transfer* in the block the zones are
 * offered for transfer and their secondaries notified after every scan.
 */
import type { Handler, PluginDef } from '../../src/plugin.js';
import { backgroundLog, logger } from '../../src/log.js';
import { TRANSFER, type TransferHub, type TransferSource } from '../../src/transfer.js';
import { reloadZone } from '../../src/zone/reload.js';
import { AutoHandler } from './handler.js';
import { AUTO_OPTIONS, parseAuto } from './setup.js';
import { AutoZones, walk } from './walk.js';

/** CoreDNS logs a zone's reload from the file package: `plugin/file`. */
const fileLog = logger('file');

/** The loaded zones as a transfer source (CoreDNS's Auto.Transfer). */
function transferSource(zones: AutoZones): TransferSource {
  return {
    plugin: 'auto',
    transfer(zone, serial) {
      const z = zones.z.get(zone);
      if (z === undefined || z.data.soa === null) return null;
      return z.data.transferRecords(serial);
    },
  };
}

export const auto: PluginDef = {
  name: 'auto',
  repeat: 'all',
  options: AUTO_OPTIONS,
  setup(d, ctx) {
    const cfg = parseAuto(d, ctx.block.zones, ctx.log, ctx.resolvePath);
    const zones = new AutoZones();
    let timer: NodeJS.Timeout | null = null;
    let xfer: TransferHub | null = null;
    // Every query thread scans its own copy (docs/multicore.md); only the main thread notifies.
    const notifies = !ctx.process.queryThread;
    // Auto.Notify: every loaded zone; the last error is logged as a warning.
    const notifyAll = (): void => {
      if (xfer === null || !notifies) return;
      void Promise.all(zones.names.map((n) => xfer!.notify(n))).then((errs) => {
        const last = errs.filter((e) => e !== null).at(-1);
        if (last !== undefined) ctx.log.warning(last.message);
      });
    };
    // After a zone's reload: NOTIFY its secondaries (file's reload.go, logged by plugin/file).
    const reloaded = (origin: string): void => {
      if (xfer === null || !notifies) return;
      void xfer.notify(origin).then((err) => {
        if (err !== null) fileLog.warning(`Failed sending notifies: ${err.message}`);
      });
    };
    // A query thread's scans and reloads say nothing: the main thread's log each change once, as
    // CoreDNS's one process does (src/log.ts, backgroundLog).
    const scanLog = backgroundLog(ctx.log, ctx.process.queryThread);
    const reloadLog = backgroundLog(fileLog, ctx.process.queryThread);
    /** One tick: the loaded zones' reload checks, then the directory scan. */
    const tick = (): void => {
      for (const name of zones.names) reloadZone(zones.z.get(name)!, reloadLog, reloaded);
      walk(cfg, zones, scanLog);
      notifyAll();
    };
    ctx.onStartup(() => {
      xfer = ctx.lookup(TRANSFER) ?? null;
      xfer?.addSource(transferSource(zones));
      walk(cfg, zones, ctx.log);
      notifyAll();
      if (cfg.reloadMs > 0) {
        timer = setInterval(tick, cfg.reloadMs);
        timer.unref();
      }
    });
    ctx.onShutdown(() => {
      if (timer !== null) clearInterval(timer);
      timer = null;
    });
    return (next: Handler | null): Handler => new AutoHandler(cfg, zones, next, ctx.selfLookup);
  },
};

export { AutoZones, walk };
