/** The API server's version and discovery documents (the resources the sandbox serves). */
import { RESOURCES, type JsonObject } from './resources.js';

/** What `/version` answers: a Kubernetes 1.31 API server. */
export const KUBE_VERSION = {
  major: '1',
  minor: '31',
  gitVersion: 'v1.31.0',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2024-08-13T00:00:00Z',
  goVersion: 'go1.22.5',
  compiler: 'gc',
  platform: 'linux/amd64',
};

export function discoveryResources(group: string): JsonObject {
  const gv = group === '' ? 'v1' : (RESOURCES.find((r) => r.group === group)?.apiVersion ?? `${group}/v1`);
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: gv,
    resources: RESOURCES.filter((r) => r.group === group).map((r) => ({
      name: r.plural,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: ['get', 'list', 'watch'],
      ...(r.shortNames.length > 0 ? { shortNames: r.shortNames } : {}),
    })),
  };
}

export const DISCOVERY_GROUP = {
  kind: 'APIGroup',
  apiVersion: 'v1',
  name: 'discovery.k8s.io',
  versions: [{ groupVersion: 'discovery.k8s.io/v1', version: 'v1' }],
  preferredVersion: { groupVersion: 'discovery.k8s.io/v1', version: 'v1' },
};

/** The mcs-api group (the ServiceImport CRD), when the sandbox serves it. */
export const MULTICLUSTER_GROUP = {
  kind: 'APIGroup',
  apiVersion: 'v1',
  name: 'multicluster.x-k8s.io',
  versions: [{ groupVersion: 'multicluster.x-k8s.io/v1alpha1', version: 'v1alpha1' }],
  preferredVersion: { groupVersion: 'multicluster.x-k8s.io/v1alpha1', version: 'v1alpha1' },
};
