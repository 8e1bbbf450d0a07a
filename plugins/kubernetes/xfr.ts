/**
 * The kubernetes zone as a zone transfer (CoreDNS 1.15.0 plugin/kubernetes/xfr.go): the SOA, the
 * NS record and addresses of the server itself, then per Service (sorted by name): a ClusterIP
 * Service's A/AAAA and SRV records, a headless Service's records per ready endpoint of each
 * EndpointSlice, an ExternalName Service's CNAME; the SOA again. What CoreDNS leaves out stays out:
 * pod records, reverse zones, PTR, Services without endpoints, ExternalNames that are IPs.
 *
 * A multicluster zone (docs/records.md §8.4) lists ServiceImports instead: an import with IPs as a
 * ClusterIP Service, one without by the endpoints of its multicluster EndpointSlices — named
 * `<endpoint>.<svc>.<ns>.svc.<zone>`, without the cluster label the queries use, and with the
 * cluster zone's serial in the SOA, both as CoreDNS 1.15.0 does.
 *
 * A generator: one Service is read from the index (the store, or the shared-memory copy in a query
 * thread) and turned into records when the transfer asks for the next batch, so a transfer of a
 * large cluster never holds more than one message (docs/plugins.md, transfer); the Service keys in
 * name order are the index's, kept between its changes (sortedkeys.ts), not sorted per transfer.
 */
import { isIP } from 'node:net';
import type { Answer } from 'dns-packet';
import { toPacketName } from '../../src/dns/name.js';
import { addressAt, addressCount } from './addresses.js';
import { join, View, type Resolver } from './resolve.js';
import type { IndexReader } from './store.js';
import type { ImportRec, PortRec, ServiceRec, SliceRec } from './types.js';

function address(name: string, ip: string, ttl: number): Answer {
  return isIP(ip) === 4
    ? { name: toPacketName(name), type: 'A', class: 'IN', ttl, data: ip }
    : { name: toPacketName(name), type: 'AAAA', class: 'IN', ttl, data: ip };
}

function srv(name: string, weight: number, port: number, target: string, ttl: number): Answer {
  return {
    name: toPacketName(name),
    type: 'SRV',
    class: 'IN',
    ttl,
    data: { priority: 0, weight, port: port & 0xffff, target: toPacketName(target) },
  };
}

/** `_<name>._<protocol>.` of a named port (lower-cased, as CoreDNS builds the key). */
function portPrefix(p: PortRec): string {
  return `_${p.name.toLowerCase()}._${p.protocol.toLowerCase()}.`;
}

/** CoreDNS's calcSRVWeight for `n` endpoints of equal weight: ⌊100 / n⌋, at least 1. */
export function srvWeight(n: number): number {
  return Math.max(1, Math.floor((100 / (100 * n)) * 100));
}

/** Is `s` a host name for a CNAME (msg.Service.HostType): anything that is not an IP address. */
function isHostName(s: string): boolean {
  return s !== '' && isIP(s) === 0;
}

function* serviceRecords(
  svc: ServiceRec,
  slices: () => SliceRec[],
  resolver: Resolver,
  zone: string,
  ttl: number,
): Generator<Answer[]> {
  const base = join(`${svc.name}.${svc.namespace}.svc`, zone);
  if (svc.type === 'ExternalName') {
    if (isHostName(svc.externalName)) {
      const target = svc.externalName.endsWith('.') ? svc.externalName : `${svc.externalName}.`;
      yield [{ name: toPacketName(base), type: 'CNAME', class: 'IN', ttl, data: toPacketName(target) }];
    }
    return;
  }
  if (svc.type !== 'ClusterIP' && svc.type !== 'NodePort' && svc.type !== 'LoadBalancer') return;
  if (!svc.headless && svc.clusterIPs.length > 0) {
    yield clusterIPRecords(base, svc.clusterIPs, svc.ports, ttl);
    return;
  }
  yield* endpointRecords(base, slices(), resolver, ttl);
}

function clusterIPRecords(base: string, ips: readonly string[], ports: readonly PortRec[], ttl: number): Answer[] {
  const out: Answer[] = [];
  for (const ip of ips) out.push(address(base, ip, ttl));
  for (const p of ports) {
    // Every port, named or not, as `svc.ns.svc.zone` SRV (peer-finder, coredns#823); named ports
    // also under `_proto._name.`.
    out.push(srv(base, 100, p.port, base, ttl));
    if (p.name !== '') out.push(srv(portPrefix(p) + base, 100, p.port, base, ttl));
  }
  return out;
}

function* endpointRecords(
  base: string,
  slices: readonly SliceRec[],
  resolver: Resolver,
  ttl: number,
): Generator<Answer[]> {
  for (const s of slices) {
    const n = addressCount(s.addresses);
    const weight = srvWeight(n);
    const out: Answer[] = [];
    for (let i = 0; i < n; i++) {
      const ip = addressAt(s.addresses, i);
      out.push(address(base, ip, ttl));
      const host = `${resolver.endpointName(s, i)}.${base}`;
      out.push(address(host, ip, ttl));
      for (const p of s.ports) if (p.name !== '') out.push(srv(portPrefix(p) + base, weight, p.port, host, ttl));
    }
    if (out.length > 0) yield out;
  }
}

/**
 * The records of a transfer of `zone` (one of the plugin's zones, lower-case), or the SOA alone
 * when `serial` is the index's current serial.
 */
export function* kubernetesTransfer(
  index: IndexReader,
  resolver: Resolver,
  zone: string,
  serial: number,
): Generator<Answer[]> {
  const ttl = resolver.cfg.ttl;
  const soa = resolver.soa(zone, index.serial);
  if (serial !== 0 && index.serial === serial) {
    yield [soa];
    return;
  }
  yield [soa];
  const view = new View(index, null);
  const ns = resolver.nsAddrs(view, zone);
  const hosts = new Set<string>();
  for (const a of ns) {
    if (hosts.has(a.name)) continue;
    hosts.add(a.name);
    yield [{ name: toPacketName(zone), type: 'NS', class: 'IN', ttl, data: toPacketName(a.name) }];
  }
  // CoreDNS builds these records without a TTL.
  yield ns.map((a) => address(a.name, a.ip, 0));
  const namespaces = resolver.cfg.namespaces;
  const multicluster = resolver.isMulticluster(zone);
  // Sorted by name as CoreDNS does, an order the index keeps between changes (sortedkeys.ts): this
  // array stays as it is while the transfer runs; each Service is read when its turn comes, so one
  // removed since is left out and one changed since goes out as it is then.
  const keys = multicluster ? index.sortedImportKeys() : index.sortedServiceKeys();
  for (const key of keys) {
    const namespace = key.slice(key.lastIndexOf('.') + 1);
    if (namespaces !== null && !namespaces.has(namespace)) continue;
    if (!index.hasNamespace(namespace)) continue;
    if (multicluster) {
      const imp = index.importByKey(key);
      if (imp !== undefined) yield* importRecords(imp, () => index.mcSlicesOfImport(key), resolver, zone, ttl);
      continue;
    }
    const svc = index.serviceByKey(key);
    if (svc === undefined) continue;
    yield* serviceRecords(svc, () => index.slicesOfService(key), resolver, zone, ttl);
  }
  yield [soa];
}

/** xfr.go `transferMultiClusterServices` for one import: by its IPs when it has any, else its endpoints. */
function* importRecords(
  imp: ImportRec,
  slices: () => SliceRec[],
  resolver: Resolver,
  zone: string,
  ttl: number,
): Generator<Answer[]> {
  const base = join(`${imp.name}.${imp.namespace}.svc`, zone);
  if (imp.ips.length > 0) {
    yield clusterIPRecords(base, imp.ips, imp.ports, ttl);
    return;
  }
  yield* endpointRecords(base, slices(), resolver, ttl);
}
