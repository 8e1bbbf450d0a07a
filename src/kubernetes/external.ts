/**
 * What the `k8s_external` plugin reads from the `kubernetes` plugin of its server block: a
 * read-only view of the kubernetes plugin's own watch index (no second watch), offered with
 * `ctx.provide(KUBERNETES_EXTERNAL, …)` by the kubernetes plugin and looked up by k8s_external in
 * its handler factory (docs/ARCHITECTURE.md, "Capabilities"). It mirrors CoreDNS's `Externaler`
 * (plugin/kubernetes/external.go) at the level of index reads: the record logic stays in
 * k8s_external.
 *
 * All reads are synchronous against the live index; names are compared as stored (Kubernetes object
 * names are lower case).
 */
import { capability } from '../capabilities.js';
import type { Message } from '../dns/message.js';
import type { Query } from '../query.js';

/** One port of a Service or of an endpoint set. `port` is -1 for the "no ports" sentinel. */
export interface ExternalPort {
  readonly name: string;
  readonly port: number;
  /** As written (`TCP`, `UDP`, `SCTP`; '' when absent). */
  readonly protocol: string;
}

export interface ExternalServiceView {
  readonly name: string;
  readonly namespace: string;
  /** `clusterIP: None`. */
  readonly headless: boolean;
  /** `spec.ports`, or the one-entry sentinel `{ port: -1 }` when the Service declares none. */
  readonly ports: readonly ExternalPort[];
  /**
   * The external addresses, in CoreDNS's order: `spec.externalIPs` as written, then one entry per
   * `status.loadBalancer.ingress` (its `ip`, or its `hostname` when it has no IP).
   */
  readonly externalIPs: readonly string[];
}

/** One ready endpoint address of a Service, with the ports of its endpoint set. */
export interface ExternalEndpoint {
  readonly address: string;
  /** The endpoint's DNS label as the kubernetes plugin names it (hostname, pod name or dashed IP). */
  readonly hostname: string;
  /** The set's ports, or the sentinel `{ port: -1 }` when it declares none. */
  readonly ports: readonly ExternalPort[];
}

export interface KubernetesExternal {
  /** The kubernetes plugin's `ttl` (CoreDNS gives it to SRV and CNAME records of the external zone). */
  readonly ttl: number;
  /** The namespace may be answered for: allowed by `namespaces` and present in the cluster. */
  namespaceExposed(namespace: string): boolean;
  /** The Service `name` in `namespace`, or undefined. */
  service(name: string, namespace: string): ExternalServiceView | undefined;
  /** The ready endpoints of a Service (for `headless`). */
  endpoints(name: string, namespace: string): ExternalEndpoint[];
  /** Services having `ip` among their external addresses, in exposed namespaces (PTR). */
  servicesByExternalIP(ip: string): ExternalServiceView[];
  /**
   * The addresses of this DNS server as seen from outside (CoreDNS `nsAddrs(external=true)`): the
   * external IPs of the Services whose endpoints are this server's own IPs (the endpoint IPs for a
   * headless Service when `headless`), or this server's own non-loopback IPs when none is found.
   */
  dnsAddresses(headless: boolean): string[];
  /**
   * The serial of external zones: Unix seconds of the last change to a Service's external addresses
   * or ports seen as an update; 0 until the first such update (as CoreDNS's `extModified`).
   */
  serial(): number;
  /**
   * Resolve `name`/`qtype` through the whole server again, as CoreDNS's `upstream.Lookup` does (for
   * the targets of load-balancer hostnames). Null when no reply came.
   */
  upstream(q: Query, name: string, qtype: number): Promise<Message | null>;
}

export const KUBERNETES_EXTERNAL = capability<KubernetesExternal>('kubernetes.external');
