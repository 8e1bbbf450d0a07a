/**
 * The `clouddns` directive (README.md): zones served from Google Cloud DNS managed zones. At start
 * each ZONE:PROJECT_ID:HOSTED_ZONE_NAME is checked and every zone listed (a failure fails the start,
 * as in CoreDNS 1.15.0); then listed again every `refresh`, a failed refresh logged and the last
 * data kept. Answers are the file plugin's, from the in-memory zones (src/cloudzone/). With query
 * threads only the main thread does this, and sends the records to the threads
 * (src/cloudzone/replicate.ts): Cloud DNS sees one listing per refresh, as with CoreDNS.
 */
import { ConfigError } from '../../src/corefile/types.js';
import { HostedZonesHandler } from '../../src/cloudzone/hosted.js';
import { type Refresher, startRefresh } from '../../src/cloudzone/refresh.js';
import { followZones, offerZones, type ZonesOffer, zoneIds, zonesKey } from '../../src/cloudzone/replicate.js';
import { backgroundLog, type Logger } from '../../src/log.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import type { ReplicationSource } from '../../src/server/replication.js';
import { CloudDNSApi } from './api.js';
import { googleCredentials } from './auth.js';
import { CLOUDDNS_OPTIONS, type CloudDNSConfig, parseCloudDNS } from './setup.js';
import { updateZones } from './update.js';

/**
 * The start of one occurrence in the main thread: credentials, zone check, first listing; then,
 * with query threads, the zones offered to them and sent again after every refresh.
 */
async function start(
  cfg: CloudDNSConfig,
  log: Logger,
  source: ReplicationSource | null,
  key: string,
): Promise<Refresher> {
  const fail = (what: string, e: unknown): ConfigError =>
    new ConfigError(`${what}: ${(e as Error).message}`, cfg.file, cfg.line, 'clouddns');
  // CoreDNS returns the client's error as it is (no plugin name, no position).
  const api = new CloudDNSApi(cfg.endpoint, await googleCredentials(cfg.credentialsFile));
  try {
    for (const hz of cfg.zones.all()) {
      const i = hz.id.indexOf(':');
      await api.zoneExists(hz.id.slice(0, i), hz.id.slice(i + 1));
    }
  } catch (e) {
    api.close();
    throw fail('failed to create plugin', e);
  }
  try {
    await updateZones(api, cfg);
  } catch (e) {
    api.close();
    throw fail('failed to initialize plugin', e);
  }
  const offer: ZonesOffer | null = source === null ? null : offerZones(source, key, cfg.zones);
  const loop = startRefresh(
    // Sent also after a failed refresh: the hosted zones listed before the failure changed.
    (signal) => updateZones(api, cfg, signal).finally(() => offer?.publish()),
    cfg.refreshMs,
    (e) => log.error(`Failed to update zones ${cfg.zones.namesText()}: ${e.message}`),
  );
  return {
    stop() {
      loop.stop();
      offer?.withdraw();
      api.close();
    },
  };
}

export const clouddns: PluginDef = {
  name: 'clouddns',
  repeat: 'all',
  options: CLOUDDNS_OPTIONS,
  setup(d, ctx) {
    const cfgs: CloudDNSConfig[] = [];
    while (d.next()) cfgs.push(parseCloudDNS(d));
    const replication = ctx.processState.replication;
    const block = [ctx.block.keys?.map((k) => k.text) ?? [], ctx.block.port];
    const keyOf = (cfg: CloudDNSConfig, i: number): string =>
      zonesKey('clouddns', block, i, [zoneIds(cfg.zones), cfg.credentialsFile, cfg.endpoint, cfg.refreshMs]);
    const refreshers: Refresher[] = [];
    // One handler per occurrence, chained in Corefile order (CoreDNS adds one plugin per occurrence).
    const factory = (next: Handler | null): Handler => {
      let h = next;
      for (let i = cfgs.length - 1; i >= 0; i--) {
        h = new HostedZonesHandler('clouddns', cfgs[i]!.zones, cfgs[i]!.fallthrough, h, ctx.selfLookup);
      }
      return h!;
    };
    ctx.onShutdown(() => {
      for (const r of refreshers) r.stop();
      refreshers.length = 0;
    });
    if (replication?.role === 'replica') {
      // A query thread never reads credentials or calls Cloud DNS: the main thread listed the
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
  },
};
