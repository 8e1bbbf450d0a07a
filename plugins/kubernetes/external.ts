/**
 * The kubernetes plugin's side of k8s_external (src/kubernetes/external.ts): read-only views of the
 * plugin's watch index. Nothing here runs on the kubernetes answer path; a k8s_external query reads
 * the Store directly (no answer cache, the external zone is small and rarely asked).
 */
import type {
  ExternalEndpoint,
  ExternalPort,
  ExternalServiceView,
  KubernetesExternal,
} from '../../src/kubernetes/external.js';
import type { Message } from '../../src/dns/message.js';
import type { Query } from '../../src/query.js';
import { addressAt, addressCount } from './addresses.js';
import { serviceKey, type IndexReader } from './store.js';
import type { ServiceRec, SliceRec } from './types.js';

const NO_PORTS: readonly ExternalPort[] = Object.freeze([{ name: '', port: -1, protocol: '' }]);

export interface ExternalSettings {
  readonly ttl: number;
  readonly namespaces: ReadonlySet<string> | null;
  readonly endpointPodNames: boolean;
  /** The server's own non-loopback IPs (known once the chain is built). */
  localIPs(): readonly string[];
  upstream(sub: Query): Promise<Message | null>;
}

function view(s: ServiceRec): ExternalServiceView {
  return {
    name: s.name,
    namespace: s.namespace,
    headless: s.headless,
    ports: s.ports.length ? s.ports : NO_PORTS,
    externalIPs: s.externalIPs,
  };
}

/** The endpoint label of entry `i` of a slice (as the kubernetes plugin's Resolver names it). */
function endpointName(s: SliceRec, i: number, podNames: boolean): string {
  const hostname = s.hostnames?.[i];
  if (hostname) return hostname;
  const podName = podNames ? s.podNames?.[i] : undefined;
  if (podName && podName.length < 64) return podName;
  const addr = addressAt(s.addresses, i);
  if (addr.includes('.')) return addr.replaceAll('.', '-');
  const h = addr.replaceAll(':', '-');
  return h.endsWith('-') ? `${h}0` : h;
}

export function kubernetesExternal(store: IndexReader, cfg: ExternalSettings): KubernetesExternal {
  const exposed = (ns: string): boolean => (!cfg.namespaces || cfg.namespaces.has(ns)) && store.hasNamespace(ns);
  const slicesOf = (name: string, ns: string): SliceRec[] => store.slicesOfService(serviceKey(name, ns));
  const endpoints = (name: string, ns: string): ExternalEndpoint[] => {
    const out: ExternalEndpoint[] = [];
    for (const s of slicesOf(name, ns)) {
      const ports = s.ports.length ? s.ports : NO_PORTS;
      for (let i = 0; i < addressCount(s.addresses); i++)
        out.push({ address: addressAt(s.addresses, i), hostname: endpointName(s, i, cfg.endpointPodNames), ports });
    }
    return out;
  };
  return {
    ttl: cfg.ttl,
    namespaceExposed: exposed,
    service(name, ns) {
      const s = store.serviceByKey(serviceKey(name, ns));
      return s ? view(s) : undefined;
    },
    endpoints,
    servicesByExternalIP(ip) {
      const out: ExternalServiceView[] = [];
      for (const s of store.servicesWithExternalIP(ip)) {
        if (cfg.namespaces && !exposed(s.namespace)) continue;
        out.push(view(s));
      }
      return out;
    },
    dnsAddresses(headless) {
      const out: string[] = [];
      let found = false;
      const local = cfg.localIPs();
      for (const ip of local) {
        for (const slice of store.slicesWithAddress(ip)) {
          found = true;
          const svc = store.serviceByKey(serviceKey(slice.service, slice.namespace));
          if (!svc) continue;
          if (headless && svc.headless) {
            for (let i = 0; i < addressCount(slice.addresses); i++) out.push(addressAt(slice.addresses, i));
          } else {
            out.push(...svc.externalIPs);
          }
        }
      }
      return found ? out : [...local];
    },
    serial: () => store.externalSerial,
    upstream: (q, name, qtype) => cfg.upstream(q.derive(name, qtype)),
  };
}
