/**
 * The index in shared memory, for query threads (docs/multicore.md §2). The main thread's
 * {@link Store} stays the source of truth; {@link SharedIndexWriter} keeps a copy of what answering
 * reads in a {@link SharedTableWriter} (one SharedArrayBuffer), updated from the store's change
 * keys, and each query thread reads it through {@link SharedIndexReader}, the same
 * {@link IndexReader} calls the main thread makes on its store. The threads hold no copy of the
 * index in their heaps: a record is decoded when an answer is computed, and the answer is what
 * stays (the handler's AnswerCache).
 *
 * Table keys; the values are JSON arrays, positional to keep the table small (10,000 Services with
 * their slices take about 4 MB), and hold only what answering reads (no resourceVersion):
 *   `s:<svc>` a service                   `e:<svc>` its slices, whole (a slice is stored once)
 *   `i:<ip>`  [services with that cluster IP, services with a slice holding that address]
 *   `n:<ns>`  a namespace ('1')           `p:<ip>`  [namespace, name] of the pods with that IP
 *   `x:<ip>`  services with that external address (k8s_external)
 */
import { SharedTableReader, SharedTableWriter, type SharedTableGeneration } from '../../src/util/sharedtable.js';
import { addressAt, addressCount, addressIs, type PackedAddresses } from './addresses.js';
import { serviceKey, type ChangeListener, type IndexReader, type PodRef, type Store } from './store.js';
import type { PortRec, ServiceRec, SliceRec } from './types.js';

/** One change as it crosses to the query threads: the store's change keys, the serials, and a new generation when there is one. */
export interface SharedIndexUpdate {
  readonly deps: readonly string[];
  readonly serial: number;
  readonly externalSerial: number;
  readonly generation?: SharedTableGeneration;
}

type PortRow = [string, number, string];
type ServiceRow = [string, string, string, readonly string[], 0 | 1, string, PortRow[], readonly string[]];
type SliceRow = [string, string, string, string, PortRow[], PackedAddresses, readonly string[] | null, readonly string[] | null, readonly string[] | null];

const portRows = (ports: readonly PortRec[]): PortRow[] => ports.map((p) => [p.name, p.port, p.protocol]);
const portRecs = (rows: readonly PortRow[]): PortRec[] => rows.map(([name, port, protocol]) => ({ name, port, protocol }));

function encodeService(s: ServiceRec): string {
  const row: ServiceRow = [s.name, s.namespace, s.type, s.clusterIPs, s.headless ? 1 : 0, s.externalName, portRows(s.ports), s.externalIPs];
  return JSON.stringify(row);
}

function decodeService(text: string): ServiceRec {
  const [name, namespace, type, clusterIPs, headless, externalName, ports, externalIPs] = JSON.parse(text) as ServiceRow;
  return { name, namespace, resourceVersion: '', type, clusterIPs, headless: headless === 1, externalName, ports: portRecs(ports), externalIPs };
}

function encodeSlices(slices: readonly SliceRec[]): string {
  return JSON.stringify(slices.map((s): SliceRow => [s.name, s.namespace, s.service, s.addressType, portRows(s.ports), s.addresses, s.hostnames, s.podNames, s.zones]));
}

function decodeSlices(text: string): SliceRec[] {
  return (JSON.parse(text) as SliceRow[]).map(([name, namespace, service, addressType, ports, addresses, hostnames, podNames, zones]) => ({
    name, namespace, resourceVersion: '', service, addressType, ports: portRecs(ports), addresses, hostnames, podNames, zones, triggerTime: null,
  }));
}

function holds(s: SliceRec, ip: string): boolean {
  for (let i = 0; i < addressCount(s.addresses); i++) if (addressIs(s.addresses, i, ip)) return true;
  return false;
}

export class SharedIndexWriter {
  readonly table = new SharedTableWriter();
  /** Change keys not yet written (the store reports them synchronously, {@link flush} writes them). */
  private pending = new Set<string>();
  /** Services by external address: the store keeps no such index (it scans; here the threads must not). */
  private readonly byExternalIP = new Map<string, Set<string>>();
  private readonly externalOf = new Map<string, readonly string[]>();
  private readonly unsubscribe: () => void;
  private generationSent = true;
  private sentSerial = 0;
  private sentExternalSerial = 0;

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
    if (this.pending.size === 0 && st.serial === this.sentSerial && st.externalSerial === this.sentExternalSerial) return null;
    this.sentSerial = st.serial;
    this.sentExternalSerial = st.externalSerial;
    const deps = this.pending;
    this.pending = new Set();
    let rebuilt = deps.size > this.table.stats.keys / 2;
    if (!rebuilt) {
      for (const d of deps) {
        if (!this.write(d)) {
          rebuilt = true;
          break;
        }
      }
    }
    if (rebuilt) this.rebuild();
    const generation = rebuilt || !this.generationSent ? this.table.generation : undefined;
    this.generationSent = true;
    return { deps: [...deps], serial: st.serial, externalSerial: st.externalSerial, ...(generation ? { generation } : {}) };
  }

  /** Write what change key `d` covers; false when the generation is full. */
  private write(d: string): boolean {
    const colon = d.indexOf(':');
    const kind = d.slice(0, colon);
    const k = d.slice(colon + 1);
    const st = this.store;
    const t = this.table;
    switch (kind) {
      case 's': {
        const svc = st.services.get(k);
        if (!this.writeExternal(k, svc?.externalIPs ?? [])) return false;
        return svc ? t.set(d, encodeService(svc)) : t.delete(d);
      }
      case 'e': {
        const slices = st.slicesOfService(k);
        return slices.length ? t.set(d, encodeSlices(slices)) : t.delete(d);
      }
      case 'ip': {
        const svcs = st.servicesWithIP(k).map((s) => serviceKey(s.name, s.namespace));
        const owners = [...new Set(st.slicesWithAddress(k).map((s) => serviceKey(s.service, s.namespace)))];
        return svcs.length || owners.length ? t.set(`i:${k}`, JSON.stringify([svcs, owners])) : t.delete(`i:${k}`);
      }
      case 'n':
        return st.namespaces.has(k) ? t.set(d, '1') : t.delete(d);
      case 'p': {
        const pods = st.podsWithIP(k).map((p) => [p.namespace, p.name]);
        return pods.length ? t.set(d, JSON.stringify(pods)) : t.delete(d);
      }
      default:
        throw new Error(`unknown index change key ${d}`);
    }
  }

  private setKeys(key: string, keys: string[]): boolean {
    return keys.length ? this.table.set(key, JSON.stringify(keys)) : this.table.delete(key);
  }

  /** Keep `x:<ip>` in step with service `k`'s external addresses. */
  private writeExternal(k: string, ips: readonly string[]): boolean {
    const old = this.externalOf.get(k) ?? [];
    if (old.length === ips.length && old.every((ip, i) => ip === ips[i])) return true;
    for (const ip of old) this.byExternalIP.get(ip)?.delete(k);
    for (const ip of ips) {
      let set = this.byExternalIP.get(ip);
      if (!set) this.byExternalIP.set(ip, (set = new Set()));
      set.add(k);
    }
    if (ips.length) this.externalOf.set(k, ips);
    else this.externalOf.delete(k);
    for (const ip of new Set([...old, ...ips])) {
      const set = this.byExternalIP.get(ip);
      if (!set?.size) this.byExternalIP.delete(ip);
      if (!this.setKeys(`x:${ip}`, set?.size ? [...set] : [])) return false;
    }
    return true;
  }

  /** A new generation with the whole store. */
  private rebuild(): void {
    const st = this.store;
    this.byExternalIP.clear();
    this.externalOf.clear();
    for (const [k, s] of st.services) {
      if (!s.externalIPs.length) continue;
      this.externalOf.set(k, s.externalIPs);
      for (const ip of s.externalIPs) {
        let set = this.byExternalIP.get(ip);
        if (!set) this.byExternalIP.set(ip, (set = new Set()));
        set.add(k);
      }
    }
    // Sized from the last generation's live bytes (a first guess of 150 bytes a key without one).
    const keys = 2 * st.services.size + st.slices.size + st.namespaces.size + st.pods.size + this.byExternalIP.size;
    const stats = this.table.stats;
    const estimate = Math.max(stats.liveBytes, keys * 150);
    this.table.rebuild(keys, estimate, (set) => {
      const byIP = new Map<string, [string[], string[]]>();
      const at = (ip: string): [string[], string[]] => {
        let e = byIP.get(ip);
        if (!e) byIP.set(ip, (e = [[], []]));
        return e;
      };
      for (const [k, s] of st.services) {
        set(`s:${k}`, encodeService(s));
        for (const ip of s.clusterIPs) at(ip)[0].push(k);
      }
      const bySvc = new Map<string, SliceRec[]>();
      for (const s of st.slices.values()) {
        const svc = serviceKey(s.service, s.namespace);
        const list = bySvc.get(svc);
        if (list) list.push(s);
        else bySvc.set(svc, [s]);
        for (let i = 0; i < addressCount(s.addresses); i++) {
          const owners = at(addressAt(s.addresses, i))[1];
          if (!owners.includes(svc)) owners.push(svc);
        }
      }
      for (const [svc, list] of bySvc) set(`e:${svc}`, encodeSlices(list));
      for (const [ip, e] of byIP) set(`i:${ip}`, JSON.stringify(e));
      for (const ns of st.namespaces.keys()) set(`n:${ns}`, '1');
      const pods = new Map<string, [string, string][]>();
      for (const p of st.pods.values()) {
        for (const ip of p.ips) {
          const list = pods.get(ip);
          if (list) list.push([p.namespace, p.name]);
          else pods.set(ip, [[p.namespace, p.name]]);
        }
      }
      for (const [ip, list] of pods) set(`p:${ip}`, JSON.stringify(list));
      for (const [ip, ks] of this.byExternalIP) set(`x:${ip}`, JSON.stringify([...ks]));
    });
    this.generationSent = false;
  }
}

/** A query thread's view of the main thread's index. */
export class SharedIndexReader implements IndexReader {
  serial = 0;
  externalSerial = 0;
  private table: SharedTableReader | null = null;
  private readonly listeners = new Set<ChangeListener>();

  /** Apply an update from the main thread, then tell the listeners (the answer caches) what changed. */
  apply(u: SharedIndexUpdate): void {
    if (u.generation) {
      if (this.table) this.table.adopt(u.generation);
      else this.table = new SharedTableReader(u.generation);
    }
    this.serial = u.serial;
    this.externalSerial = u.externalSerial;
    if (u.deps.length === 0) return;
    const deps = new Set(u.deps);
    for (const fn of this.listeners) fn(deps);
  }

  subscribe(fn: ChangeListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private json<T>(key: string): T | undefined {
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
    const v = this.table?.get(`s:${key}`);
    return v === undefined ? undefined : decodeService(v);
  }

  slicesOfService(key: string): SliceRec[] {
    const v = this.table?.get(`e:${key}`);
    return v === undefined ? [] : decodeSlices(v);
  }

  hasNamespace(ns: string): boolean {
    return this.table?.get(`n:${ns}`) !== undefined;
  }

  servicesWithIP(ip: string): ServiceRec[] {
    return this.services(this.json<[string[], string[]]>(`i:${ip}`)?.[0] ?? []);
  }

  slicesWithAddress(ip: string): SliceRec[] {
    const out: SliceRec[] = [];
    for (const svc of this.json<[string[], string[]]>(`i:${ip}`)?.[1] ?? []) for (const s of this.slicesOfService(svc)) if (holds(s, ip)) out.push(s);
    return out;
  }

  podsWithIP(ip: string): PodRef[] {
    return (this.json<[string, string][]>(`p:${ip}`) ?? []).map(([namespace, name]) => ({ namespace, name }));
  }

  servicesWithExternalIP(ip: string): ServiceRec[] {
    return this.services(this.json<string[]>(`x:${ip}`) ?? []);
  }
}
