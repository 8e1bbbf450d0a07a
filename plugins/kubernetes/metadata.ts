/**
 * The kubernetes plugin's metadata (CoreDNS plugin/kubernetes/metadata.go), given to the `metadata`
 * plugin of the block (src/metadata.ts): the client pod's namespace and name (with `pods verified`),
 * and the parts of a question name inside the plugin's zones. Runs only when the block has the
 * metadata plugin; nothing here is on the kubernetes answer path.
 */
import { matchZone } from '../../src/dns/name.js';
import type { MetadataProvider } from '../../src/metadata.js';
import { baseOf, parse } from './resolve.js';
import type { IndexReader } from './store.js';
import type { PodMode } from './types.js';

export function kubernetesMetadata(
  store: IndexReader,
  zones: readonly string[],
  podMode: PodMode,
  zonal: boolean,
): MetadataProvider {
  return (q, meta) => {
    if (podMode === 'verified') {
      let ip = q.transport.remoteAddress;
      if (ip.startsWith('::ffff:') && ip.includes('.')) ip = ip.slice(7);
      const pod = store.podsWithIP(ip)[0];
      if (pod) {
        meta.set('kubernetes/client-namespace', pod.namespace);
        meta.set('kubernetes/client-pod-name', pod.name);
      }
    }
    const zone = matchZone(zones, q.lname);
    if (zone === undefined) return;
    const r = parse(baseOf(q.lname, zone), zonal);
    if (!r) {
      meta.set('kubernetes/parse-error', 'invalid query name');
      return;
    }
    meta.set('kubernetes/port-name', r.port);
    meta.set('kubernetes/protocol', r.protocol);
    meta.set('kubernetes/endpoint', r.endpoint);
    if (zonal) meta.set('kubernetes/zone', r.topoZone);
    meta.set('kubernetes/service', r.service);
    meta.set('kubernetes/namespace', r.namespace);
    meta.set('kubernetes/kind', r.podOrSvc);
  };
}
