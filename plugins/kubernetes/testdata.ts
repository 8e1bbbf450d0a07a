/**
 * The fixture of docs/records.md §2.1 as Kubernetes API objects (used by the unit tests
 * and, through the sandbox, by the integration tests).
 */

type Json = Record<string, unknown>;

let rv = 100;
const nextRV = (): string => String(rv++);

export function ns(name: string, labels: Record<string, string> = {}): Json {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels, resourceVersion: nextRV() } };
}

export function svc(namespace: string, name: string, spec: Json, labels: Record<string, string> = {}): Json {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace, labels, resourceVersion: nextRV() }, spec };
}

interface Ep {
  ip: string | string[];
  ready?: boolean | null;
  hostname?: string;
  pod?: string;
  serving?: boolean;
  terminating?: boolean;
}

export function slice(
  namespace: string,
  name: string,
  service: string,
  ports: Json[],
  eps: Ep[],
  addressType = 'IPv4',
  extra: Json = {},
): Json {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name,
      namespace,
      labels: { 'kubernetes.io/service-name': service },
      resourceVersion: nextRV(),
      ...extra,
    },
    addressType,
    ports,
    endpoints: eps.map((e) => {
      const conditions: Json = {};
      if (e.ready !== undefined && e.ready !== null) conditions['ready'] = e.ready;
      if (e.serving !== undefined) conditions['serving'] = e.serving;
      if (e.terminating !== undefined) conditions['terminating'] = e.terminating;
      const out: Json = { addresses: Array.isArray(e.ip) ? e.ip : [e.ip], conditions };
      if (e.hostname) out['hostname'] = e.hostname;
      if (e.pod) out['targetRef'] = { kind: 'Pod', name: e.pod, namespace };
      return out;
    }),
  };
}

export function pod(namespace: string, name: string, ip: string): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, resourceVersion: nextRV() },
    status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
  };
}

const http = (port: number): Json => ({ name: 'http', port, protocol: 'TCP' });

export function fixture(): { namespaces: Json[]; services: Json[]; slices: Json[]; pods: Json[] } {
  return {
    namespaces: ['default', 'testns', 'kube-system', 'empty-ns'].map((n) => ns(n)),
    services: [
      svc('testns', 'svc1', {
        type: 'ClusterIP',
        clusterIP: '10.96.0.11',
        clusterIPs: ['10.96.0.11'],
        selector: { app: 'svc1' },
        ports: [{ ...http(80), targetPort: 8080 }],
      }),
      svc('testns', 'svc2', {
        type: 'ClusterIP',
        clusterIP: '10.96.0.12',
        clusterIPs: ['10.96.0.12'],
        ports: [http(80), { name: 'https', port: 443, protocol: 'TCP' }],
      }),
      svc('testns', 'dual', {
        type: 'ClusterIP',
        clusterIP: '10.96.0.13',
        clusterIPs: ['10.96.0.13', 'fd00:10:96::13'],
        ports: [http(80)],
      }),
      svc('testns', 'v6only', {
        type: 'ClusterIP',
        clusterIP: 'fd00:10:96::14',
        clusterIPs: ['fd00:10:96::14'],
        ports: [http(80)],
      }),
      svc('testns', 'noname', {
        type: 'ClusterIP',
        clusterIP: '10.96.0.15',
        clusterIPs: ['10.96.0.15'],
        ports: [{ port: 8080, protocol: 'TCP' }],
      }),
      svc('testns', 'hl', {
        type: 'ClusterIP',
        clusterIP: 'None',
        clusterIPs: ['None'],
        selector: { app: 'web' },
        ports: [{ ...http(80), targetPort: 8080 }],
      }),
      svc('testns', 'hlnp', { type: 'ClusterIP', clusterIP: 'None', clusterIPs: ['None'], selector: { app: 'np' } }),
      svc('testns', 'hlempty', { type: 'ClusterIP', clusterIP: 'None', clusterIPs: ['None'], ports: [http(80)] }),
      svc('testns', 'skew', { type: 'ClusterIP', clusterIP: 'None', clusterIPs: ['None'], ports: [http(80)] }),
      svc('testns', 'manual', {
        type: 'ClusterIP',
        clusterIP: '10.96.0.17',
        clusterIPs: ['10.96.0.17'],
        ports: [{ name: 'pg', port: 5432, protocol: 'TCP' }],
      }),
      svc('testns', 'ext', { type: 'ExternalName', externalName: 'www.example.com' }),
      svc('testns', 'extint', { type: 'ExternalName', externalName: 'svc1.testns.svc.cluster.local' }),
      svc('testns', 'extip', { type: 'ExternalName', externalName: '192.0.2.1' }),
      svc('kube-system', 'kube-dns', {
        type: 'ClusterIP',
        clusterIP: '10.96.0.10',
        clusterIPs: ['10.96.0.10'],
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53, protocol: 'TCP' },
          { name: 'metrics', port: 9153, protocol: 'TCP' },
        ],
      }),
    ],
    slices: [
      slice('testns', 'svc1-abc', 'svc1', [http(8080)], [{ ip: '10.244.1.10', ready: true }]),
      slice('testns', 'svc2-abc', 'svc2', [http(8080), { name: 'https', port: 8443, protocol: 'TCP' }], []),
      slice(
        'testns',
        'hl-v4',
        'hl',
        [http(8080)],
        [
          { ip: '10.244.1.20', hostname: 'web-0', ready: true, pod: 'web-0' },
          { ip: '10.244.1.21', ready: true, pod: 'web-1' },
          { ip: '10.244.1.22', ready: false, serving: true, terminating: true },
          { ip: '10.244.1.23', ready: null },
        ],
      ),
      slice('testns', 'hl-v6', 'hl', [http(8080)], [{ ip: 'fd00:10:244::21', ready: true, pod: 'web-1' }], 'IPv6'),
      slice('testns', 'hlnp-x', 'hlnp', [], [{ ip: '10.244.1.30', ready: true }]),
      slice('testns', 'hlempty-x', 'hlempty', [http(8080)], [{ ip: '10.244.1.40', ready: false }]),
      slice('testns', 'skew-a', 'skew', [http(8080)], [{ ip: '10.244.1.60', ready: true }]),
      slice('testns', 'skew-b', 'skew', [http(8080)], [{ ip: '10.244.1.60', ready: true }]),
      slice(
        'testns',
        'manual-1',
        'manual',
        [{ name: 'pg', port: 5432, protocol: 'TCP' }],
        [{ ip: '192.0.2.10', ready: true }],
      ),
      slice(
        'kube-system',
        'kube-dns-x',
        'kube-dns',
        [
          { name: 'dns', port: 53, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53, protocol: 'TCP' },
          { name: 'metrics', port: 9153, protocol: 'TCP' },
        ],
        [{ ip: '10.244.0.5', ready: true, pod: 'coredns-0' }],
      ),
    ],
    pods: [
      pod('testns', 'client', '10.244.2.7'),
      pod('default', 'other', '10.244.2.8'),
      pod('kube-system', 'coredns-0', '10.244.0.5'),
    ],
  };
}

/** All fixture objects in one list (for the sandbox). */
export function fixtureObjects(): Json[] {
  const f = fixture();
  return [...f.namespaces, ...f.services, ...f.slices, ...f.pods];
}
