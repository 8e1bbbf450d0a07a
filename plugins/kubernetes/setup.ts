/**
 * Corefile parsing for `kubernetes` (docs/records.md §8.1), after CoreDNS
 * plugin/kubernetes/setup.go `ParseStanza`. Pure: no file or network access here.
 */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import {
  directive,
  duration,
  file,
  float,
  int,
  oneOf,
  option,
  parseOccurrences,
  str,
  zoneArg,
  type ParsedOccurrence,
} from '../../src/corefile/options.js';
import { normalizeZoneArgs } from '../../src/dns/name.js';
import { parseFallthrough } from '../../src/fallthrough.js';
import type { Logger } from '../../src/log.js';
import { normalizeLabelSelector } from '../../src/util/labelselector.js';
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
  /** `multicluster` zones (docs/records.md §8.4), each one of `zones`; empty when off. */
  multiclusterZones: string[];
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
    multiclusterZones: [],
  };
}

function isReverseZone(z: string): boolean {
  return z === 'in-addr.arpa.' || z === 'ip6.arpa.' || z.endsWith('.in-addr.arpa.') || z.endsWith('.ip6.arpa.');
}

function endpointCheck(v: string): string | null {
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return `invalid endpoint URL '${v}'`;
  }
  return url.protocol === 'http:' || url.protocol === 'https:'
    ? null
    : `invalid endpoint URL '${v}': scheme must be http or https`;
}

/** apiserver_qps / _burst / _max_inflight: CoreDNS's texts for a bad and a negative value. */
function apiLimit(name: string, kind: typeof int | typeof float) {
  return option(name, {
    args: [
      kind({
        min: 0,
        invalid: (v, goError) => `invalid ${name} "${v}": ${goError}`,
        range: () => `${name} must be >= 0`,
      }),
    ],
  });
}

export const KUBERNETES_OPTIONS = directive('kubernetes', {
  args: { rest: zoneArg() },
  options: [
    option('endpoint', { args: [str('URL', endpointCheck)], rest: str(), min: 1 }),
    option('tls', { args: [file('CERT'), file('KEY'), file('CACERT')] }),
    option('kubeconfig', { args: [file('KUBECONFIG'), str('CONTEXT')], min: 1 }),
    apiLimit('apiserver_qps', float),
    apiLimit('apiserver_burst', int),
    apiLimit('apiserver_max_inflight', int),
    option('namespaces', { rest: str('NAMESPACE'), min: 1, repeat: 'all' }),
    option('namespace_labels', { rest: str('EXPRESSION'), min: 1 }),
    option('labels', { rest: str('EXPRESSION'), min: 1 }),
    option('pods', {
      args: [
        oneOf(
          ['disabled', 'insecure', 'verified'],
          'POD-MODE',
          (v) => `wrong value for pods: ${v},  must be one of: disabled, verified, insecure`,
        ),
      ],
    }),
    option('endpoint_pod_names'),
    option('ttl', {
      args: [int({ meta: 'TTL', min: 0, max: 3600, range: (v) => `ttl must be in range [0, 3600]: ${v}` })],
      rest: str(),
      min: 1,
    }),
    option('noendpoints'),
    option('fallthrough', { rest: zoneArg() }),
    option('ignore', {
      args: [oneOf(['empty_service'], 'empty_service', (v) => `unable to parse ignore value: '${v}'`)],
      rest: str(),
      min: 0,
    }),
    option('startup_timeout', {
      args: [duration({ invalid: (v, goError) => `failed to parse startup_timeout: ${v}, ${goError}` })],
      rest: str(),
      min: 1,
    }),
    option('zonal'),
    option('multicluster', { rest: str('ZONES'), min: 0 }),
  ],
  unknown: (name) => `unknown property '${name}'`,
});

/** A label selector option, normalised to the API's query form (null when absent). */
function selector(occ: ParsedOccurrence, name: 'labels' | 'namespace_labels'): string | null {
  const o = occ.last(name);
  if (!o) return null;
  const text = o.raw.join(' ');
  try {
    return normalizeLabelSelector(text);
  } catch (e) {
    throw occ.error(
      o,
      `unable to parse ${name === 'labels' ? 'label' : 'namespace_label'} selector value: '${text}': ${(e as Error).message}`,
    );
  }
}

function stanza(occ: ParsedOccurrence, blockZones: readonly string[], log: Logger): KubernetesConfig {
  const zones = occ.directive.values.length ? normalizeZoneArgs(occ.directive.values as string[]) : [...blockZones];
  const cfg = defaultConfig(zones);
  const endpoint = occ.last('endpoint');
  if (endpoint) {
    if (endpoint.raw.length > 1)
      log.warning(
        `Multiple endpoints have been deprecated, only the first specified endpoint '${endpoint.raw[0]}' is used`,
      );
    cfg.endpoint = endpoint.raw[0]!.replace(/\/+$/, '');
  }
  const tls = occ.last('tls')?.raw;
  if (tls) cfg.tls = { cert: tls[0]!, key: tls[1]!, ca: tls[2]! };
  const kubeconfig = occ.last('kubeconfig')?.raw;
  if (kubeconfig) cfg.kubeconfig = { path: kubeconfig[0]!, context: kubeconfig[1] ?? null };
  cfg.apiserverQps = occ.num('apiserver_qps', 0, 0);
  cfg.apiserverBurst = occ.num('apiserver_burst', 0, 0);
  cfg.apiserverMaxInflight = occ.num('apiserver_max_inflight', 0, 0);
  const namespaces = occ.all('namespaces').flatMap((o) => o.raw);
  if (namespaces.length) cfg.namespaces = [...new Set(namespaces)];
  cfg.labels = selector(occ, 'labels');
  cfg.namespaceLabels = selector(occ, 'namespace_labels');
  cfg.podMode = occ.str('pods', 0, cfg.podMode) as PodMode;
  cfg.endpointPodNames = occ.has('endpoint_pod_names');
  cfg.ttl = occ.num('ttl', 0, cfg.ttl);
  cfg.noEndpoints = occ.has('noendpoints');
  const fall = occ.last('fallthrough');
  if (fall) cfg.fallthrough = parseFallthrough(fall.values as string[]);
  const ignore = occ.last('ignore');
  if (ignore && ignore.raw.length === 0)
    log.warning("'ignore' without an argument does nothing (expected 'ignore empty_service')");
  cfg.ignoreEmptyService = ignore !== undefined && ignore.raw.length > 0;
  cfg.startupTimeoutMs = occ.num('startup_timeout', 0, cfg.startupTimeoutMs);
  cfg.zonal = occ.has('zonal');
  // The options that depend on each other.
  if (cfg.namespaces && cfg.namespaceLabels)
    throw occ.error(occ.last('namespace_labels')!, 'namespaces and namespace_labels cannot both be set');
  const multicluster = occ.last('multicluster');
  // CoreDNS: zones from the arguments only (none: the option does nothing), each one of the
  // plugin's own zones as written.
  if (multicluster) cfg.multiclusterZones = normalizeZoneArgs(multicluster.raw as string[]);
  for (const z of cfg.multiclusterZones)
    if (!cfg.zones.includes(z))
      throw occ.error(
        multicluster!,
        `is not authoritative for the multicluster zone ${z} (authoritative zones: [${cfg.zones.join(' ')}])`,
      );
  if (cfg.zonal && cfg.noEndpoints)
    throw occ.error(occ.last('noendpoints')!, 'zonal and noendpoints cannot both be set');
  const primary = cfg.zones.find((z) => !isReverseZone(z));
  if (primary === undefined) throw occ.error(occ.directive, 'non-reverse zone name must be used');
  cfg.primaryZone = primary;
  return cfg;
}

/** Parse the directive (the dispenser holds every occurrence; the registry enforces once per block). */
export function parseKubernetes(d: Dispenser, blockZones: readonly string[], log: Logger): KubernetesConfig {
  const cfg = parseOccurrences(d, KUBERNETES_OPTIONS, (occ) => stanza(occ, blockZones, log)).at(-1);
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
    multicluster: cfg.multiclusterZones.length > 0,
  };
}
