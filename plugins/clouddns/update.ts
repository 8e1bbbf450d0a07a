/**
 * One refresh of clouddns's zones (CoreDNS 1.15.0's `updateZones` and `updateZoneFromRRS`): every
 * zone name in parallel, its hosted zones in turn, each listed whole into a new zone. CNAME and PTR
 * values are made absolute. A record that cannot be read ends the reading of that listing without
 * a word (CoreDNS drops updateZoneFromRRS's error), the records before it served.
 */
import { recordFromText } from '../../src/cloudzone/records.js';
import { fqdn } from '../../src/dns/name.js';
import { FetchedZone } from '../../src/cloudzone/fetched.js';
import type { CloudDNSApi, GoogleRecordSet } from './api.js';
import type { CloudDNSConfig } from './setup.js';

export function zoneFromRecordSets(origin: string, sets: readonly GoogleRecordSet[]): FetchedZone {
  const z = new FetchedZone(origin);
  outer: for (const rr of sets) {
    for (let value of rr.rrdatas ?? []) {
      if (rr.type === 'CNAME' || rr.type === 'PTR') value = fqdn(value);
      try {
        const rec = recordFromText(`${fqdn(rr.name)} ${rr.ttl} IN ${rr.type} ${value}`);
        if (rec !== null) z.insert(rec);
      } catch {
        break outer;
      }
    }
  }
  z.seal();
  return z;
}

export async function updateZones(api: CloudDNSApi, cfg: CloudDNSConfig, signal?: AbortSignal): Promise<void> {
  const errs = await Promise.all(
    [...cfg.zones.byName].map(async ([name, hosted]) => {
      for (const hz of hosted) {
        const [project, zone] = [hz.id.slice(0, hz.id.indexOf(':')), hz.id.slice(hz.id.indexOf(':') + 1)];
        try {
          hz.data = zoneFromRecordSets(name, await api.listRRSets(project, zone, signal));
        } catch (e) {
          const printed = cfg.printed.get(`${name} ${hz.id}`) ?? name;
          return `failed to list resource records for ${printed}:${project}:${zone} from gcp: ${(e as Error).message}`;
        }
      }
      return null;
    }),
  );
  const failed = errs.filter((e): e is string => e !== null);
  if (failed.length !== 0) throw new Error(`errors updating zones: [${failed.join(' ')}]`);
}
