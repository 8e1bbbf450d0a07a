/**
 * Converters from API JSON (unknown) to slim records. Each returns the record, a string saying why
 * the object is malformed (logged once as a warning by the caller, object skipped), or null for an
 * object that is deliberately ignored (FQDN EndpointSlices, pods being deleted).
 */
import { isIP } from 'node:net';
import { canonicalIP } from '../../src/dns/name.js';
import { packAddresses } from './addresses.js';
import type { ImportRec, McSliceRec, NamespaceRec, PodRec, PortRec, ServiceRec, SliceRec } from './types.js';
import { isObj } from '../../src/util/json.js';

/**
 * An exact-size copy of an array built with push(): V8 gives such arrays room for 16 or more
 * elements, which for one-address endpoints at 150,000 endpoints was most of the index's memory.
 */
function exact<T>(a: T[]): T[] {
  return a.length === 1 ? [a[0]!] : a.slice();
}

const interned = new Map<string, string>();
/** One shared copy of a short, often repeated string (topology zones); bounded by distinct values seen. */
function intern(v: string): string {
  if (v === '') return '';
  const hit = interned.get(v);
  if (hit !== undefined) return hit;
  if (interned.size < 10_000) interned.set(v, v);
  return v;
}

type Obj = Record<string, unknown>;

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

interface Meta {
  name: string;
  namespace: string;
  resourceVersion: string;
  labels: Obj;
  annotations: Obj;
  deletionTimestamp: unknown;
}

function meta(obj: unknown, namespaced: boolean): Meta | string {
  if (!isObj(obj)) return 'object is not a JSON object';
  const m = obj['metadata'];
  if (!isObj(m)) return 'missing metadata';
  const name = str(m['name']);
  if (!name) return 'missing metadata.name';
  const namespace = str(m['namespace']) ?? '';
  if (namespaced && !namespace) return `${name}: missing metadata.namespace`;
  return {
    name,
    namespace,
    resourceVersion: str(m['resourceVersion']) ?? '',
    labels: isObj(m['labels']) ? m['labels'] : {},
    annotations: isObj(m['annotations']) ? m['annotations'] : {},
    deletionTimestamp: m['deletionTimestamp'],
  };
}

/** `namespace/name` of an object, as far as it can be read (for log lines and deletes). */
export function objectKey(obj: unknown): string | undefined {
  if (!isObj(obj) || !isObj(obj['metadata'])) return undefined;
  const m = obj['metadata'];
  const name = str(m['name']);
  if (!name) return undefined;
  const ns = str(m['namespace']);
  return ns ? `${ns}/${name}` : name;
}

export function resourceVersionOf(obj: unknown): string | undefined {
  if (!isObj(obj) || !isObj(obj['metadata'])) return undefined;
  return str(obj['metadata']['resourceVersion']);
}

function ports(v: unknown, where: string, allowNull: boolean): PortRec[] | string {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) return `${where}: ports is not a list`;
  const out: PortRec[] = [];
  for (const p of v) {
    if (!isObj(p)) return `${where}: malformed port`;
    const num = p['port'];
    let port: number;
    if (typeof num === 'number' && Number.isInteger(num) && num >= 0 && num <= 65535) port = num;
    else if ((num === undefined || num === null) && allowNull) port = -1;
    else return `${where}: invalid port number ${JSON.stringify(num)}`;
    out.push({ name: str(p['name']) ?? '', port, protocol: str(p['protocol']) ?? (allowNull ? '' : 'TCP') });
  }
  return exact(out);
}

export function toService(obj: unknown): ServiceRec | string {
  const m = meta(obj, true);
  if (typeof m === 'string') return m;
  const where = `service ${m.namespace}/${m.name}`;
  const spec = (obj as Obj)['spec'];
  if (!isObj(spec)) return `${where}: missing spec`;
  const type = str(spec['type']) ?? 'ClusterIP';
  let raw: unknown[] = [];
  if (Array.isArray(spec['clusterIPs']) && spec['clusterIPs'].length > 0) raw = spec['clusterIPs'];
  else if (typeof spec['clusterIP'] === 'string' && spec['clusterIP'] !== '') raw = [spec['clusterIP']];
  const headless = raw[0] === 'None';
  const clusterIPs: string[] = [];
  if (!headless && type !== 'ExternalName') {
    for (const ip of raw) {
      const c = typeof ip === 'string' ? canonicalIP(ip) : undefined;
      if (!c) return `${where}: unparsable cluster IP ${JSON.stringify(ip)}`;
      if (!clusterIPs.includes(c)) clusterIPs.push(c);
    }
  }
  const ps = ports(spec['ports'], where, false);
  if (typeof ps === 'string') return ps;
  const externalName = type === 'ExternalName' ? (str(spec['externalName']) ?? '') : '';
  if (type === 'ExternalName' && !externalName) return `${where}: ExternalName service without spec.externalName`;
  const externalIPs = externalAddresses(spec, (obj as Obj)['status']);
  return {
    name: m.name,
    namespace: m.namespace,
    resourceVersion: m.resourceVersion,
    type,
    clusterIPs: exact(clusterIPs),
    headless,
    externalName,
    ports: ps,
    externalIPs,
  };
}

const NO_EXTERNAL: readonly string[] = Object.freeze([]);

/**
 * `spec.externalIPs` as written, then each `status.loadBalancer.ingress` entry's `ip` (or its
 * `hostname` when it has no IP), as CoreDNS's object.ToService builds its ExternalIPs (k8s_external).
 */
function externalAddresses(spec: Obj, status: unknown): readonly string[] {
  const ingress = isObj(status) && isObj(status['loadBalancer']) ? status['loadBalancer']['ingress'] : undefined;
  const ext = spec['externalIPs'];
  if (!Array.isArray(ext) && !Array.isArray(ingress)) return NO_EXTERNAL;
  const out: string[] = [];
  if (Array.isArray(ext)) for (const x of ext) if (typeof x === 'string') out.push(x);
  if (Array.isArray(ingress)) {
    for (const lb of ingress) {
      if (!isObj(lb)) continue;
      const v = str(lb['ip']) || str(lb['hostname']) || '';
      if (v !== '') out.push(v);
    }
  }
  return out.length ? exact(out) : NO_EXTERNAL;
}

/** What of an endpoint, beyond its addresses, is kept (see SliceRec). */
export interface SliceOptions {
  /** Keep `targetRef.name` (`endpoint_pod_names`). */
  podNames: boolean;
  /** Keep topology zones (`zonal`). */
  zones: boolean;
}

const ALL_COLUMNS: SliceOptions = { podNames: true, zones: true };

/** One published address of a slice with its endpoint's attributes (tests and converters). */
export interface EndpointEntry {
  address: string;
  hostname?: string;
  podName?: string;
  zone?: string;
}

/** The columns of SliceRec from a list of entries; a column that would hold only '' is null. */
export function endpointColumns(
  entries: readonly EndpointEntry[],
): Pick<SliceRec, 'addresses' | 'hostnames' | 'podNames' | 'zones'> {
  const column = (get: (e: EndpointEntry) => string | undefined): string[] | null =>
    entries.some((e) => get(e)) ? entries.map((e) => get(e) ?? '') : null;
  return {
    addresses: packAddresses(entries.map((e) => e.address)),
    hostnames: column((e) => e.hostname),
    podNames: column((e) => e.podName),
    // Topology zones repeat across every endpoint: keep one copy of each string.
    zones: entries.some((e) => e.zone) ? entries.map((e) => intern(e.zone ?? '')) : null,
  };
}

export function toSlice(obj: unknown, opts: SliceOptions = ALL_COLUMNS): SliceRec | string | null {
  const m = meta(obj, true);
  if (typeof m === 'string') return m;
  const where = `endpointslice ${m.namespace}/${m.name}`;
  const o = obj as Obj;
  const addressType = str(o['addressType']) ?? '';
  if (addressType === 'FQDN') return null; // quirk #7: ignored on purpose
  if (addressType !== 'IPv4' && addressType !== 'IPv6')
    return `${where}: unknown addressType ${JSON.stringify(o['addressType'])}`;
  const ps = ports(o['ports'], where, true);
  if (typeof ps === 'string') return ps;
  const entries: EndpointEntry[] = [];
  const rawEps = o['endpoints'];
  if (rawEps !== undefined && rawEps !== null && !Array.isArray(rawEps)) return `${where}: endpoints is not a list`;
  for (const e of (rawEps ?? []) as unknown[]) {
    if (!isObj(e)) return `${where}: malformed endpoint`;
    if (!Array.isArray(e['addresses'])) return `${where}: endpoint without addresses`;
    const addresses: string[] = [];
    for (const a of e['addresses'] as unknown[]) {
      const c = typeof a === 'string' ? canonicalIP(a) : undefined;
      if (!c || isIP(c) !== (addressType === 'IPv4' ? 4 : 6))
        return `${where}: unparsable address ${JSON.stringify(a)}`;
      addresses.push(c);
    }
    const cond = isObj(e['conditions']) ? e['conditions'] : {};
    // Unset readiness counts as ready; DNS publishes ready endpoints only.
    if (cond['ready'] !== undefined && cond['ready'] !== null && cond['ready'] !== true) continue;
    const targetRef = isObj(e['targetRef']) ? e['targetRef'] : {};
    const hostname = str(e['hostname']);
    const podName = opts.podNames ? str(targetRef['name']) : undefined;
    const zone = opts.zones ? str(e['zone']) : undefined;
    for (const address of addresses) entries.push({ address, hostname, podName, zone });
  }
  const cols = endpointColumns(entries);
  return {
    name: m.name,
    namespace: m.namespace,
    resourceVersion: m.resourceVersion,
    service: str(m.labels['kubernetes.io/service-name']) ?? '',
    addressType,
    ports: ps,
    addresses: cols.addresses,
    hostnames: cols.hostnames,
    podNames: cols.podNames,
    zones: cols.zones,
    triggerTime: str(m.annotations['endpoints.kubernetes.io/last-change-trigger-time']) ?? null,
  };
}

export function toNamespace(obj: unknown): NamespaceRec | string {
  const m = meta(obj, false);
  if (typeof m === 'string') return m;
  return { name: m.name, resourceVersion: m.resourceVersion };
}

export function toPod(obj: unknown): PodRec | string | null {
  const m = meta(obj, true);
  if (typeof m === 'string') return m;
  if (m.deletionTimestamp !== undefined && m.deletionTimestamp !== null) return null;
  const status = (obj as Obj)['status'];
  const ips: string[] = [];
  if (isObj(status)) {
    const list = status['podIPs'];
    if (Array.isArray(list)) {
      for (const entry of list) {
        const ip = isObj(entry) ? str(entry['ip']) : undefined;
        if (ip !== undefined && ip !== '' && !ips.includes(ip)) ips.push(ip);
      }
    }
    const single = str(status['podIP']) ?? '';
    if (ips.length === 0 && single !== '') ips.push(single);
  }
  for (const ip of ips)
    if (isIP(ip) === 0) return `pod ${m.namespace}/${m.name}: unparsable pod IP ${JSON.stringify(ip)}`;
  return { name: m.name, namespace: m.namespace, resourceVersion: m.resourceVersion, ips };
}

/** The label naming the ServiceImport a multicluster EndpointSlice belongs to (mcs-api LabelServiceName). */
export const MCS_SERVICE_LABEL = 'multicluster.kubernetes.io/service-name';
/** The label naming the cluster a multicluster EndpointSlice comes from (mcs-api LabelSourceCluster). */
export const MCS_CLUSTER_LABEL = 'multicluster.kubernetes.io/source-cluster';

/**
 * A ServiceImport (`multicluster`, docs/records.md §8.4): type, IPs and ports, as CoreDNS 1.15.0's
 * object.ToServiceImport keeps them. An unparsable IP makes the object malformed, as for Services.
 */
export function toServiceImport(obj: unknown): ImportRec | string {
  const m = meta(obj, true);
  if (typeof m === 'string') return m;
  const where = `serviceimport ${m.namespace}/${m.name}`;
  const spec = (obj as Obj)['spec'];
  if (!isObj(spec)) return `${where}: missing spec`;
  const raw = spec['ips'];
  if (raw !== undefined && raw !== null && !Array.isArray(raw)) return `${where}: ips is not a list`;
  const ips: string[] = [];
  for (const ip of (raw ?? []) as unknown[]) {
    const c = typeof ip === 'string' ? canonicalIP(ip) : undefined;
    if (!c) return `${where}: unparsable IP ${JSON.stringify(ip)}`;
    ips.push(c);
  }
  const ps = ports(spec['ports'], where, false);
  if (typeof ps === 'string') return ps;
  // CoreDNS reads the protocol as written: an import port without one matches no `_tcp` query.
  const written = (spec['ports'] ?? []) as Obj[];
  return {
    name: m.name,
    namespace: m.namespace,
    resourceVersion: m.resourceVersion,
    type: str(spec['type']) ?? '',
    ips: exact(ips),
    ports: exact(ps.map((p, i) => (str(written[i]?.['protocol']) === undefined ? { ...p, protocol: '' } : p))),
  };
}

/**
 * An EndpointSlice of a ServiceImport (`multicluster`): the slice's DNS data keyed by the
 * `multicluster.kubernetes.io/service-name` label, with its source cluster. Topology zones are
 * not kept: zonal names are not defined in multicluster zones.
 */
export function toMcSlice(obj: unknown, opts: SliceOptions): McSliceRec | string | null {
  const s = toSlice(obj, { podNames: opts.podNames, zones: false });
  if (s === null || typeof s === 'string') return s;
  const labels = (meta(obj, true) as Meta).labels;
  return {
    ...s,
    service: str(labels[MCS_SERVICE_LABEL]) ?? '',
    clusterId: str(labels[MCS_CLUSTER_LABEL]) ?? '',
    triggerTime: null,
  };
}
