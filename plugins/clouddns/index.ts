/**
 * The `clouddns` directive (README.md): zones served from Google Cloud DNS managed zones. At start
 * each ZONE:PROJECT_ID:HOSTED_ZONE_NAME is checked and every zone listed (a failure fails the start,
 * as in CoreDNS 1.15.0); then listed again every `refresh`, a failed refresh logged and the last
 * data kept. Answers are the file plugin's, from the in-memory zones (src/cloudzone/). With query
 * threads only the main thread does this, and sends the records to the threads
 * (src/cloudzone/replicate.ts): Cloud DNS sees one listing per refresh, as with CoreDNS.
 */
import { ConfigError } from '../../src/corefile/types.js';
import type { Refresher } from '../../src/cloudzone/refresh.js';
import { serveListed, setupCloudZones } from '../../src/cloudzone/setup.js';
import type { Logger } from '../../src/log.js';
import type { PluginDef } from '../../src/plugin.js';
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
  return serveListed(
    cfg,
    (signal) => updateZones(api, cfg, signal),
    log,
    source,
    key,
    () => api.close(),
  );
}

export const clouddns: PluginDef = {
  name: 'clouddns',
  repeat: 'all',
  options: CLOUDDNS_OPTIONS,
  setup(d, ctx) {
    const cfgs: CloudDNSConfig[] = [];
    while (d.next()) cfgs.push(parseCloudDNS(d));
    return setupCloudZones('clouddns', ctx, cfgs, (cfg) => [cfg.credentialsFile, cfg.endpoint, cfg.refreshMs], start);
  },
};
