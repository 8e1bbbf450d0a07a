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
 * A generator: Services are read from the index (the store, or the shared-memory copy in a query
 * thread) and written as records when the transfer asks for the next batch, about 64 records at a
 * time, so a transfer of a large cluster never holds more than one message (docs/plugins.md,
 * transfer); the Service keys in name order are the index's, kept between its changes
 * (sortedkeys.ts), not sorted per transfer.
 */
import { isIP } from 'node:net';
import type { Answer } from 'dns-packet';
import { Qtype } from '../../src/dns/constants.js';
import { ipv6ToBytes, toPacketName } from '../../src/dns/name.js';
import { copyBytes, WireName, WireRecordBatch } from '../../src/dns/recordbatch.js';
import type { TransferBatch } from '../../src/transfer.js';
import { addressCount, addressAt, ipv4At, parseIPv4 } from './addresses.js';
import { addressLabel, View, type Resolver } from './resolve.js';
import type { IndexReader } from './store.js';
import type { PortRec, ServiceRec, SliceRec } from './types.js';

function address(name: string, ip: string, ttl: number): Answer {
  return isIP(ip) === 4
    ? { name: toPacketName(name), type: 'A', class: 'IN', ttl, data: ip }
    : { name: toPacketName(name), type: 'AAAA', class: 'IN', ttl, data: ip };
}

/** CoreDNS's calcSRVWeight for `n` endpoints of equal weight: ⌊100 / n⌋, at least 1. */
export function srvWeight(n: number): number {
  return Math.max(1, Math.floor((100 / (100 * n)) * 100));
}

/** Is `s` a host name for a CNAME (msg.Service.HostType): anything that is not an IP address. */
function isHostName(s: string): boolean {
  return s !== '' && isIP(s) === 0;
}

/** Records yielded to the transfer plugin at a time: about one event-loop turn's worth. */
const BATCH_RECORDS = 64;

/**
 * One transfer's writer: the Services' records go straight into a {@link WireRecordBatch} in wire
 * form, their names assembled from wire pieces kept here (the zone, the Service's name, an
 * endpoint's, a port's), so a record costs no object or string of its own.
 */
class ZoneWriter {
  readonly batch = new WireRecordBatch();
  private readonly zone: WireName;
  /** `<svc>.<ns>.svc.<zone>` of the Service being written. */
  private readonly base = new WireName();
  /** `<endpoint>.<base>` of the endpoint being written. */
  private readonly host = new WireName();
  /** `_<port>._<proto>.<base>` of each named port of the Service or slice being written. */
  private readonly portNames: WireName[] = [];
  private readonly target = new WireName();

  constructor(
    zone: string,
    private readonly resolver: Resolver,
    private readonly ttl: number,
  ) {
    this.zone = new WireName().set(toPacketName(zone));
  }

  get full(): boolean {
    return this.batch.count >= BATCH_RECORDS;
  }

  setService(name: string, namespace: string): void {
    this.base.clear().labels(name).labels(namespace).labels('svc').end(this.zone);
  }

  /** The owner names of `ports`' named ones, in order (unnamed ports get none). */
  private setPorts(ports: readonly PortRec[]): void {
    let j = 0;
    for (const p of ports) {
      if (p.name === '') continue;
      if (j === this.portNames.length) this.portNames.push(new WireName());
      this.portNames[j++]!.clear().underscoreLabel(p.name).underscoreLabel(p.protocol).end(this.base);
    }
  }

  /** An A or AAAA record of `owner` for a canonical address; nothing for text that is neither. */
  private addressText(owner: WireName, ip: string): void {
    const v4 = parseIPv4(ip);
    if (v4 >= 0) return this.ipv4(owner, v4);
    const v6 = ipv6ToBytes(ip);
    if (v6 === undefined) return;
    this.batch.beginRecord(owner, Qtype.AAAA, this.ttl);
    this.batch.bytes(v6);
    this.batch.endRecord();
  }

  private ipv4(owner: WireName, n: number): void {
    this.batch.beginRecord(owner, Qtype.A, this.ttl);
    this.batch.ipv4(n);
    this.batch.endRecord();
  }

  private srv(owner: WireName, weight: number, port: number, target: WireName): void {
    const b = this.batch;
    b.beginRecord(owner, Qtype.SRV, this.ttl);
    b.uint16(0);
    b.uint16(weight);
    b.uint16(port);
    b.name(target);
    b.endRecord();
  }

  /** An ExternalName Service: a CNAME to its external name. */
  externalName(target: string): void {
    this.target.set(toPacketName(target));
    this.batch.beginRecord(this.base, Qtype.CNAME, this.ttl);
    this.batch.name(this.target);
    this.batch.endRecord();
  }

  /** A ClusterIP Service (or an import with IPs): its addresses, then the SRV records of each port. */
  clusterIP(ips: readonly string[], ports: readonly PortRec[]): void {
    for (const ip of ips) this.addressText(this.base, ip);
    this.setPorts(ports);
    let j = 0;
    for (const p of ports) {
      // Every port, named or not, as `svc.ns.svc.zone` SRV (peer-finder, coredns#823); named ports
      // also under `_proto._name.`.
      this.srv(this.base, 100, p.port, this.base);
      if (p.name !== '') this.srv(this.portNames[j++]!, 100, p.port, this.base);
    }
  }

  /**
   * Endpoint `i` of `s`: its address under the Service's name and under its own, then an SRV
   * record per named port of the slice (set by {@link slice}).
   */
  endpoint(s: SliceRec, i: number, weight: number): void {
    // IPv4 slices are packed numbers (addresses.ts): written without a string for the address.
    const v4 = typeof s.addresses === 'string' ? ipv4At(s.addresses, i) : -1;
    const own = this.resolver.endpointOwnName(s, i);
    if (own === null && v4 >= 0) setDashedIPv4(this.host, v4, this.base);
    else this.host.setPrefixed(own ?? addressLabel(addressAt(s.addresses, i)), this.base);
    if (v4 >= 0) {
      this.ipv4(this.base, v4);
      this.ipv4(this.host, v4);
    } else {
      const ip = addressAt(s.addresses, i);
      this.addressText(this.base, ip);
      this.addressText(this.host, ip);
    }
    let j = 0;
    for (const p of s.ports) if (p.name !== '') this.srv(this.portNames[j++]!, weight, p.port, this.host);
  }

  /** Before a slice's endpoints: the owner names of its named ports. */
  slice(s: SliceRec): void {
    this.setPorts(s.ports);
  }
}

/** `a-b-c-d.<suffix>`, the name of an endpoint by its IPv4 address, without a string for it. */
function setDashedIPv4(w: WireName, n: number, suffix: WireName): void {
  const b = w.bytes;
  let o = 1;
  for (let shift = 24; shift >= 0; shift -= 8) {
    const octet = (n >>> shift) & 255;
    if (octet >= 100) b[o++] = 0x30 + Math.floor(octet / 100);
    if (octet >= 10) b[o++] = 0x30 + (Math.floor(octet / 10) % 10);
    b[o++] = 0x30 + (octet % 10);
    if (shift > 0) b[o++] = 0x2d;
  }
  b[0] = o - 1;
  w.length = o + copyBytes(suffix.bytes, 0, suffix.length, b, o);
}

/**
 * A Service's records, written when they come from the Service itself (ClusterIP, ExternalName);
 * true when they come from its endpoints instead (headless), which the caller then walks.
 */
function writeService(w: ZoneWriter, svc: ServiceRec): boolean {
  if (svc.type === 'ExternalName') {
    if (isHostName(svc.externalName)) {
      w.setService(svc.name, svc.namespace);
      w.externalName(svc.externalName);
    }
    return false;
  }
  if (svc.type !== 'ClusterIP' && svc.type !== 'NodePort' && svc.type !== 'LoadBalancer') return false;
  w.setService(svc.name, svc.namespace);
  if (svc.headless || svc.clusterIPs.length === 0) return true;
  w.clusterIP(svc.clusterIPs, svc.ports);
  return false;
}

function* endpointRecords(w: ZoneWriter, slices: readonly SliceRec[]): Generator<WireRecordBatch> {
  for (const s of slices) {
    const n = addressCount(s.addresses);
    const weight = srvWeight(n);
    w.slice(s);
    for (let i = 0; i < n; i++) {
      w.endpoint(s, i, weight);
      // A Service of thousands of endpoints goes out in batches too.
      if (w.full) {
        yield w.batch;
        w.batch.reset();
      }
    }
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
): Generator<TransferBatch> {
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
  const w = new ZoneWriter(zone, resolver, ttl);
  // Sorted by name as CoreDNS does, an order the index keeps between changes (sortedkeys.ts): this
  // array stays as it is while the transfer runs; each Service is read when its turn comes, so one
  // removed since is left out and one changed since goes out as it is then.
  const keys = multicluster ? index.sortedImportKeys() : index.sortedServiceKeys();
  const exposed = (namespace: string): boolean =>
    (namespaces === null || namespaces.has(namespace)) && index.hasNamespace(namespace);
  for (const key of keys) {
    if (multicluster) {
      // xfr.go `transferMultiClusterServices`: an import by its IPs when it has any, else by the
      // endpoints of its multicluster slices.
      const imp = index.importByKey(key);
      if (imp === undefined || !exposed(imp.namespace)) continue;
      w.setService(imp.name, imp.namespace);
      if (imp.ips.length > 0) w.clusterIP(imp.ips, imp.ports);
      else yield* endpointRecords(w, index.mcSlicesOfImport(key));
    } else {
      const svc = index.serviceByKey(key);
      if (svc === undefined || !exposed(svc.namespace)) continue;
      if (writeService(w, svc)) yield* endpointRecords(w, index.slicesOfService(key));
    }
    if (w.full) {
      yield w.batch;
      w.batch.reset();
    }
  }
  if (w.batch.count > 0) yield w.batch;
  yield [soa];
}
