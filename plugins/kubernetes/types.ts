/**
 * Slim records: the only fields of Kubernetes objects that DNS needs (docs/records.md §8.2).
 * Objects are converted on receipt (convert.ts) and the full JSON is dropped. Add a field only with
 * a reason.
 */
import type { PackedAddresses } from './addresses.js';

export interface PortRec {
  /** Port name ('' when unnamed). */
  readonly name: string;
  /** Port number; -1 when the object declared none (EndpointSlice `port: null`). */
  readonly port: number;
  /** Protocol as written (`TCP`, `UDP`, `SCTP`; '' when absent). */
  readonly protocol: string;
}

export interface ServiceRec {
  readonly name: string;
  readonly namespace: string;
  readonly resourceVersion: string;
  /** `spec.type` (`ClusterIP`, `NodePort`, `LoadBalancer`, `ExternalName`). */
  readonly type: string;
  /** Canonical cluster IPs (empty for headless and ExternalName services). */
  readonly clusterIPs: readonly string[];
  /** The first cluster IP was the literal `None`. */
  readonly headless: boolean;
  /** `spec.externalName` as written ('' unless ExternalName). */
  readonly externalName: string;
  readonly ports: readonly PortRec[];
  /**
   * `spec.externalIPs`, then each `status.loadBalancer.ingress` IP (or hostname): the addresses
   * k8s_external answers with (src/kubernetes/external.ts).
   */
  readonly externalIPs: readonly string[];
}

/**
 * An EndpointSlice's DNS data. Endpoints are kept as columns, one entry per published address,
 * rather than one object per endpoint: at 150,000 endpoints the objects and their one-element
 * address arrays were most of the index's memory. Endpoints that are not ready are dropped on
 * receipt (DNS never publishes them), and an endpoint with several addresses gives one entry per
 * address with the endpoint's hostname, pod name and zone repeated (as CoreDNS does).
 */
export interface SliceRec {
  readonly name: string;
  readonly namespace: string;
  readonly resourceVersion: string;
  /** Label `kubernetes.io/service-name` ('' when missing: such a slice is never reachable). */
  readonly service: string;
  readonly addressType: string;
  readonly ports: readonly PortRec[];
  /** Canonical addresses of the ready endpoints, packed (read them with addresses.ts). */
  readonly addresses: PackedAddresses;
  /** `endpoints[].hostname` of each entry ('' for none); null when no endpoint has one. */
  readonly hostnames: readonly string[] | null;
  /**
   * `endpoints[].targetRef.name` of each entry ('' for none); null when none has one or when the
   * names are not DNS data (they are only with `endpoint_pod_names`).
   */
  readonly podNames: readonly string[] | null;
  /** Topology zone of each entry ('' for none); null when none is set or `zonal` is off. */
  readonly zones: readonly string[] | null;
  /** Annotation `endpoints.kubernetes.io/last-change-trigger-time`, for the programming metric. */
  readonly triggerTime: string | null;
}

export interface NamespaceRec {
  readonly name: string;
  readonly resourceVersion: string;
}

export interface PodRec {
  readonly name: string;
  readonly namespace: string;
  readonly resourceVersion: string;
  /**
   * The pod's IPs exactly as reported (compared textually, §3.6): `status.podIPs` (every IP of a
   * dual-stack or multi-network pod, as CoreDNS 1.15.0 indexes them), or `status.podIP` when the
   * list is absent. Empty while the pod has no IP.
   */
  readonly ips: readonly string[];
}

/**
 * A ServiceImport of `multicluster.x-k8s.io/v1alpha1` (`multicluster`, docs/records.md §8.4): what
 * CoreDNS 1.15.0's object.ToServiceImport keeps.
 */
export interface ImportRec {
  readonly name: string;
  readonly namespace: string;
  readonly resourceVersion: string;
  /** `spec.type` as written (`ClusterSetIP`, `Headless`; '' when absent). */
  readonly type: string;
  /** `spec.ips`, canonical. */
  readonly ips: readonly string[];
  readonly ports: readonly PortRec[];
}

/**
 * An EndpointSlice labelled `multicluster.kubernetes.io/service-name` (`multicluster`): the slice's
 * DNS data, with `service` read from that label instead of `kubernetes.io/service-name`.
 */
export interface McSliceRec extends SliceRec {
  /** Label `multicluster.kubernetes.io/source-cluster` ('' when missing). */
  readonly clusterId: string;
}

export type Kind = 'services' | 'endpointslices' | 'namespaces' | 'pods' | 'serviceimports' | 'mcslices';

export type RecOf<K extends Kind> = K extends 'services'
  ? ServiceRec
  : K extends 'endpointslices'
    ? SliceRec
    : K extends 'namespaces'
      ? NamespaceRec
      : K extends 'serviceimports'
        ? ImportRec
        : K extends 'mcslices'
          ? McSliceRec
          : PodRec;

export type PodMode = 'disabled' | 'insecure' | 'verified';
