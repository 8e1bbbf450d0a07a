/**
 * The `dynupdate` directive (docs/plugins.md, dynupdate): RFC 2136 UPDATE messages, signed with a
 * key the tsig plugin validated and allowed by an `allow` rule, change one zone; queries and zone
 * transfers see the change at once, and the secondaries are told (NOTIFY, through *transfer*).
 * The listener reads UPDATE messages for the block (BLOCK_UPDATE); other blocks answer NOTIMP.
 */
import { CACHE_BYPASS_ZONES } from '../../src/cachebypass.js';
import type { PluginDef } from '../../src/plugin.js';
import { BLOCK_UPDATE } from '../../src/server/listenopts.js';
import { TRANSFER, type TransferHub } from '../../src/transfer.js';
import { DynupdateHandler } from './handler.js';
import { DYNUPDATE_OPTIONS, parseDynupdate } from './setup.js';
import { readDatabase, readSeed } from './store.js';
import { UpdatableZone } from './zone.js';

export const dynupdate: PluginDef = {
  name: 'dynupdate',
  repeat: 'all',
  options: DYNUPDATE_OPTIONS,
  async setup(d, ctx) {
    const cfg = parseDynupdate(d, ctx.block.zones, ctx.resolvePath);
    const replication = ctx.processState.replication;
    // The same in every thread; one zone per block (two blocks may serve the same zone).
    const key = `dynupdate:${JSON.stringify([ctx.block.keys?.map((k) => k.text) ?? [], ctx.block.port, cfg.zone, cfg.seed, cfg.database])}`;
    let xfer: TransferHub | null = null;
    let closed = false;
    // One NOTIFY round at a time; changes while it runs are told in one more round (update.go).
    let pending = false;
    let running = false;
    const notify = async (): Promise<void> => {
      running = true;
      while (pending && !closed && xfer !== null) {
        pending = false;
        const err = await xfer.notify(cfg.zone);
        if (err !== null) ctx.log.warning(`NOTIFY for ${cfg.zone} after UPDATE failed: ${err.message}`);
      }
      running = false;
    };
    const changed = (): void => {
      if (xfer === null) return;
      pending = true;
      if (!running) void notify();
    };
    let zone: UpdatableZone;
    if (replication?.role === 'replica') {
      // A query thread: the main thread, which set the zone up first, owns it (zone.ts).
      zone = await UpdatableZone.follow(cfg, ctx.log, replication, key);
    } else {
      let records;
      try {
        records =
          (cfg.database !== null ? readDatabase(cfg.database, cfg.zone, cfg.limits) : null) ??
          readSeed(cfg.seed, cfg.zone, cfg.limits);
      } catch (e) {
        throw d.err((e as Error).message);
      }
      zone = UpdatableZone.owner(cfg, records, ctx.log, replication, key, changed);
    }
    ctx.provide(BLOCK_UPDATE, true);
    ctx.provide(CACHE_BYPASS_ZONES, [cfg.zone]);
    ctx.onStartup(() => {
      zone.start();
      xfer = ctx.lookup(TRANSFER) ?? null;
      xfer?.addSource({
        plugin: 'dynupdate',
        transfer: (z, serial) => (z === cfg.zone ? zone.state.data.transferRecords(serial) : null),
      });
    });
    ctx.onShutdown(() => {
      closed = true;
      zone.close();
    });
    return (next) => new DynupdateHandler(cfg, zone, next, ctx.log, ctx.selfLookup);
  },
};
