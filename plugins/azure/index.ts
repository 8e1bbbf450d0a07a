/**
 * The `azure` directive (README.md): zones served from Azure DNS public and private zones. Unlike
 * route53 and clouddns, CoreDNS 1.15.0's azure never fails the start on Azure: the first listing runs
 * in the background as soon as the server starts (queries get SERVFAIL until it is in), then every
 * `refresh`; a failure is logged and the last data kept. Answers are the file plugin's, from the
 * in-memory zones (src/cloudzone/). All `azure` lines of a block make one plugin.
 */
import { HostedZonesHandler } from '../../src/cloudzone/hosted.js';
import { type Refresher, startRefresh } from '../../src/cloudzone/refresh.js';
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
    // Every query thread lists the zones for its own copy (docs/multicore.md); the main thread's
    // lines are the ones logged.
    const log = backgroundLog(ctx.log, ctx.process.queryThread);
    let api: AzureApi | null = null;
    let loop: Refresher | null = null;
    const abort = new AbortController();
    const failed = (e: Error): void => log.error(`Failed to update zones ${cfg.zones.namesText()}: ${e.message}`);
    ctx.onStartup(() => {
      const a = new AzureApi(cfg);
      api = a;
      // The first update right away, not awaited; then the timer.
      void updateZones(a, cfg, abort.signal)
        .catch((e: unknown) => {
          if (!abort.signal.aborted) failed(e as Error);
        })
        .finally(() => {
          if (!abort.signal.aborted)
            loop = startRefresh((signal) => updateZones(a, cfg, signal), cfg.refreshMs, failed);
        });
    });
    ctx.onShutdown(() => {
      abort.abort();
      (loop as Refresher | null)?.stop();
      (api as AzureApi | null)?.close();
    });
    return (next: Handler | null): Handler =>
      new HostedZonesHandler('azure', cfg.zones, cfg.fallthrough, next, ctx.selfLookup);
  },
};
