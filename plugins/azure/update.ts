/**
 * One refresh of azure's zones (CoreDNS 1.15.0's `updateZones`): every hosted zone in turn, listed
 * whole into a new zone that replaces the old one only when it has an SOA; every failure collected
 * into one error, the zones that failed keeping their data.
 */
import { FetchedZone } from '../../src/cloudzone/fetched.js';
import type { AzureApi } from './api.js';
import { insertRecordSet } from './records.js';
import type { AzureConfig } from './setup.js';

export async function updateZones(api: AzureApi, cfg: AzureConfig, signal?: AbortSignal): Promise<void> {
  const errs: string[] = [];
  for (const [name, hosted] of cfg.zones.byName) {
    for (const hz of hosted) {
      if (signal?.aborted) return;
      const h = cfg.hosted.get(hz.id)!;
      try {
        const z = new FetchedZone(name);
        for (const p of await api.list(h.resourceGroup, h.zone, h.private, signal)) insertRecordSet(p, h.private, z);
        if (z.soa === null) throw new Error('zone has no SOA record');
        z.seal();
        hz.data = z;
      } catch (e) {
        errs.push(`failed to update ${h.resourceGroup}:${h.zone} from azure: ${(e as Error).message}`);
      }
    }
  }
  if (errs.length !== 0) throw new Error(`errors updating zones: [${errs.join(' ')}]`);
}
