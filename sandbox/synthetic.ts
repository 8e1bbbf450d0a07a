/**
 * A deterministic synthetic cluster shaped like a real one: Namespaces, Services (ClusterIP with
 * ports, a fraction headless StatefulSet-style), Pods with IPs on per-node /24s, and
 * EndpointSlices as the EndpointSlice controller writes them (at most 100 endpoints per slice).
 */
import { seededRandom } from '../src/util/prng.js';

export interface GenerateOptions {
  services: number;
  /** pods per service when `pods` is not given; default 3 */
  podsPerService?: number;
  /** total number of pods, spread evenly over the services (takes precedence) */
  pods?: number;
  /** default min(10, services) (at least 1) */
  namespaces?: number;
  /** fraction of services that are headless; default 0.1 */
  headlessFraction?: number;
  /** default 1 */
  seed?: number;
  /** fraction of endpoints that are not ready; default 0.02 */
  notReadyFraction?: number;
}

/** Max endpoints per slice, as kube-controller-manager's default --max-endpoints-per-slice. */
export const MAX_ENDPOINTS_PER_SLICE = 100;
const PODS_PER_NODE = 100;
const ZONES = ['zone-a', 'zone-b', 'zone-c'];
const NS_WORDS = [
  'payments',
  'checkout',
  'search',
  'identity',
  'catalog',
  'billing',
  'ml',
  'monitoring',
  'ingress',
  'data',
  'media',
  'social',
];
const SVC_WORDS = [
  'api',
  'web',
  'worker',
  'cache',
  'gateway',
  'frontend',
  'backend',
  'auth',
  'db',
  'queue',
  'index',
  'render',
  'notify',
  'store',
];
const ALNUM = 'bcdfghjklmnpqrstvwxz2456789';

function ipv4(n: number): string {
  return `${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

const SVC_BASE = (10 << 24) | (96 << 16); // 10.96.0.0/12
const POD_BASE = (10 << 24) | (128 << 16); // 10.128.0.0/9: a /24 per node

export function generateCluster(opts: GenerateOptions): unknown[] {
  return [...generateObjects(opts)];
}

/** The same objects as generateCluster, produced lazily (one service's objects at a time). */
export function* generateObjects(opts: GenerateOptions): Generator<Record<string, unknown>> {
  const services = Math.max(0, Math.floor(opts.services));
  const totalPods =
    opts.pods !== undefined ? Math.max(0, Math.floor(opts.pods)) : services * (opts.podsPerService ?? 3);
  const nsCount = Math.max(1, Math.floor(opts.namespaces ?? Math.min(10, Math.max(1, services))));
  const headlessFraction = opts.headlessFraction ?? 0.1;
  const notReady = opts.notReadyFraction ?? 0.02;
  const rnd = seededRandom(opts.seed ?? 1);
  const rstr = (n: number): string => {
    let s = '';
    for (let i = 0; i < n; i++) s += ALNUM[Math.floor(rnd() * ALNUM.length)];
    return s;
  };
  const hex = (n: number): string => {
    let s = '';
    for (let i = 0; i < n; i++) s += Math.floor(rnd() * 16).toString(16);
    return s;
  };
  const uuid = (): string => `${hex(8)}-${hex(4)}-4${hex(3)}-${'89ab'[Math.floor(rnd() * 4)]}${hex(3)}-${hex(12)}`;
  const created = '2026-01-15T08:00:00Z';
  const nodes = Math.max(1, Math.ceil(totalPods / PODS_PER_NODE));
  const nodeNext = new Uint16Array(nodes);

  const nsNames: string[] = [];
  for (let i = 0; i < nsCount; i++) {
    const w = NS_WORDS[i % NS_WORDS.length] as string;
    const name = i < NS_WORDS.length ? w : `${w}-${Math.floor(i / NS_WORDS.length)}`;
    nsNames.push(name);
    yield {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, uid: uuid(), creationTimestamp: created, labels: { team: w } },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    };
  }

  const base = services > 0 ? Math.floor(totalPods / services) : 0;
  const extra = services > 0 ? totalPods % services : 0;
  let podIndex = 0;
  for (let s = 0; s < services; s++) {
    const ns = nsNames[s % nsCount] as string;
    const name = `${SVC_WORDS[s % SVC_WORDS.length] as string}-${s}`;
    const headless = rnd() < headlessFraction;
    const svcUid = uuid();
    const withGrpc = rnd() < 0.3;
    const withMetrics = rnd() < 0.2;
    const svcPorts: Record<string, unknown>[] = [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }];
    const slicePorts: Record<string, unknown>[] = [{ name: 'http', port: 8080, protocol: 'TCP' }];
    if (withGrpc) {
      svcPorts.push({ name: 'grpc', port: 9090, protocol: 'TCP', targetPort: 9090 });
      slicePorts.push({ name: 'grpc', port: 9090, protocol: 'TCP' });
    }
    if (withMetrics) {
      svcPorts.push({ name: 'metrics', port: 9102, protocol: 'TCP', targetPort: 9102 });
      slicePorts.push({ name: 'metrics', port: 9102, protocol: 'TCP' });
    }
    const labels = { app: name, 'app.kubernetes.io/name': name, 'app.kubernetes.io/part-of': ns };
    const clusterIP = headless ? 'None' : ipv4(SVC_BASE + 256 + s);
    yield {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: ns, uid: svcUid, creationTimestamp: created, labels },
      spec: {
        type: 'ClusterIP',
        clusterIP,
        clusterIPs: [clusterIP],
        ipFamilies: ['IPv4'],
        ipFamilyPolicy: 'SingleStack',
        internalTrafficPolicy: 'Cluster',
        selector: { app: name },
        sessionAffinity: 'None',
        ports: svcPorts,
        ...(headless ? { publishNotReadyAddresses: false } : {}),
      },
      status: { loadBalancer: {} },
    };

    const n = base + (s < extra ? 1 : 0);
    const hash = rstr(10);
    const endpoints: Record<string, unknown>[] = [];
    for (let k = 0; k < n; k++, podIndex++) {
      const node = podIndex % nodes;
      const slot = nodeNext[node] as number;
      nodeNext[node] = slot + 1;
      const ip = ipv4(POD_BASE + node * 256 + 2 + (slot % 250));
      const podName = headless ? `${name}-${k}` : `${name}-${hash}-${rstr(5)}`;
      const nodeName = `node-${String(node).padStart(4, '0')}`;
      const zone = ZONES[node % ZONES.length] as string;
      const podUid = uuid();
      const ready = rnd() >= notReady;
      yield {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: podName,
          namespace: ns,
          uid: podUid,
          creationTimestamp: created,
          labels: headless
            ? { app: name, 'statefulset.kubernetes.io/pod-name': podName }
            : { app: name, 'pod-template-hash': hash },
        },
        spec: {
          containers: [
            {
              name: 'app',
              image: `registry.example.com/${ns}/${name}:1.4.2`,
              ports: [{ containerPort: 8080, protocol: 'TCP' }],
            },
          ],
          nodeName,
          restartPolicy: 'Always',
          schedulerName: 'default-scheduler',
          serviceAccountName: 'default',
          ...(headless ? { hostname: podName, subdomain: name } : {}),
        },
        status: {
          phase: 'Running',
          hostIP: ipv4((10 << 24) | (0 << 16) | (node + 10)),
          podIP: ip,
          podIPs: [{ ip }],
          conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
        },
      };
      endpoints.push({
        addresses: [ip],
        conditions: { ready, serving: ready, terminating: false },
        ...(headless ? { hostname: podName } : {}),
        targetRef: { kind: 'Pod', name: podName, namespace: ns, uid: podUid },
        nodeName,
        zone,
      });
    }
    // The controller writes at least one (possibly empty) slice per service with a selector.
    const sliceCount = Math.max(1, Math.ceil(endpoints.length / MAX_ENDPOINTS_PER_SLICE));
    for (let c = 0; c < sliceCount; c++) {
      yield {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          name: `${name}-${rstr(5)}`,
          namespace: ns,
          uid: uuid(),
          creationTimestamp: created,
          generateName: `${name}-`,
          generation: 1,
          labels: {
            ...labels,
            'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
            'kubernetes.io/service-name': name,
            ...(headless ? { 'service.kubernetes.io/headless': '' } : {}),
          },
          annotations: { 'endpoints.kubernetes.io/last-change-trigger-time': created },
          ownerReferences: [
            { apiVersion: 'v1', kind: 'Service', name, uid: svcUid, controller: true, blockOwnerDeletion: true },
          ],
        },
        addressType: 'IPv4',
        endpoints: endpoints.slice(c * MAX_ENDPOINTS_PER_SLICE, (c + 1) * MAX_ENDPOINTS_PER_SLICE),
        ports: slicePorts,
      };
    }
  }
}
