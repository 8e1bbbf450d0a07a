/**
 * Corefile parsing for `kubernetes` (docs/records.md §8.1), after CoreDNS
 * plugin/kubernetes/setup.go `ParseStanza`. Pure: no file or network access here.
 */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { normalizeZoneArgs } from '../../src/dns/name.js';
import type { Logger } from '../../src/log.js';
import { normalizeSelector, parseGoDuration } from './selector.js';
import type { WatchSettings } from './kubeindex.js';
import type { PodMode } from './types.js';

export interface KubernetesConfig {
  zones: string[];
  primaryZone: string;
  /** First `endpoint` URL, or null. */
  endpoint: string | null;
  tls: { cert: string; key: string; ca: string } | null;
  kubeconfig: { path: string; context: string | null } | null;
  namespaces: string[] | null;
  labels: string | null;
  namespaceLabels: string | null;
  podMode: PodMode;
  endpointPodNames: boolean;
  ttl: number;
  noEndpoints: boolean;
  fallthrough: string[] | null;
  ignoreEmptyService: boolean;
  startupTimeoutMs: number;
  apiserverQps: number;
  apiserverBurst: number;
  apiserverMaxInflight: number;
  zonal: boolean;
}

export function defaultConfig(zones: readonly string[]): KubernetesConfig {
  return {
    zones: [...zones],
    primaryZone: '',
    endpoint: null,
    tls: null,
    kubeconfig: null,
    namespaces: null,
    labels: null,
    namespaceLabels: null,
    podMode: 'disabled',
    endpointPodNames: false,
    ttl: 5,
    noEndpoints: false,
    fallthrough: null,
    ignoreEmptyService: false,
    startupTimeoutMs: 5000,
    apiserverQps: 0,
    apiserverBurst: 0,
    apiserverMaxInflight: 0,
    zonal: false,
  };
}

function isReverseZone(z: string): boolean {
  return z === 'in-addr.arpa.' || z === 'ip6.arpa.' || z.endsWith('.in-addr.arpa.') || z.endsWith('.ip6.arpa.');
}

/** Parse the directive (the dispenser holds every occurrence; the registry enforces once per block). */
export function parseKubernetes(d: Dispenser, blockZones: readonly string[], log: Logger): KubernetesConfig {
  let cfg: KubernetesConfig | null = null;
  while (d.next()) {
    const args = d.remainingArgs();
    const zones = args.length ? normalizeZoneArgs(args) : [...blockZones];
    cfg = defaultConfig(zones);
    while (d.nextBlock()) {
      const opt = d.val();
      switch (opt) {
        case 'endpoint_pod_names':
          if (d.remainingArgs().length) throw d.argErr();
          cfg.endpointPodNames = true;
          break;
        case 'pods': {
          const a = d.remainingArgs();
          if (a.length !== 1) throw d.argErr();
          if (a[0] !== 'disabled' && a[0] !== 'insecure' && a[0] !== 'verified') {
            throw d.err(`wrong value for pods: ${a[0]},  must be one of: disabled, verified, insecure`);
          }
          cfg.podMode = a[0];
          break;
        }
        case 'namespaces': {
          const a = d.remainingArgs();
          if (!a.length) throw d.argErr();
          cfg.namespaces = [...new Set([...(cfg.namespaces ?? []), ...a])];
          break;
        }
        case 'endpoint': {
          const a = d.remainingArgs();
          if (!a.length) throw d.argErr();
          if (a.length > 1) log.warning(`Multiple endpoints have been deprecated, only the first specified endpoint '${a[0]}' is used`);
          let url: URL;
          try {
            url = new URL(a[0]!);
          } catch {
            throw d.err(`invalid endpoint URL '${a[0]}'`);
          }
          if (url.protocol !== 'http:' && url.protocol !== 'https:') throw d.err(`invalid endpoint URL '${a[0]}': scheme must be http or https`);
          cfg.endpoint = a[0]!.replace(/\/+$/, '');
          break;
        }
        case 'tls': {
          const a = d.remainingArgs();
          if (a.length !== 3) throw d.argErr();
          cfg.tls = { cert: a[0]!, key: a[1]!, ca: a[2]! };
          break;
        }
        case 'kubeconfig': {
          const a = d.remainingArgs();
          if (a.length !== 1 && a.length !== 2) throw d.argErr();
          cfg.kubeconfig = { path: a[0]!, context: a[1] ?? null };
          break;
        }
        case 'labels':
        case 'namespace_labels': {
          const a = d.remainingArgs();
          if (!a.length) throw d.argErr();
          const text = a.join(' ');
          let sel: string;
          try {
            sel = normalizeSelector(text);
          } catch (e) {
            const what = opt === 'labels' ? 'label' : 'namespace_label';
            throw d.err(`unable to parse ${what} selector value: '${text}': ${(e as Error).message}`);
          }
          if (opt === 'labels') cfg.labels = sel;
          else cfg.namespaceLabels = sel;
          break;
        }
        case 'fallthrough': {
          const a = d.remainingArgs();
          cfg.fallthrough = a.length ? normalizeZoneArgs(a) : ['.'];
          break;
        }
        case 'ttl': {
          const a = d.remainingArgs();
          if (!a.length) throw d.argErr();
          if (!/^[-+]?\d+$/.test(a[0]!)) throw d.err(`strconv.Atoi: parsing ${JSON.stringify(a[0])}: invalid syntax`);
          const t = Number(a[0]);
          if (t < 0 || t > 3600) throw d.err(`ttl must be in range [0, 3600]: ${t}`);
          cfg.ttl = t;
          break;
        }
        case 'noendpoints':
          if (d.remainingArgs().length) throw d.argErr();
          cfg.noEndpoints = true;
          break;
        case 'ignore': {
          const a = d.remainingArgs();
          if (!a.length) {
            log.warning("'ignore' without an argument does nothing (expected 'ignore empty_service')");
            break;
          }
          if (a[0] !== 'empty_service') throw d.err(`unable to parse ignore value: '${a[0]}'`);
          cfg.ignoreEmptyService = true;
          break;
        }
        case 'startup_timeout': {
          const a = d.remainingArgs();
          if (a.length !== 1) throw d.argErr();
          const ms = parseGoDuration(a[0]!);
          if (ms === undefined || ms < 0) throw d.err(`time: invalid duration ${JSON.stringify(a[0])}`);
          cfg.startupTimeoutMs = ms;
          break;
        }
        case 'apiserver_qps':
        case 'apiserver_burst':
        case 'apiserver_max_inflight': {
          const a = d.remainingArgs();
          if (a.length !== 1) throw d.argErr();
          const isFloat = opt === 'apiserver_qps';
          const ok = isFloat ? /^\d+(\.\d+)?$/.test(a[0]!) : /^\d+$/.test(a[0]!);
          if (!ok) throw d.err(`invalid value for ${opt}: '${a[0]}'`);
          const n = Number(a[0]);
          if (opt === 'apiserver_qps') cfg.apiserverQps = n;
          else if (opt === 'apiserver_burst') cfg.apiserverBurst = n;
          else cfg.apiserverMaxInflight = n;
          break;
        }
        case 'zonal':
          if (d.remainingArgs().length) throw d.argErr();
          cfg.zonal = true;
          break;
        case 'multicluster':
          throw d.err(`property '${opt}' is not supported by this server`);
        default:
          throw d.err(`unknown property '${opt}'`);
      }
    }
    if (cfg.namespaces && cfg.namespaceLabels) throw d.err('namespaces and namespace_labels cannot both be set');
    if (cfg.zonal && cfg.noEndpoints) throw d.err('zonal and noendpoints cannot both be set');
    const primary = cfg.zones.find((z) => !isReverseZone(z));
    if (primary === undefined) throw d.err('non-reverse zone name must be used');
    cfg.primaryZone = primary;
  }
  if (!cfg) throw d.argErr();
  return cfg;
}

/**
 * The settings that change what is watched and what of it is kept: the settings of the shared
 * watch index, and (as JSON) its key — a reload that changes none of them keeps the index.
 */
export function watchSettings(cfg: KubernetesConfig): WatchSettings {
  return {
    endpoint: cfg.endpoint,
    tls: cfg.tls,
    kubeconfig: cfg.kubeconfig,
    labels: cfg.labels,
    namespaceLabels: cfg.namespaceLabels,
    endpoints: !cfg.noEndpoints,
    pods: cfg.podMode === 'verified',
    qps: cfg.apiserverQps,
    burst: cfg.apiserverBurst,
    maxInflight: cfg.apiserverMaxInflight,
    zonal: cfg.zonal,
    podNames: cfg.endpointPodNames,
  };
}
