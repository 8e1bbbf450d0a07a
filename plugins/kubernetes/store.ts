/**
 * The object index behind the plugin: slim Services, EndpointSlices, Namespaces and Pods with the
 * secondary indexes DNS needs (docs/records.md §8.2): services by `name.namespace` and by
 * cluster IP, slices by `service.namespace` and by address, pods by IP; with `multicluster`
 * (§8.4) also ServiceImports by `name.namespace` and their EndpointSlices by import. Fed one event at a time
 * (`upsert`/`remove`) or by a whole relist (`replace`, which diffs); every change reports the
 * change keys it touched to the listeners (the answer caches, the shared-memory copy), and bumps
 * the SOA serial per §3.3. The keys are changekeys.ts's.
 */
import { addressAt, addressCount, AddressIndex, MultiIndex } from './addresses.js';
import { changeKey, type ChangeKey, type ChangeListener } from './changekeys.js';
import { SortedKeys } from './sortedkeys.js';
import type {
  ImportRec,
  Kind,
  McSliceRec,
  NamespaceRec,
  PodRec,
  PortRec,
  RecOf,
  ServiceRec,
  SliceRec,
} from './types.js';

/** A pod as the answers need it: who holds an IP. */
export interface PodRef {
  readonly namespace: string;
  readonly name: string;
}

/**
 * What answering reads of the index. The main thread reads its {@link Store}; a query thread reads
 * the main thread's index in shared memory (sharedindex.ts) through the same calls.
 */
export interface IndexReader {
  /** Zone serial (§3.3). */
  readonly serial: number;
  /** Serial of k8s_external zones. */
  readonly externalSerial: number;
  /** Serial of multicluster zones (§8.4). */
  readonly multiclusterSerial: number;
  /** Be told the change keys of every change; returns the unsubscribe. */
  subscribe(fn: ChangeListener): () => void;
  serviceByKey(key: string): ServiceRec | undefined;
  /** The {@link serviceKey} of every Service (for zone transfers: a walk over the whole index). */
  serviceKeys(): string[];
  /**
   * {@link serviceKeys} in zone-transfer order (sortedkeys.ts), kept until Services are added or
   * removed; the array is never changed afterwards.
   */
  sortedServiceKeys(): readonly string[];
  /** The slices of the service with {@link serviceKey} `key`. */
  slicesOfService(key: string): SliceRec[];
  hasNamespace(ns: string): boolean;
  /** Services with `ip` among their cluster IPs. */
  servicesWithIP(ip: string): ServiceRec[];
  /** Slices with `ip` among their ready addresses. */
  slicesWithAddress(ip: string): SliceRec[];
  /** Pods with `ip` among their IPs. */
  podsWithIP(ip: string): PodRef[];
  /** Services with `ip` among their external addresses (k8s_external). */
  servicesWithExternalIP(ip: string): ServiceRec[];
  /** The ServiceImport with {@link serviceKey} `key` (`multicluster`). */
  importByKey(key: string): ImportRec | undefined;
  /** The {@link serviceKey} of every ServiceImport (zone transfers). */
  importKeys(): string[];
  /** {@link importKeys} in zone-transfer order, as {@link sortedServiceKeys}. */
  sortedImportKeys(): readonly string[];
  /** The multicluster EndpointSlices of the ServiceImport with {@link serviceKey} `key`. */
  mcSlicesOfImport(key: string): McSliceRec[];
}

function samePorts(a: readonly PortRec[], b: readonly PortRec[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((p, i) => p.name === b[i]!.name && p.port === b[i]!.port && p.protocol === b[i]!.protocol);
}

/** What of a slice is DNS data, as text: a change bumps the SOA serial (§3.3). */
function readySignature(s: SliceRec, withZone: boolean): string {
  // Columns hold DNS names and label values: no ',' or newline inside an entry.
  const cols = [
    typeof s.addresses === 'string' ? s.addresses : s.addresses.join(','),
    s.hostnames?.join(',') ?? '',
    s.podNames?.join(',') ?? '',
  ];
  if (withZone) cols.push(s.zones?.join(',') ?? '');
  return cols.join('\n');
}

/** A replacement of one kind's content in progress ({@link Store.beginReplace}). */
export interface Replacing<K extends Kind> {
  /** One list page's records, in list order. */
  page(recs: readonly RecOf<K>[]): void;
  /** The list is complete: remove the records no page held. */
  finish(): void;
}

export function serviceKey(name: string, ns: string): string {
  return `${name}.${ns}`;
}

export function objKey(rec: { name: string; namespace?: string }): string {
  return rec.namespace ? `${rec.namespace}/${rec.name}` : rec.name;
}

export class Store implements IndexReader {
  readonly services = new Map<string, ServiceRec>();
  readonly servicesByIP = new AddressIndex();
  readonly slices = new Map<string, SliceRec>();
  readonly slicesByService = new MultiIndex();
  readonly slicesByAddr = new AddressIndex();
  readonly namespaces = new Map<string, NamespaceRec>();
  readonly pods = new Map<string, PodRec>();
  readonly podsByIP = new AddressIndex();
  readonly imports = new Map<string, ImportRec>();
  readonly mcSlices = new Map<string, McSliceRec>();
  readonly mcSlicesByImport = new MultiIndex();
  /** Zone serial (§3.3): Unix seconds of the last DNS-relevant change; 0 until the first one. */
  serial = 0;
  /**
   * Serial of k8s_external zones: Unix seconds of the last update of a Service that changed its
   * external addresses or ports (CoreDNS bumps it on updates only, not on adds and deletes).
   */
  externalSerial = 0;
  /**
   * Serial of multicluster zones: Unix seconds of the last update of a ServiceImport or a
   * multicluster EndpointSlice that changed its DNS data. As in CoreDNS 1.15.0, adding or deleting
   * one bumps the cluster zone's {@link serial} instead (its informers' Add and Delete handlers).
   */
  multiclusterSerial = 0;
  private readonly listeners = new Set<ChangeListener>();
  private pending: Set<ChangeKey> | null = null;
  /** Service and ServiceImport keys in transfer order, told of every key added or removed. */
  private readonly serviceOrder = new SortedKeys();
  private readonly importOrder = new SortedKeys();
  /** Clock, replaceable by tests. */
  now: () => number = () => Date.now();

  /** `zonal`: an endpoint's topology zone is DNS data (serial bumps on zone changes, §3.3). */
  constructor(readonly zonal = false) {}

  subscribe(fn: ChangeListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private bump(): void {
    this.serial = Math.floor(this.now() / 1000) >>> 0;
  }

  private bumpMulticluster(): void {
    this.multiclusterSerial = Math.floor(this.now() / 1000) >>> 0;
  }

  /** Group the notifications of several changes into one (used for a relist). */
  batch(fn: () => void): void {
    const outer = this.pending === null;
    if (outer) this.pending = new Set();
    try {
      fn();
    } finally {
      if (outer) {
        const deps = this.pending!;
        this.pending = null;
        if (deps.size) this.emit(deps);
      }
    }
  }

  private touch(deps: ChangeKey[]): void {
    if (this.pending) {
      for (const d of deps) this.pending.add(d);
      return;
    }
    this.emit(new Set(deps));
  }

  private emit(deps: ReadonlySet<ChangeKey>): void {
    for (const l of this.listeners) l(deps);
  }

  /** Current records of a kind, by object key (`ns/name`, or `name` for namespaces). */
  keys(kind: Kind): IterableIterator<string> {
    switch (kind) {
      case 'services': {
        const out: string[] = [];
        for (const s of this.services.values()) out.push(objKey(s));
        return out.values();
      }
      case 'endpointslices':
        return this.slices.keys();
      case 'namespaces':
        return this.namespaces.keys();
      case 'pods':
        return this.pods.keys();
      case 'serviceimports': {
        const out: string[] = [];
        for (const s of this.imports.values()) out.push(objKey(s));
        return out.values();
      }
      case 'mcslices':
        return this.mcSlices.keys();
    }
  }

  getRV(kind: Kind, key: string): string | undefined {
    switch (kind) {
      case 'services': {
        const [ns, name] = key.split('/') as [string, string];
        return this.services.get(serviceKey(name, ns))?.resourceVersion;
      }
      case 'endpointslices':
        return this.slices.get(key)?.resourceVersion;
      case 'namespaces':
        return this.namespaces.get(key)?.resourceVersion;
      case 'pods':
        return this.pods.get(key)?.resourceVersion;
      case 'serviceimports': {
        const [ns, name] = key.split('/') as [string, string];
        return this.imports.get(serviceKey(name, ns))?.resourceVersion;
      }
      case 'mcslices':
        return this.mcSlices.get(key)?.resourceVersion;
    }
  }

  upsert<K extends Kind>(kind: K, rec: RecOf<K>): void {
    switch (kind) {
      case 'services':
        return this.upsertService(rec as ServiceRec);
      case 'endpointslices':
        return this.upsertSlice(rec as SliceRec);
      case 'namespaces':
        return this.upsertNamespace(rec as NamespaceRec);
      case 'pods':
        return this.upsertPod(rec as PodRec);
      case 'serviceimports':
        return this.upsertImport(rec as ImportRec);
      case 'mcslices':
        return this.upsertMcSlice(rec as McSliceRec);
    }
  }

  /** Remove by object key (`ns/name`, or `name` for namespaces). */
  remove(kind: Kind, key: string): void {
    switch (kind) {
      case 'services': {
        const [ns, name] = key.split('/') as [string, string];
        return this.removeService(serviceKey(name, ns));
      }
      case 'endpointslices':
        return this.removeSlice(key);
      case 'namespaces':
        return this.removeNamespace(key);
      case 'pods':
        return this.removePod(key);
      case 'serviceimports': {
        const [ns, name] = key.split('/') as [string, string];
        return this.removeImport(serviceKey(name, ns));
      }
      case 'mcslices':
        return this.removeMcSlice(key);
    }
  }

  /** Replace the whole content of a kind (after a list): upserts, then deletes for vanished keys. */
  replace<K extends Kind>(kind: K, recs: readonly RecOf<K>[]): void {
    this.batch(() => {
      const r = this.beginReplace(kind);
      r.page(recs);
      r.finish();
    });
  }

  /**
   * Replace the whole content of a kind one list page at a time (a relist while serving): each
   * page is upserted as it arrives — a record whose resourceVersion the index already holds is
   * dropped at once — and `finish` removes what no page held. The index never holds a second copy
   * of the kind: what stays alive besides it is one page and the set of keys not listed yet (the
   * index's own key strings). Until `finish`, the kind is the old content with the listed records
   * brought up to date, which is what a watch event would have done to it; a list that fails
   * before `finish` leaves that state for the next list to complete.
   */
  beginReplace<K extends Kind>(kind: K): Replacing<K> {
    const unseen = new Set(this.keys(kind));
    return {
      page: (recs) =>
        this.batch(() => {
          for (const r of recs) {
            unseen.delete(objKey(r as { name: string; namespace?: string }));
            this.upsert(kind, r);
          }
        }),
      finish: () =>
        this.batch(() => {
          for (const k of unseen) this.remove(kind, k);
          unseen.clear();
        }),
    };
  }

  private upsertService(s: ServiceRec): void {
    const key = serviceKey(s.name, s.namespace);
    const old = this.services.get(key);
    if (old && old.resourceVersion === s.resourceVersion && s.resourceVersion !== '') return;
    const deps = [changeKey.service(key)];
    if (old) {
      for (const ip of old.clusterIPs) {
        this.servicesByIP.delete(ip, key);
        deps.push(changeKey.address(ip));
      }
      const portsChanged = !samePorts(old.ports, s.ports);
      const externalChanged = old.externalIPs.join(',') !== s.externalIPs.join(',');
      if (old.externalName !== s.externalName || portsChanged) this.bump();
      if (portsChanged || externalChanged) this.externalSerial = Math.floor(this.now() / 1000) >>> 0;
      // The addresses it lost and those it gained (both lists whole: a reordering only rewrites
      // entries that stay the same).
      if (externalChanged)
        for (const a of new Set([...old.externalIPs, ...s.externalIPs])) deps.push(changeKey.external(a));
    } else {
      this.bump();
      for (const a of s.externalIPs) deps.push(changeKey.external(a));
      this.serviceOrder.changed(key);
    }
    this.services.set(key, s);
    for (const ip of s.clusterIPs) {
      this.servicesByIP.add(ip, key);
      deps.push(changeKey.address(ip));
    }
    this.touch(deps);
  }

  private removeService(key: string): void {
    const old = this.services.get(key);
    if (!old) return;
    this.services.delete(key);
    this.serviceOrder.changed(key);
    const deps = [changeKey.service(key)];
    for (const ip of old.clusterIPs) {
      this.servicesByIP.delete(ip, key);
      deps.push(changeKey.address(ip));
    }
    for (const a of old.externalIPs) deps.push(changeKey.external(a));
    this.bump();
    this.touch(deps);
  }

  private unindexSlice(key: string, s: SliceRec, deps: string[]): void {
    this.slicesByService.delete(serviceKey(s.service, s.namespace), key);
    deps.push(changeKey.slices(serviceKey(s.service, s.namespace)));
    for (let i = 0; i < addressCount(s.addresses); i++) {
      const a = addressAt(s.addresses, i);
      this.slicesByAddr.delete(a, key);
      deps.push(changeKey.address(a));
    }
  }

  private upsertSlice(s: SliceRec): void {
    const key = objKey(s);
    const old = this.slices.get(key);
    if (old && old.resourceVersion === s.resourceVersion && s.resourceVersion !== '') return;
    const deps: ChangeKey[] = [];
    if (old) {
      this.unindexSlice(key, old, deps);
      if (
        readySignature(old, this.zonal) !== readySignature(s, this.zonal) ||
        !samePorts(old.ports, s.ports) ||
        old.service !== s.service
      )
        this.bump();
    } else {
      this.bump();
    }
    this.slices.set(key, s);
    this.slicesByService.add(serviceKey(s.service, s.namespace), key);
    deps.push(changeKey.slices(serviceKey(s.service, s.namespace)));
    for (let i = 0; i < addressCount(s.addresses); i++) {
      const a = addressAt(s.addresses, i);
      this.slicesByAddr.add(a, key);
      deps.push(changeKey.address(a));
    }
    this.touch(deps);
  }

  private removeSlice(key: string): void {
    const old = this.slices.get(key);
    if (!old) return;
    this.slices.delete(key);
    const deps: ChangeKey[] = [];
    this.unindexSlice(key, old, deps);
    this.bump();
    this.touch(deps);
  }

  private upsertNamespace(n: NamespaceRec): void {
    const old = this.namespaces.get(n.name);
    this.namespaces.set(n.name, n);
    if (!old) this.touch([changeKey.namespace(n.name)]);
  }

  private removeNamespace(name: string): void {
    if (!this.namespaces.delete(name)) return;
    this.touch([changeKey.namespace(name)]);
  }

  private upsertPod(p: PodRec): void {
    const key = objKey(p);
    const old = this.pods.get(key);
    if (old && old.resourceVersion === p.resourceVersion && p.resourceVersion !== '') return;
    const deps: ChangeKey[] = [];
    if (old) {
      for (const ip of old.ips) {
        this.podsByIP.delete(ip, key);
        deps.push(changeKey.pod(ip));
      }
      if (old.ips.join(',') !== p.ips.join(',')) this.bump();
    } else {
      this.bump();
    }
    this.pods.set(key, p);
    for (const ip of p.ips) {
      this.podsByIP.add(ip, key);
      deps.push(changeKey.pod(ip));
    }
    this.touch(deps);
  }

  private removePod(key: string): void {
    const old = this.pods.get(key);
    if (!old) return;
    this.pods.delete(key);
    for (const ip of old.ips) this.podsByIP.delete(ip, key);
    this.bump();
    this.touch(old.ips.map(changeKey.pod));
  }

  private upsertImport(imp: ImportRec): void {
    const key = serviceKey(imp.name, imp.namespace);
    const old = this.imports.get(key);
    if (old && old.resourceVersion === imp.resourceVersion && imp.resourceVersion !== '') return;
    // CoreDNS's serviceImportEquivalent compares the type and the ports, not the IPs.
    if (!old) this.bump();
    else if (old.type !== imp.type || !samePorts(old.ports, imp.ports)) this.bumpMulticluster();
    if (!old) this.importOrder.changed(key);
    this.imports.set(key, imp);
    this.touch([changeKey.import(key)]);
  }

  private removeImport(key: string): void {
    if (!this.imports.delete(key)) return;
    this.importOrder.changed(key);
    this.bump();
    this.touch([changeKey.import(key)]);
  }

  private upsertMcSlice(s: McSliceRec): void {
    const key = objKey(s);
    const old = this.mcSlices.get(key);
    if (old && old.resourceVersion === s.resourceVersion && s.resourceVersion !== '') return;
    const deps: ChangeKey[] = [changeKey.mcslices(serviceKey(s.service, s.namespace))];
    if (old) {
      this.mcSlicesByImport.delete(serviceKey(old.service, old.namespace), key);
      deps.push(changeKey.mcslices(serviceKey(old.service, old.namespace)));
      if (
        readySignature(old, false) !== readySignature(s, false) ||
        !samePorts(old.ports, s.ports) ||
        old.service !== s.service ||
        old.clusterId !== s.clusterId
      )
        this.bumpMulticluster();
    } else {
      this.bump();
    }
    this.mcSlices.set(key, s);
    this.mcSlicesByImport.add(serviceKey(s.service, s.namespace), key);
    this.touch(deps);
  }

  private removeMcSlice(key: string): void {
    const old = this.mcSlices.get(key);
    if (!old) return;
    this.mcSlices.delete(key);
    this.mcSlicesByImport.delete(serviceKey(old.service, old.namespace), key);
    this.bump();
    this.touch([changeKey.mcslices(serviceKey(old.service, old.namespace))]);
  }

  importByKey(key: string): ImportRec | undefined {
    return this.imports.get(key);
  }

  importKeys(): string[] {
    return [...this.imports.keys()];
  }

  sortedImportKeys(): readonly string[] {
    return this.importOrder.sorted(
      () => this.imports.keys(),
      (k) => this.imports.has(k),
    );
  }

  mcSlicesOfImport(key: string): McSliceRec[] {
    return this.recordsOf(this.mcSlicesByImport.get(key), this.mcSlices);
  }

  serviceKeys(): string[] {
    return [...this.services.keys()];
  }

  sortedServiceKeys(): readonly string[] {
    return this.serviceOrder.sorted(
      () => this.services.keys(),
      (k) => this.services.has(k),
    );
  }

  serviceByKey(key: string): ServiceRec | undefined {
    return this.services.get(key);
  }

  slicesOfService(key: string): SliceRec[] {
    return this.recordsOf(this.slicesByService.get(key), this.slices);
  }

  hasNamespace(ns: string): boolean {
    return this.namespaces.has(ns);
  }

  servicesWithIP(ip: string): ServiceRec[] {
    return this.recordsOf(this.servicesByIP.get(ip), this.services);
  }

  slicesWithAddress(ip: string): SliceRec[] {
    return this.recordsOf(this.slicesByAddr.get(ip), this.slices);
  }

  podsWithIP(ip: string): PodRef[] {
    return this.recordsOf(this.podsByIP.get(ip), this.pods).filter((p) => p.ips.includes(ip));
  }

  servicesWithExternalIP(ip: string): ServiceRec[] {
    // k8s_external's reverse lookups only: a scan, not an index kept on every update.
    const out: ServiceRec[] = [];
    for (const s of this.services.values()) if (s.externalIPs.includes(ip)) out.push(s);
    return out;
  }

  /**
   * Every dependency key the current contents could report (the same keys `upsert*` touch): what
   * a copy of the whole index is made of (sharedindex.ts).
   */
  changeKeys(): Set<ChangeKey> {
    const out = new Set<ChangeKey>();
    for (const [k, svc] of this.services) {
      out.add(changeKey.service(k));
      for (const ip of svc.clusterIPs) out.add(changeKey.address(ip));
      for (const a of svc.externalIPs) out.add(changeKey.external(a));
    }
    for (const sl of this.slices.values()) {
      out.add(changeKey.slices(serviceKey(sl.service, sl.namespace)));
      for (let i = 0; i < addressCount(sl.addresses); i++) out.add(changeKey.address(addressAt(sl.addresses, i)));
    }
    for (const ns of this.namespaces.keys()) out.add(changeKey.namespace(ns));
    for (const p of this.pods.values()) for (const ip of p.ips) out.add(changeKey.pod(ip));
    for (const k of this.imports.keys()) out.add(changeKey.import(k));
    for (const s of this.mcSlices.values()) out.add(changeKey.mcslices(serviceKey(s.service, s.namespace)));
    return out;
  }

  private recordsOf<R>(keys: Iterable<string> | undefined, from: ReadonlyMap<string, R>): R[] {
    const out: R[] = [];
    if (keys)
      for (const k of keys) {
        const r = from.get(k);
        if (r) out.push(r);
      }
    return out;
  }

  /** True when a pod with this key is cached (deleting pods stay until their delete event). */
  hasPod(key: string): boolean {
    return this.pods.has(key);
  }

  /** Namespace of the pod with `ip` among its IPs (autopath, §9.2), or undefined. */
  podNamespace(ip: string): string | undefined {
    return this.podsWithIP(ip)[0]?.namespace;
  }
}
