/**
 * The `route53` directive (README.md): zones served from Amazon Route 53 hosted zones. At start each
 * ZONE:HOSTED_ZONE_ID is checked and every hosted zone listed (a failure fails the start, as in
 * CoreDNS 1.15.0); then the zones are listed again every `refresh`, a failed refresh logged and the
 * last data kept. Answers are the file plugin's, from the in-memory zones (src/cloudzone/). With
 * query threads only the main thread does this, and sends the records to the threads
 * (src/cloudzone/replicate.ts): Route 53 sees one listing per refresh, as with CoreDNS.
 */
import { ConfigError } from '../../src/corefile/types.js';
import { HostedZonesHandler } from '../../src/cloudzone/hosted.js';
import { type Refresher, startRefresh } from '../../src/cloudzone/refresh.js';
import { followZones, offerZones, type ZonesOffer, zoneIds, zonesKey } from '../../src/cloudzone/replicate.js';
import { backgroundLog, type Logger } from '../../src/log.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import type { ReplicationSource } from '../../src/server/replication.js';
import { Route53Api, route53Endpoint } from './api.js';
import { resolveAwsConfig } from '../../src/aws/config.js';
import { parseRoute53, ROUTE53_OPTIONS, type Route53Config } from './setup.js';
import { updateZones } from './update.js';

/**
 * The start of one occurrence in the main thread: client, zone check, first listing (each failure
 * worded as CoreDNS's setup error); then, with query threads, the zones offered to them and sent
 * again after every refresh.
 */
async function start(
  cfg: Route53Config,
  log: Logger,
  source: ReplicationSource | null,
  key: string,
): Promise<Refresher> {
  const fail = (what: string, e: unknown): ConfigError =>
    new ConfigError(`${what}: ${(e as Error).message}`, cfg.file, cfg.line, 'route53');
  let api: Route53Api;
  try {
    const aws = await resolveAwsConfig(cfg.credentials, process.env, {
      onStale: (e) =>
        log.warning(`Failed to refresh AWS credentials, using the current ones until they expire: ${e.message}`),
    });
    api = new Route53Api(aws, route53Endpoint(cfg.endpoint, aws.region, process.env));
  } catch (e) {
    throw fail('failed to create route53 client', e);
  }
  try {
    for (const [name, hosted] of cfg.zones.byName) {
      for (const hz of hosted) await api.listHostedZonesByName(cfg.asWritten.get(`${name} ${hz.id}`) ?? name, hz.id);
    }
  } catch (e) {
    api.close();
    throw fail('failed to create route53 plugin', e);
  }
  try {
    await updateZones(api, cfg, log);
  } catch (e) {
    api.close();
    throw fail('failed to initialize route53 plugin', e);
  }
  const offer: ZonesOffer | null = source === null ? null : offerZones(source, key, cfg.zones);
  const loop = startRefresh(
    // Sent also after a failed refresh: the hosted zones listed before the failure changed.
    (signal) => updateZones(api, cfg, log, signal).finally(() => offer?.publish()),
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

export const route53: PluginDef = {
  name: 'route53',
  repeat: 'all',
  options: ROUTE53_OPTIONS,
  setup(d, ctx) {
    const cfgs: Route53Config[] = [];
    while (d.next()) cfgs.push(parseRoute53(d, ctx.log));
    const replication = ctx.processState.replication;
    const block = [ctx.block.keys?.map((k) => k.text) ?? [], ctx.block.port];
    const keyOf = (cfg: Route53Config, i: number): string =>
      zonesKey('route53', block, i, [zoneIds(cfg.zones), cfg.credentials, cfg.endpoint, cfg.refreshMs]);
    const refreshers: Refresher[] = [];
    // One handler per occurrence, chained in Corefile order (CoreDNS adds one plugin per occurrence).
    const factory = (next: Handler | null): Handler => {
      let h = next;
      for (let i = cfgs.length - 1; i >= 0; i--) {
        h = new HostedZonesHandler('route53', cfgs[i]!.zones, cfgs[i]!.fallthrough, h, ctx.selfLookup);
      }
      return h!;
    };
    ctx.onShutdown(() => {
      for (const r of refreshers) r.stop();
      refreshers.length = 0;
    });
    if (replication?.role === 'replica') {
      // A query thread never resolves credentials or calls Route 53: the main thread listed the
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
