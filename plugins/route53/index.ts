/**
 * The `route53` directive (README.md): zones served from Amazon Route 53 hosted zones. At start each
 * ZONE:HOSTED_ZONE_ID is checked and every hosted zone listed (a failure fails the start, as in
 * CoreDNS 1.15.0); then the zones are listed again every `refresh`, a failed refresh logged and the
 * last data kept. Answers are the file plugin's, from the in-memory zones (src/cloudzone/). With
 * query threads only the main thread does this, and sends the records to the threads
 * (src/cloudzone/replicate.ts): Route 53 sees one listing per refresh, as with CoreDNS.
 */
import { resolveAwsConfig } from '../../src/aws/config.js';
import { ConfigError } from '../../src/corefile/types.js';
import type { Refresher } from '../../src/cloudzone/refresh.js';
import { serveListed, setupCloudZones } from '../../src/cloudzone/setup.js';
import type { Logger } from '../../src/log.js';
import type { PluginDef } from '../../src/plugin.js';
import type { ReplicationSource } from '../../src/server/replication.js';
import { Route53Api, route53Endpoint } from './api.js';
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
  return serveListed(
    cfg,
    (signal) => updateZones(api, cfg, log, signal),
    log,
    source,
    key,
    () => api.close(),
  );
}

export const route53: PluginDef = {
  name: 'route53',
  repeat: 'all',
  options: ROUTE53_OPTIONS,
  setup(d, ctx) {
    const cfgs: Route53Config[] = [];
    while (d.next()) cfgs.push(parseRoute53(d, ctx.log));
    return setupCloudZones('route53', ctx, cfgs, (cfg) => [cfg.credentials, cfg.endpoint, cfg.refreshMs], start);
  },
};
