/**
 * One refresh of route53's zones (CoreDNS 1.15.0's `updateZones`): every zone name in parallel, its
 * hosted zones one after the other, each listed page by page into a new zone that replaces the old
 * one whole. A record set that cannot be read is logged and skipped; a failed listing leaves that
 * hosted zone (and the later ones of its name) with the data they had, and fails the update.
 */
import type { Logger } from '../../src/log.js';
import { FetchedZone } from '../../src/cloudzone/fetched.js';
import type { HostedZone } from '../../src/cloudzone/hosted.js';
import type { Route53Api, RecordSetPage } from './api.js';
import { insertRecordSet } from './records.js';
import type { Route53Config } from './setup.js';

async function fetchZone(api: Route53Api, hz: HostedZone, log: Logger, signal?: AbortSignal): Promise<FetchedZone> {
  const z = new FetchedZone(hz.name);
  let start: RecordSetPage['next'] = null;
  do {
    const page: RecordSetPage = await api.listResourceRecordSets(hz.id, start, signal);
    for (const set of page.sets) {
      try {
        insertRecordSet(set, z);
      } catch (e) {
        // Maybe an unsupported record type: logged, and the other sets are still served.
        log.warning(`Failed to process resource record set: ${(e as Error).message}`);
      }
    }
    start = page.next;
  } while (start !== null);
  z.seal();
  return z;
}

export async function updateZones(
  api: Route53Api,
  cfg: Route53Config,
  log: Logger,
  signal?: AbortSignal,
): Promise<void> {
  const errs = await Promise.all(
    [...cfg.zones.byName].map(async ([name, hosted]) => {
      for (const hz of hosted) {
        try {
          hz.data = await fetchZone(api, hz, log, signal);
        } catch (e) {
          const written = cfg.asWritten.get(`${name} ${hz.id}`) ?? name;
          return `failed to list resource records for ${written}:${hz.id} from route53: ${(e as Error).message}`;
        }
      }
      return null;
    }),
  );
  const failed = errs.filter((e): e is string => e !== null);
  if (failed.length !== 0) throw new Error(`errors updating zones: [${failed.join(' ')}]`);
}
