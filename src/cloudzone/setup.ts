/**
 * The setup route53 and clouddns share (one handler per occurrence, chained in Corefile order, as
 * CoreDNS adds one plugin per occurrence): in the main thread each occurrence is started (its
 * credentials, zone check and first listing: the plugin's own `start`) and then served by
 * `serveListed`; in a query thread each occurrence follows the main thread's copy of its zones
 * (src/cloudzone/replicate.ts) and never calls the cloud API.
 */
import type { Fallthrough } from '../fallthrough.js';
import { backgroundLog, type Logger } from '../log.js';
import type { HandlerFactory, SetupContext } from '../plugin.js';
import type { ReplicationSource } from '../server/replication.js';
import { HostedZonesHandler, type HostedZones } from './hosted.js';
import { type Refresher, startRefresh } from './refresh.js';
import { followZones, offerZones, zoneIds, zonesKey } from './replicate.js';

/** What the shared setup reads of an occurrence's configuration. */
export interface CloudZonesConfig {
  readonly zones: HostedZones;
  readonly fallthrough: Fallthrough;
  readonly refreshMs: number;
}

/**
 * Start one occurrence in the main thread (a failure fails the start); `source` and `key` are for
 * `serveListed`.
 */
export type StartOccurrence<C> = (
  cfg: C,
  log: Logger,
  source: ReplicationSource | null,
  key: string,
) => Promise<Refresher>;

/**
 * The main thread's steady state after the first listing: the zones offered to the query threads
 * (with any), listed again every `refresh` and sent after each listing, even a failed one (the
 * hosted zones listed before the failure changed); a failed listing is logged and the last data
 * kept. `stop` ends the loop, withdraws the offer and runs `close` (the API client's).
 */
export function serveListed(
  cfg: CloudZonesConfig,
  update: (signal: AbortSignal) => Promise<void>,
  log: Logger,
  source: ReplicationSource | null,
  key: string,
  close: () => void,
): Refresher {
  const offer = source === null ? null : offerZones(source, key, cfg.zones);
  const loop = startRefresh(
    (signal) => update(signal).finally(() => offer?.publish()),
    cfg.refreshMs,
    (e) => log.error(`Failed to update zones ${cfg.zones.namesText()}: ${e.message}`),
  );
  return {
    stop() {
      loop.stop();
      offer?.withdraw();
      close();
    },
  };
}

/**
 * The handler factory of `plugin`'s occurrences `cfgs`. `keyConfig` is what of an occurrence
 * decides its replication key besides its zones (credentials, endpoint, refresh: a reload that
 * changes any of them gets a new key).
 */
export function setupCloudZones<C extends CloudZonesConfig>(
  plugin: string,
  ctx: SetupContext,
  cfgs: readonly C[],
  keyConfig: (cfg: C) => readonly unknown[],
  start: StartOccurrence<C>,
): HandlerFactory | Promise<HandlerFactory> {
  const replication = ctx.processState.replication;
  const block = [ctx.block.keys?.map((k) => k.text) ?? [], ctx.block.port];
  const keyOf = (cfg: C, i: number): string => zonesKey(plugin, block, i, [zoneIds(cfg.zones), ...keyConfig(cfg)]);
  const refreshers: Refresher[] = [];
  const factory: HandlerFactory = (next) => {
    let h = next;
    for (let i = cfgs.length - 1; i >= 0; i--) {
      h = new HostedZonesHandler(plugin, cfgs[i]!.zones, cfgs[i]!.fallthrough, h, ctx.selfLookup);
    }
    return h!;
  };
  ctx.onShutdown(() => {
    for (const r of refreshers) r.stop();
    refreshers.length = 0;
  });
  if (replication?.role === 'replica') {
    // A query thread never resolves credentials or calls the API: the main thread listed the
    // zones before it started this thread (or finished its reload), and sends them.
    return (async () => {
      for (const [i, cfg] of cfgs.entries()) {
        refreshers.push({ stop: await followZones(replication, keyOf(cfg, i), cfg.zones) });
      }
      return factory;
    })();
  }
  // backgroundLog: a unit test may set up a query thread without replication.
  const log = backgroundLog(ctx.log, ctx.process.queryThread);
  const source = replication?.role === 'source' ? replication : null;
  ctx.onStartup(async () => {
    for (const [i, cfg] of cfgs.entries()) refreshers.push(await start(cfg, log, source, keyOf(cfg, i)));
  });
  return factory;
}
