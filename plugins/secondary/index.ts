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
 *
 * A zone named by `catalog` is an RFC 9432 catalog (consumer.ts): it and the member zones it lists
 * belong to this instance, not shared, so a reload transfers them again, as CoreDNS does.
 */
import { logger } from '../../src/log.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import { TRANSFER, type TransferHub, type TransferSource } from '../../src/transfer.js';
import { CatalogConsumer, type ZoneSet } from './consumer.js';
import { SecondaryHandler } from './handler.js';
import { parseSecondary, SECONDARY_OPTIONS } from './setup.js';
import { SecondaryZone } from './zone.js';

/** CoreDNS logs transfers, checks and NOTIFY from the file package. */
const fileLog = logger('file');

/** The pulled zones as a transfer source (file's Transfer, which secondary inherits). */
function transferSource(set: ZoneSet): TransferSource {
  return {
    plugin: 'secondary',
    transfer(zone, serial) {
      const z = set.zones.get(zone);
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
    const replication = ctx.processState.replication;
    const logs = { secondary: ctx.log, file: fileLog };
    const make = (origin: string, from: readonly string[], key: string): SecondaryZone =>
      new SecondaryZone(origin, from, key, logs, replication);
    const set: ZoneSet = { names: [...cfg.names], zones: new Map() };
    const consumer = new CatalogConsumer(set, cfg.catalogs, ctx.log, make, replication?.role !== 'replica');
    // Configured zones: the zones the instance started with (members come and go with catalogs).
    const configured: SecondaryZone[] = [];
    // Catalog zones belong to this instance (transferred again after a reload, as CoreDNS does):
    // their members live in its consumer, which a new instance must fill from a transfer.
    const catalogZones: SecondaryZone[] = [];
    for (const name of cfg.names) {
      if (set.zones.has(name)) continue;
      const zc = cfg.zones.get(name)!;
      let z: SecondaryZone;
      if (cfg.catalogs.has(name)) {
        const members = cfg.catalogs.get(name)!;
        z = make(zc.origin, zc.from, `secondary:catalog:${JSON.stringify([zc.origin, zc.from, members])}`);
        consumer.attach(z);
        catalogZones.push(z);
      } else {
        const key = `secondary:${JSON.stringify([zc.origin, zc.from])}`;
        z = ctx.shared(
          key,
          () => make(zc.origin, zc.from, key),
          (z) => z.close(),
        );
      }
      set.zones.set(name, z);
      configured.push(z);
    }
    let hub: TransferHub | null = null;
    ctx.onStartup(() => {
      hub = ctx.lookup(TRANSFER) ?? null;
      consumer.hub = hub;
      if (hub !== null) {
        hub.addSource(transferSource(set));
        for (const z of configured) if (z.pulls) z.hubs.add(hub);
      }
      for (const z of configured) z.start();
    });
    ctx.onShutdown(() => {
      if (hub !== null) for (const z of configured) z.hubs.delete(hub);
      consumer.close();
      for (const z of catalogZones) z.close();
    });
    return (next: Handler | null): Handler => new SecondaryHandler(cfg, set, next, fileLog, ctx.selfLookup);
  },
};
