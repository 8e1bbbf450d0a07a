/**
 * The `azure` directive (README.md): zones served from Azure DNS public and private zones. Unlike
 * route53 and clouddns, CoreDNS 1.15.0's azure never fails the start on Azure: the first listing runs
 * in the background as soon as the server starts (queries get SERVFAIL until it is in), then every
 * `refresh`; a failure is logged and the last data kept. Answers are the file plugin's, from the
 * in-memory zones (src/cloudzone/). All `azure` lines of a block make one plugin. With query
 * threads only the main thread lists, and sends the records to the threads after each listing
 * (src/cloudzone/replicate.ts); a thread starts with the main thread's zones as they are then
 * (empty, SERVFAIL, until the first listing is in).
 */
import { HostedZonesHandler } from '../../src/cloudzone/hosted.js';
import { type Refresher, startRefresh } from '../../src/cloudzone/refresh.js';
import { followZones, offerZones, type ZonesOffer, zoneIds, zonesKey } from '../../src/cloudzone/replicate.js';
import { backgroundLog } from '../../src/log.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import { AzureApi } from './api.js';
import { AZURE_OPTIONS, parseAzure } from './setup.js';
import { updateZones } from './update.js';

export const azure: PluginDef = {
  name: 'azure',
  repeat: 'all',
  options: AZURE_OPTIONS,
  setup(d, ctx) {
    const cfg = parseAzure(d);
    const replication = ctx.processState.replication;
    const key = zonesKey('azure', [ctx.block.keys?.map((k) => k.text) ?? [], ctx.block.port], 0, [
      zoneIds(cfg.zones),
      [...cfg.hosted.values()],
      cfg.tenant,
      cfg.client,
      cfg.secret,
      cfg.subscription,
      cfg.environment,
      cfg.refreshMs,
    ]);
    const factory = (next: Handler | null): Handler =>
      new HostedZonesHandler('azure', cfg.zones, cfg.fallthrough, next, ctx.selfLookup);
    if (replication?.role === 'replica') {
      // A query thread never asks Azure for a token or lists: the main thread offered its zones
      // when it started (before this thread), and sends them after each of its listings.
      let unsubscribe: (() => void) | null = null;
      ctx.onShutdown(() => unsubscribe?.());
      return followZones(replication, key, cfg.zones).then((u) => {
        unsubscribe = u;
        return factory;
      });
    }
    // backgroundLog: a unit test may set up a query thread without replication.
    const log = backgroundLog(ctx.log, ctx.process.queryThread);
    let api: AzureApi | null = null;
    let loop: Refresher | null = null;
    let offer: ZonesOffer | null = null;
    const abort = new AbortController();
    const failed = (e: Error): void => log.error(`Failed to update zones ${cfg.zones.namesText()}: ${e.message}`);
    ctx.onStartup(() => {
      const a = new AzureApi(cfg);
      api = a;
      const o = replication?.role === 'source' ? offerZones(replication, key, cfg.zones) : null;
      offer = o;
      // Sent also after a failed listing: the hosted zones listed before the failure changed.
      const update = (signal: AbortSignal): Promise<void> => updateZones(a, cfg, signal).finally(() => o?.publish());
      // The first update right away, not awaited; then the timer.
      void update(abort.signal)
        .catch((e: unknown) => {
          if (!abort.signal.aborted) failed(e as Error);
        })
        .finally(() => {
          if (!abort.signal.aborted) loop = startRefresh(update, cfg.refreshMs, failed);
        });
    });
    ctx.onShutdown(() => {
      abort.abort();
      (loop as Refresher | null)?.stop();
      (offer as ZonesOffer | null)?.withdraw();
      (api as AzureApi | null)?.close();
    });
    return factory;
  },
};
