/**
 * The index in shared memory, for query threads (docs/multicore.md §2). The main thread's
 * {@link Store} stays the source of truth; {@link SharedIndexWriter} keeps a copy of what answering
 * reads in a {@link SharedTableWriter} (one SharedArrayBuffer), updated from the store's change
 * keys, and each query thread reads it through {@link SharedIndexReader}, the same
 * {@link IndexReader} calls the main thread makes on its store. The threads hold no copy of the
 * index in their heaps: a record is decoded when an answer is computed, and the answer is what
 * stays (the handler's AnswerCache).
 *
 * One table entry per change key (changekeys.ts), under the key itself: a change key says which
 * entry to rewrite, and a reader finds an entry by the key an answer depends on. The values are
 * JSON arrays, positional to keep the table small (10,000 Services with their slices take 5.6 MB),
 * and hold only what answering reads (no resourceVersion):
 *   service    the service                 slices     its slices, whole (a slice is stored once)
 *   address    [services with that cluster IP, services with a slice holding that address]
 *   namespace  '1'                          pod        [namespace, name] of the pods with that IP
 *   external   services with that external address (k8s_external)
 *   import     the ServiceImport           mcslices   its multicluster slices, whole, with their cluster
 */
import { SharedTableReader, SharedTableWriter, type SharedTableGeneration } from '../../src/util/sharedtable.js';
import { addressCount, addressIs, type PackedAddresses } from './addresses.js';
import { changeKey, changeKeyParts, EVERYTHING, type ChangeKey, type ChangeListener } from './changekeys.js';
import { SortedKeys } from './sortedkeys.js';
import { serviceKey, type IndexReader, type PodRef, type Store } from './store.js';
import type { ImportRec, McSliceRec, PortRec, ServiceRec, SliceRec } from './types.js';

/** One change as it crosses to the query threads: the store's change keys, the serials, and a new generation when there is one. */
export interface SharedIndexUpdate {
  readonly deps: readonly ChangeKey[];
  readonly serial: number;
  readonly externalSerial: number;
  readonly multiclusterSerial: number;
  readonly generation?: SharedTableGeneration;
  /** A whole index (a subscription's start): whatever a reader computed before is dropped. */
  readonly snapshot?: true;
}

type PortRow = [string, number, string];
type ServiceRow = [string, string, string, readonly string[], 0 | 1, string, PortRow[], readonly string[]];
type SliceRow = [
  string,
  string,
  string,
  string,
  PortRow[],
  PackedAddresses,
  readonly string[] | null,
  readonly string[] | null,
  readonly string[] | null,
];

type ImportRow = [string, string, string, readonly string[], PortRow[]];
type McSliceRow = [...SliceRow, string];

const portRows = (ports: readonly PortRec[]): PortRow[] => ports.map((p) => [p.name, p.port, p.protocol]);
const portRecs = (rows: readonly PortRow[]): PortRec[] =>
  rows.map(([name, port, protocol]) => ({ name, port, protocol }));

function encodeService(s: ServiceRec): string {
  const row: ServiceRow = [
    s.name,
    s.namespace,
    s.type,
    s.clusterIPs,
    s.headless ? 1 : 0,
    s.externalName,
    portRows(s.ports),
    s.externalIPs,
  ];
  return JSON.stringify(row);
}

function decodeService(text: string): ServiceRec {
  const [name, namespace, type, clusterIPs, headless, externalName, ports, externalIPs] = JSON.parse(
    text,
  ) as ServiceRow;
  return {
    name,
    namespace,
    resourceVersion: '',
    type,
    clusterIPs,
    headless: headless === 1,
    externalName,
    ports: portRecs(ports),
    externalIPs,
  };
}

const sliceRow = (s: SliceRec): SliceRow => [
  s.name,
  s.namespace,
  s.service,
  s.addressType,
  portRows(s.ports),
  s.addresses,
  s.hostnames,
  s.podNames,
  s.zones,
];

function sliceRec([name, namespace, service, addressType, ports, addresses, hostnames, podNames, zones]:
  | SliceRow
  | McSliceRow): SliceRec {
  return {
    name,
    namespace,
    resourceVersion: '',
    service,
    addressType,
    ports: portRecs(ports),
    addresses,
    hostnames,
    podNames,
    zones,
    triggerTime: null,
  };
}

function encodeSlices(slices: readonly SliceRec[]): string {
  return JSON.stringify(slices.map(sliceRow));
}

function decodeSlices(text: string): SliceRec[] {
  return (JSON.parse(text) as SliceRow[]).map(sliceRec);
}

function encodeImport(i: ImportRec): string {
  const row: ImportRow = [i.name, i.namespace, i.type, i.ips, portRows(i.ports)];
  return JSON.stringify(row);
}

function decodeImport(text: string): ImportRec {
  const [name, namespace, type, ips, ports] = JSON.parse(text) as ImportRow;
  return { name, namespace, resourceVersion: '', type, ips, ports: portRecs(ports) };
}

function encodeMcSlices(slices: readonly McSliceRec[]): string {
  return JSON.stringify(slices.map((s): McSliceRow => [...sliceRow(s), s.clusterId]));
}

function decodeMcSlices(text: string): McSliceRec[] {
  return (JSON.parse(text) as McSliceRow[]).map((row) => ({ ...sliceRec(row), clusterId: row[9] }));
}

function holds(s: SliceRec, ip: string): boolean {
  for (let i = 0; i < addressCount(s.addresses); i++) if (addressIs(s.addresses, i, ip)) return true;
  return false;
}

export class SharedIndexWriter {
  readonly table = new SharedTableWriter();
  /** Change keys not yet written (the store reports them synchronously, {@link flush} writes them). */
  private pending = new Set<ChangeKey>();
  private readonly unsubscribe: () => void;
  private generationSent = true;
  private sentSerial = 0;
  private sentExternalSerial = 0;
  private sentMulticlusterSerial = 0;

  constructor(private readonly store: Store) {
    this.unsubscribe = store.subscribe((deps) => {
      for (const d of deps) this.pending.add(d);
    });
    this.rebuild();
  }

  get generation(): SharedTableGeneration {
    return this.table.generation;
  }

  close(): void {
    this.unsubscribe();
  }

  /**
   * Write the changes reported since the last flush, and return what the threads must be told
   * (null when nothing changed). A change too large for the current generation — or touching half
   * of the keys, as a relist does — builds a new one.
   */
  flush(): SharedIndexUpdate | null {
    const st = this.store;
    // A change can move the serial without touching a key (a pod without IPs comes or goes).
    if (
      this.pending.size === 0 &&
      st.serial === this.sentSerial &&
      st.externalSerial === this.sentExternalSerial &&
      st.multiclusterSerial === this.sentMulticlusterSerial
    )
      return null;
    this.sentSerial = st.serial;
    this.sentExternalSerial = st.externalSerial;
    this.sentMulticlusterSerial = st.multiclusterSerial;
    const deps = this.pending;
    this.pending = new Set();
    let rebuilt = deps.size > this.table.stats.keys / 2;
    try {
      if (!rebuilt) {
        const external = this.externalIndex();
        for (const d of deps) {
          if (!this.write(d, external)) {
            rebuilt = true;
            break;
          }
        }
      }
      // Replaced entries are garbage in resident pages: bounded at twice the live entries.
      rebuilt ||= this.table.wasteful;
      if (rebuilt) this.rebuild();
    } catch (e) {
      // Nothing is lost: the next flush writes these keys again.
      for (const d of deps) this.pending.add(d);
      throw e;
    }
    const generation = rebuilt || !this.generationSent ? this.table.generation : undefined;
    this.generationSent = true;
    return {
      deps: [...deps],
      serial: st.serial,
      externalSerial: st.externalSerial,
      multiclusterSerial: st.multiclusterSerial,
      ...(generation ? { generation } : {}),
    };
  }

  /** Write the entry of change key `d`; false when the generation is full. */
  private write(d: ChangeKey, external: () => ReadonlyMap<string, string[]>): boolean {
    const value = this.entry(d, external);
    return value === null ? this.table.delete(d) : this.table.set(d, value);
  }

  /**
   * The table entry of change key `d` as the store has it now (null: no entry). Incremental
   * writes and rebuilds both go through here, so both list records in the store's own order.
   * `external` is the services of every external address: the store keeps no index of them (it
   * scans, which the threads must not), so one scan serves a whole flush.
   */
  private entry(d: ChangeKey, external: () => ReadonlyMap<string, string[]>): string | null {
    const { kind, id } = changeKeyParts(d);
    const st = this.store;
    switch (kind) {
      case 'service': {
        const svc = st.services.get(id);
        return svc ? encodeService(svc) : null;
      }
      case 'slices': {
        const slices = st.slicesOfService(id);
        return slices.length ? encodeSlices(slices) : null;
      }
      case 'address': {
        const svcs = st.servicesWithIP(id).map((s) => serviceKey(s.name, s.namespace));
        const owners = [...new Set(st.slicesWithAddress(id).map((s) => serviceKey(s.service, s.namespace)))];
        return svcs.length || owners.length ? JSON.stringify([svcs, owners]) : null;
      }
      case 'namespace':
        return st.namespaces.has(id) ? '1' : null;
      case 'pod': {
        const pods = st.podsWithIP(id).map((p) => [p.namespace, p.name]);
        return pods.length ? JSON.stringify(pods) : null;
      }
      case 'external': {
        const svcs = external().get(id);
        return svcs ? JSON.stringify(svcs) : null;
      }
      case 'import': {
        const imp = st.imports.get(id);
        return imp ? encodeImport(imp) : null;
      }
      case 'mcslices': {
        const slices = st.mcSlicesOfImport(id);
        return slices.length ? encodeMcSlices(slices) : null;
      }
    }
  }

  /** Service keys by external address, in the store's order (what servicesWithExternalIP lists), made at the first call. */
  private externalIndex(): () => ReadonlyMap<string, string[]> {
    let byAddress: Map<string, string[]> | null = null;
    return () => {
      if (byAddress) return byAddress;
      byAddress = new Map();
      for (const [k, svc] of this.store.services) {
        for (const a of svc.externalIPs) {
          const list = byAddress.get(a);
          if (!list) byAddress.set(a, [k]);
          else if (!list.includes(k)) list.push(k);
        }
      }
      return byAddress;
    };
  }

  /** A new generation with the whole store. */
  private rebuild(): void {
    const changeKeys = this.store.changeKeys();
    const external = this.externalIndex();
    // Bytes: what the last generation held, or 150 a key for the first.
    const estimate = Math.max(this.table.stats.liveBytes, changeKeys.size * 150);
    this.table.rebuild(changeKeys.size, estimate, (set) => {
      for (const d of changeKeys) {
        const value = this.entry(d, external);
        if (value !== null) set(d, value);
      }
    });
    this.generationSent = false;
  }
}

const SERVICE_PREFIX = changeKey.service('');
const IMPORT_PREFIX = changeKey.import('');

/** A query thread's view of the main thread's index. */
export class SharedIndexReader implements IndexReader {
  serial = 0;
  externalSerial = 0;
  multiclusterSerial = 0;
  private table: SharedTableReader | null = null;
  private readonly listeners = new Set<ChangeListener>();
  /** Service and ServiceImport keys in transfer order (sortedkeys.ts), told of every key that changed. */
  private readonly serviceOrder = new SortedKeys();
  private readonly importOrder = new SortedKeys();

  /** Apply an update from the main thread, then tell the listeners (the answer caches) what changed. */
  apply(u: SharedIndexUpdate): void {
    const had = this.table !== null;
    if (u.generation || u.snapshot) {
      // A table written anew (rare): the next transfer sorts once.
      this.serviceOrder.reset();
      this.importOrder.reset();
    } else {
      for (const d of u.deps) {
        if (d.startsWith(SERVICE_PREFIX)) this.serviceOrder.changed(d.slice(SERVICE_PREFIX.length));
        else if (d.startsWith(IMPORT_PREFIX)) this.importOrder.changed(d.slice(IMPORT_PREFIX.length));
      }
    }
    if (u.generation) {
      if (this.table) this.table.adopt(u.generation);
      else this.table = new SharedTableReader(u.generation);
    }
    this.serial = u.serial;
    this.externalSerial = u.externalSerial;
    this.multiclusterSerial = u.multiclusterSerial;
    // A snapshot to a reader that already had an index (the index was offered again while this
    // thread stayed subscribed): the changes between the two are unknown.
    if (u.snapshot && had) {
      for (const fn of this.listeners) fn(EVERYTHING);
      return;
    }
    if (u.deps.length === 0) return;
    const deps = new Set(u.deps);
    for (const fn of this.listeners) fn(deps);
  }

  subscribe(fn: ChangeListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private json<T>(key: ChangeKey): T | undefined {
    const v = this.table?.get(key);
    return v === undefined ? undefined : (JSON.parse(v) as T);
  }

  private services(keys: readonly string[]): ServiceRec[] {
    const out: ServiceRec[] = [];
    for (const k of keys) {
      const s = this.serviceByKey(k);
      if (s) out.push(s);
    }
    return out;
  }

  serviceByKey(key: string): ServiceRec | undefined {
    const v = this.table?.get(changeKey.service(key));
    return v === undefined ? undefined : decodeService(v);
  }

  serviceKeys(): string[] {
    const prefix = changeKey.service('');
    return (this.table?.keys(prefix) ?? []).map((k) => k.slice(prefix.length));
  }

  sortedServiceKeys(): readonly string[] {
    return this.serviceOrder.sorted(
      () => this.serviceKeys(),
      (k) => this.table?.get(changeKey.service(k)) !== undefined,
    );
  }

  slicesOfService(key: string): SliceRec[] {
    const v = this.table?.get(changeKey.slices(key));
    return v === undefined ? [] : decodeSlices(v);
  }

  hasNamespace(ns: string): boolean {
    return this.table?.get(changeKey.namespace(ns)) !== undefined;
  }

  servicesWithIP(ip: string): ServiceRec[] {
    return this.services(this.json<[string[], string[]]>(changeKey.address(ip))?.[0] ?? []);
  }

  slicesWithAddress(ip: string): SliceRec[] {
    const out: SliceRec[] = [];
    for (const svc of this.json<[string[], string[]]>(changeKey.address(ip))?.[1] ?? [])
      for (const s of this.slicesOfService(svc)) if (holds(s, ip)) out.push(s);
    return out;
  }

  podsWithIP(ip: string): PodRef[] {
    return (this.json<[string, string][]>(changeKey.pod(ip)) ?? []).map(([namespace, name]) => ({ namespace, name }));
  }

  servicesWithExternalIP(ip: string): ServiceRec[] {
    return this.services(this.json<string[]>(changeKey.external(ip)) ?? []);
  }

  importByKey(key: string): ImportRec | undefined {
    const v = this.table?.get(changeKey.import(key));
    return v === undefined ? undefined : decodeImport(v);
  }

  importKeys(): string[] {
    const prefix = changeKey.import('');
    return (this.table?.keys(prefix) ?? []).map((k) => k.slice(prefix.length));
  }

  sortedImportKeys(): readonly string[] {
    return this.importOrder.sorted(
      () => this.importKeys(),
      (k) => this.table?.get(changeKey.import(k)) !== undefined,
    );
  }

  mcSlicesOfImport(key: string): McSliceRec[] {
    const v = this.table?.get(changeKey.mcslices(key));
    return v === undefined ? [] : decodeMcSlices(v);
  }
}
