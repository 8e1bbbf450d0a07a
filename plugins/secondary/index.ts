/**
 * The `secondary` directive (docs/plugins.md, secondary): zones pulled by AXFR from their
 * primaries and kept current from the SOA's timers and NOTIFY (zone.ts), served as *file* serves
 * its zones (handler.ts), and offered to the *transfer* plugin of the block for transfers to
 * further secondaries, who are notified after each transfer in.
 *
 * A zone is a resource shared across reloads (`ctx.shared`, keyed by its origin and primaries):
 * a reload that keeps the zone keeps serving it without pulling it again, and blocks that name the
 * same zone with the same primaries share one pull. With query threads the main thread pulls and
 * the threads get each transfer (docs/multicore.md).
 */
import { logger } from '../../src/log.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import { TRANSFER, type TransferHub, type TransferSource } from '../../src/transfer.js';
import { SecondaryHandler } from './handler.js';
import { parseSecondary, SECONDARY_OPTIONS } from './setup.js';
import { SecondaryZone } from './zone.js';

/** CoreDNS logs transfers, checks and NOTIFY from the file package. */
const fileLog = logger('file');

/** The pulled zones as a transfer source (file's Transfer, which secondary inherits). */
function transferSource(zones: ReadonlyMap<string, SecondaryZone>): TransferSource {
  return {
    plugin: 'secondary',
    transfer(zone, serial) {
      const z = zones.get(zone);
      if (z === undefined || z.data.soa === null) return null;
      return z.data.transferRecords(serial);
    },
  };
}

export const secondary: PluginDef = {
  name: 'secondary',
  repeat: 'all',
  options: SECONDARY_OPTIONS,
  setup(d, ctx) {
    const cfg = parseSecondary(d, ctx.block.zones);
    const zones = new Map<string, SecondaryZone>();
    for (const name of cfg.names) {
      const zc = cfg.zones.get(name)!;
      const key = `secondary:${JSON.stringify([zc.origin, zc.from])}`;
      const z = ctx.shared(
        key,
        () =>
          new SecondaryZone(
            zc.origin,
            zc.from,
            key,
            { secondary: ctx.log, file: fileLog },
            ctx.processState.replication,
          ),
        (z) => z.close(),
      );
      zones.set(name, z);
    }
    let hub: TransferHub | null = null;
    ctx.onStartup(() => {
      hub = ctx.lookup(TRANSFER) ?? null;
      if (hub !== null) {
        hub.addSource(transferSource(zones));
        for (const z of zones.values()) if (z.pulls) z.hubs.add(hub);
      }
      for (const z of zones.values()) z.start();
    });
    ctx.onShutdown(() => {
      if (hub !== null) for (const z of zones.values()) z.hubs.delete(hub);
    });
    return (next: Handler | null): Handler => new SecondaryHandler(cfg, zones, next, fileLog, ctx.selfLookup);
  },
};
