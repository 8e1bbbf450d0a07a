/**
 * The resource types the sandbox serves (the four of core Kubernetes, and the mcs-api ServiceImport
 * of a cluster with the multicluster CRDs installed), and how an incoming object is normalised the way
 * the API server's defaulting would (server-populated metadata, a few spec defaults).
 */
import { randomUUID } from 'node:crypto';

export type JsonObject = Record<string, unknown>;

export interface ResourceDef {
  /** plural resource name as in the URL */
  plural: string;
  singular: string;
  kind: string;
  listKind: string;
  /** "" for core */
  group: string;
  version: string;
  /** group/version, or "v1" for core */
  apiVersion: string;
  namespaced: boolean;
  shortNames: string[];
  /** field selectors this resource supports besides metadata.name / metadata.namespace */
  fieldPaths: Record<string, (o: JsonObject) => string>;
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean' || typeof v === 'number') return String(v);
  return '';
}

function path(o: JsonObject, ...keys: string[]): unknown {
  let cur: unknown = o;
  for (const k of keys) {
    if (!isObject(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

export const RESOURCES: readonly ResourceDef[] = [
  {
    plural: 'namespaces',
    singular: 'namespace',
    kind: 'Namespace',
    listKind: 'NamespaceList',
    group: '',
    version: 'v1',
    apiVersion: 'v1',
    namespaced: false,
    shortNames: ['ns'],
    fieldPaths: { 'status.phase': (o) => str(path(o, 'status', 'phase')) },
  },
  {
    plural: 'services',
    singular: 'service',
    kind: 'Service',
    listKind: 'ServiceList',
    group: '',
    version: 'v1',
    apiVersion: 'v1',
    namespaced: true,
    shortNames: ['svc'],
    fieldPaths: {
      'spec.clusterIP': (o) => str(path(o, 'spec', 'clusterIP')),
      'spec.type': (o) => str(path(o, 'spec', 'type')),
    },
  },
  {
    plural: 'pods',
    singular: 'pod',
    kind: 'Pod',
    listKind: 'PodList',
    group: '',
    version: 'v1',
    apiVersion: 'v1',
    namespaced: true,
    shortNames: ['po'],
    fieldPaths: {
      'spec.nodeName': (o) => str(path(o, 'spec', 'nodeName')),
      'spec.restartPolicy': (o) => str(path(o, 'spec', 'restartPolicy')),
      'spec.schedulerName': (o) => str(path(o, 'spec', 'schedulerName')),
      'spec.serviceAccountName': (o) => str(path(o, 'spec', 'serviceAccountName')),
      'spec.hostNetwork': (o) => String(path(o, 'spec', 'hostNetwork') === true),
      'status.phase': (o) => str(path(o, 'status', 'phase')),
      'status.podIP': (o) => str(path(o, 'status', 'podIP')),
      'status.nominatedNodeName': (o) => str(path(o, 'status', 'nominatedNodeName')),
    },
  },
  {
    plural: 'endpointslices',
    singular: 'endpointslice',
    kind: 'EndpointSlice',
    listKind: 'EndpointSliceList',
    group: 'discovery.k8s.io',
    version: 'v1',
    apiVersion: 'discovery.k8s.io/v1',
    namespaced: true,
    shortNames: [],
    fieldPaths: {},
  },
  {
    // A CRD (sigs.k8s.io/mcs-api, test/fixtures/mcs-api): served unless the sandbox is started
    // without it (`serviceImports: false`), as an API server where the CRD is not installed.
    plural: 'serviceimports',
    singular: 'serviceimport',
    kind: 'ServiceImport',
    listKind: 'ServiceImportList',
    group: 'multicluster.x-k8s.io',
    version: 'v1alpha1',
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    namespaced: true,
    shortNames: ['svcim', 'svcimport'],
    fieldPaths: {},
  },
];

export function resourceByKind(kind: string): ResourceDef | undefined {
  return RESOURCES.find((r) => r.kind === kind);
}

export function resourceByPlural(group: string, plural: string): ResourceDef | undefined {
  return RESOURCES.find((r) => r.group === group && r.plural === plural);
}

/** Resolve a kind given to `remove()`: "Service", "services", "svc", "service" all work. */
export function resourceByAnyName(name: string): ResourceDef | undefined {
  const n = name.toLowerCase();
  return RESOURCES.find(
    (r) => r.kind.toLowerCase() === n || r.plural === n || r.singular === n || r.shortNames.includes(n),
  );
}

export class ObjectError extends Error {}

/** Extra per-object data that selectors need, extracted once when the object is stored. */
export interface Indexed {
  labels: Record<string, string>;
  /** values of the resource's extra field paths (see ResourceDef.fieldPaths) */
  fields: Record<string, string>;
}

function cloneJson(v: unknown): JsonObject {
  return JSON.parse(JSON.stringify(v)) as JsonObject;
}

function ensureObject(parent: JsonObject, key: string): JsonObject {
  const v = parent[key];
  if (isObject(v)) return v;
  const o: JsonObject = {};
  parent[key] = o;
  return o;
}

export interface Normalised {
  res: ResourceDef;
  namespace: string;
  name: string;
  /** the object without kind/apiVersion and without metadata.resourceVersion (set at store time) */
  body: JsonObject;
}

/**
 * Validate and default an object given to apply() or read from YAML. The result is a deep copy;
 * `metadata.resourceVersion` is removed (the store assigns it), and server-set fields are filled
 * with `existing` values for a replace (uid, creationTimestamp) or fresh values for a create.
 */
export function normaliseObject(
  input: unknown,
  existing?: { uid: unknown; creationTimestamp: unknown },
  inPlace = false,
): Normalised {
  if (!isObject(input)) throw new ObjectError('object must be a mapping');
  const kind = input['kind'];
  if (typeof kind !== 'string') throw new ObjectError('object has no kind');
  const res = resourceByKind(kind);
  if (!res) throw new ObjectError(`unsupported kind ${kind}`);
  const apiVersion = input['apiVersion'];
  if (apiVersion !== undefined && apiVersion !== res.apiVersion) {
    throw new ObjectError(`${kind}: unsupported apiVersion ${String(apiVersion)} (want ${res.apiVersion})`);
  }
  const body = inPlace ? input : cloneJson(input);
  delete body['kind'];
  delete body['apiVersion'];
  const md = ensureObject(body, 'metadata');
  const name = md['name'];
  if (typeof name !== 'string' || name === '') throw new ObjectError(`${kind}: metadata.name is required`);
  let namespace = '';
  if (res.namespaced) {
    const ns = md['namespace'];
    namespace = typeof ns === 'string' && ns !== '' ? ns : 'default';
    md['namespace'] = namespace;
  } else {
    delete md['namespace'];
  }
  delete md['resourceVersion'];
  delete md['selfLink'];
  if (existing && typeof existing.uid === 'string' && typeof existing.creationTimestamp === 'string') {
    md['uid'] = existing.uid;
    md['creationTimestamp'] = existing.creationTimestamp;
  } else {
    if (typeof md['uid'] !== 'string' || md['uid'] === '') md['uid'] = randomUUID();
    if (typeof md['creationTimestamp'] !== 'string') md['creationTimestamp'] = rfc3339(new Date());
  }
  if (md['labels'] !== undefined && !isObject(md['labels']))
    throw new ObjectError(`${kind} ${name}: metadata.labels must be a mapping`);
  applyDefaults(res, body, name);
  return { res, namespace, name, body };
}

export function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function applyDefaults(res: ResourceDef, body: JsonObject, name: string): void {
  switch (res.kind) {
    case 'Namespace': {
      const md = body['metadata'] as JsonObject;
      const labels = ensureObject(md, 'labels');
      // The API server has set this label on every namespace since Kubernetes 1.21.
      labels['kubernetes.io/metadata.name'] = name;
      const spec = ensureObject(body, 'spec');
      if (spec['finalizers'] === undefined) spec['finalizers'] = ['kubernetes'];
      const status = ensureObject(body, 'status');
      if (status['phase'] === undefined) status['phase'] = 'Active';
      break;
    }
    case 'Service': {
      const spec = ensureObject(body, 'spec');
      if (spec['type'] === undefined) spec['type'] = 'ClusterIP';
      if (spec['type'] !== 'ExternalName') {
        const ip = spec['clusterIP'];
        const ips = spec['clusterIPs'];
        if (typeof ip === 'string' && ip !== '' && !Array.isArray(ips)) spec['clusterIPs'] = [ip];
        if (ip === undefined && Array.isArray(ips) && typeof ips[0] === 'string') spec['clusterIP'] = ips[0];
        if (spec['sessionAffinity'] === undefined) spec['sessionAffinity'] = 'None';
      }
      const ports = spec['ports'];
      if (Array.isArray(ports)) {
        for (const p of ports) {
          if (!isObject(p)) continue;
          if (p['protocol'] === undefined) p['protocol'] = 'TCP';
          if (p['targetPort'] === undefined && p['port'] !== undefined && spec['type'] !== 'ExternalName')
            p['targetPort'] = p['port'];
        }
      }
      if (body['status'] === undefined) body['status'] = { loadBalancer: {} };
      break;
    }
    case 'EndpointSlice': {
      if (typeof body['addressType'] !== 'string')
        throw new ObjectError(`EndpointSlice ${name}: addressType is required`);
      if (body['endpoints'] === undefined || body['endpoints'] === null) body['endpoints'] = [];
      const ports = body['ports'];
      if (Array.isArray(ports)) {
        for (const p of ports) if (isObject(p) && p['protocol'] === undefined) p['protocol'] = 'TCP';
      }
      break;
    }
    case 'Pod': {
      const status = ensureObject(body, 'status');
      if (status['phase'] === undefined) status['phase'] = 'Pending';
      if (typeof status['podIP'] === 'string' && status['podIPs'] === undefined)
        status['podIPs'] = [{ ip: status['podIP'] }];
      break;
    }
  }
}

const NO_LABELS: Record<string, string> = Object.freeze({}) as Record<string, string>;

export function indexObject(res: ResourceDef, body: JsonObject): Indexed {
  let labels = NO_LABELS;
  const l = path(body, 'metadata', 'labels');
  if (isObject(l)) {
    labels = {};
    for (const [k, v] of Object.entries(l)) labels[k] = str(v);
  }
  let fields = NO_LABELS;
  for (const [f, get] of Object.entries(res.fieldPaths)) {
    const v = get(body);
    if (v === '') continue;
    if (fields === NO_LABELS) fields = {};
    fields[f] = v;
  }
  return { labels, fields };
}
