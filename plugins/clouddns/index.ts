/**
 * The `clouddns` directive (README.md): zones served from Google Cloud DNS managed zones. At start
 * each ZONE:PROJECT_ID:HOSTED_ZONE_NAME is checked and every zone listed (a failure fails the start,
 * as in CoreDNS 1.15.0); then listed again every `refresh`, a failed refresh logged and the last
 * data kept. Answers are the file plugin's, from the in-memory zones (src/cloudzone/).
 */
import { ConfigError } from '../../src/corefile/types.js';
import { HostedZonesHandler } from '../../src/cloudzone/hosted.js';
import { type Refresher, startRefresh } from '../../src/cloudzone/refresh.js';
import { backgroundLog, type Logger } from '../../src/log.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import { CloudDNSApi } from './api.js';
import { googleCredentials } from './auth.js';
import { CLOUDDNS_OPTIONS, type CloudDNSConfig, parseCloudDNS } from './setup.js';
import { updateZones } from './update.js';

async function start(cfg: CloudDNSConfig, log: Logger): Promise<Refresher> {
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
  const loop = startRefresh(
    (signal) => updateZones(api, cfg, signal),
    cfg.refreshMs,
    (e) => log.error(`Failed to update zones ${cfg.zones.namesText()}: ${e.message}`),
  );
  return {
    stop() {
      loop.stop();
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
    // Every query thread lists the zones for its own copy (docs/multicore.md); the main thread's
    // lines are the ones logged.
    const log = backgroundLog(ctx.log, ctx.process.queryThread);
    const refreshers: Refresher[] = [];
    ctx.onStartup(async () => {
      for (const cfg of cfgs) refreshers.push(await start(cfg, log));
    });
    ctx.onShutdown(() => {
      for (const r of refreshers) r.stop();
      refreshers.length = 0;
    });
    return (next: Handler | null): Handler => {
      let h = next;
      for (let i = cfgs.length - 1; i >= 0; i--) {
        h = new HostedZonesHandler('clouddns', cfgs[i]!.zones, cfgs[i]!.fallthrough, h, ctx.selfLookup);
      }
      return h!;
    };
  },
};
