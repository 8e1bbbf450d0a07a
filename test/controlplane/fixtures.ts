/** Objects for the control-plane suite: namespaces, Nodes, pods that become Ready, Services. */
import type { ControlPlane, Obj } from '../helpers/controlplane.js';
import { retryUnlessExited, waitFor } from '../helpers/wait.js';

export const NODE = 'node-a';

/** A Node object (no kubelet behind it): the EndpointSlice controller skips pods on unknown Nodes. */
export async function createNode(cp: ControlPlane, name = NODE): Promise<void> {
  await cp.create({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'topology.kubernetes.io/zone': 'zone-a' } },
    spec: {},
  });
}

/** Create a namespace and wait for its `default` ServiceAccount (pods are refused before). */
export async function createNamespace(
  cp: ControlPlane,
  name: string,
  labels: Record<string, string> = {},
): Promise<void> {
  await cp.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
  await waitFor(
    `ServiceAccount default in ${name}`,
    async () => (await cp.api('GET', `/api/v1/namespaces/${name}/serviceaccounts/default`)).status === 200 || undefined,
    { timeoutMs: 120_000, everyMs: 100, retry: retryUnlessExited },
  );
}

export interface PodSpec {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  ips: string[];
  hostname?: string;
  subdomain?: string;
}

/** Create a pod bound to NODE and patch its status to Running with its IPs, Ready or not. */
export async function createPod(cp: ControlPlane, p: PodSpec, ready = true): Promise<void> {
  await cp.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: p.name, namespace: p.namespace, labels: p.labels },
    spec: {
      nodeName: NODE,
      automountServiceAccountToken: false,
      ...(p.hostname ? { hostname: p.hostname } : {}),
      ...(p.subdomain ? { subdomain: p.subdomain } : {}),
      containers: [{ name: 'c', image: 'registry.invalid/none:1', ports: [{ name: 'http', containerPort: 8080 }] }],
    },
  });
  await setPodReady(cp, p, ready);
}

export async function setPodReady(
  cp: ControlPlane,
  p: Pick<PodSpec, 'name' | 'namespace' | 'ips'>,
  ready: boolean,
): Promise<void> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const status = ready ? 'True' : 'False';
  await cp.patch(
    'v1',
    'Pod',
    p.namespace,
    p.name,
    {
      status: {
        phase: 'Running',
        hostIP: '192.0.2.100',
        podIP: p.ips[0],
        podIPs: p.ips.map((ip) => ({ ip })),
        conditions: [
          { type: 'Initialized', status: 'True', lastTransitionTime: now },
          { type: 'ContainersReady', status, lastTransitionTime: now },
          { type: 'Ready', status, lastTransitionTime: now },
          { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
        ],
      },
    },
    'status',
  );
}

export interface SvcSpec {
  name: string;
  namespace: string;
  spec: Obj;
}

export async function createService(cp: ControlPlane, s: SvcSpec): Promise<Obj> {
  return cp.create({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: s.name, namespace: s.namespace },
    spec: s.spec,
  });
}

export function clusterIPs(svc: Obj): string[] {
  const spec = svc['spec'] as Obj;
  return (spec['clusterIPs'] as string[] | undefined) ?? [];
}
