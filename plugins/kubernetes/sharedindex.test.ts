/**
 * The index in shared memory (sharedindex.ts, docs/multicore.md §2): after any sequence of
 * changes a query thread's reader answers every IndexReader call exactly as the main thread's
 * store does, and its listeners hear the same change keys.
 */
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/util/prng.js';
import { endpointColumns } from './convert.js';
import { SharedIndexReader, SharedIndexWriter } from './sharedindex.js';
import { EVERYTHING } from './changekeys.js';
import { serviceKey, Store, type IndexReader } from './store.js';
import type { ImportRec, McSliceRec, ServiceRec, SliceRec } from './types.js';

const NAMESPACES = ['default', 'kube-system', 'team-a'];
const SERVICES = ['web', 'db', 'cache', 'api', 'headless', 'gone'];

/** What answering reads of a record: the shared copy drops the resourceVersion and the trigger time. */
const answerFields = <R extends { resourceVersion: string }>(r: R): R => ({
  ...r,
  resourceVersion: '',
  ...('triggerTime' in r ? { triggerTime: null } : {}),
});

function every(reader: IndexReader, ips: readonly string[]): unknown {
  const out: Record<string, unknown> = {};
  for (const ns of NAMESPACES) {
    out[`n:${ns}`] = reader.hasNamespace(ns);
    for (const name of SERVICES) {
      const k = serviceKey(name, ns);
      const svc = reader.serviceByKey(k);
      out[`s:${k}`] = svc ? answerFields(svc) : null;
      // The slices of a service come in no particular order from either side.
      out[`e:${k}`] = reader
        .slicesOfService(k)
        .map((s) => JSON.stringify(answerFields(s)))
        .sort();
      const imp = reader.importByKey(k);
      out[`im:${k}`] = imp ? answerFields(imp) : null;
      out[`m:${k}`] = reader
        .mcSlicesOfImport(k)
        .map((s) => JSON.stringify(answerFields(s)))
        .sort();
    }
  }
  for (const ip of ips) {
    out[`i:${ip}`] = reader
      .servicesWithIP(ip)
      .map((s) => `${s.namespace}/${s.name}`)
      .sort();
    out[`a:${ip}`] = reader
      .slicesWithAddress(ip)
      .map((s) => `${s.namespace}/${s.name}`)
      .sort();
    out[`p:${ip}`] = reader
      .podsWithIP(ip)
      .map((p) => `${p.namespace}/${p.name}`)
      .sort();
    out[`x:${ip}`] = reader
      .servicesWithExternalIP(ip)
      .map((s) => `${s.namespace}/${s.name}`)
      .sort();
  }
  out['serial'] = reader.serial;
  out['externalSerial'] = reader.externalSerial;
  out['multiclusterSerial'] = reader.multiclusterSerial;
  out['importKeys'] = reader.importKeys().sort();
  return out;
}

/** A random change of a small cluster, so that the same objects are changed again and again. */
function randomChange(store: Store, rnd: () => number, ips: readonly string[], rv: () => string): void {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const some = (n: number): string[] => Array.from({ length: Math.floor(rnd() * n) }, () => pick(ips));
  const namespace = pick(NAMESPACES);
  const r = rnd();
  if (r < 0.25) {
    const headless = rnd() < 0.2;
    const svc: ServiceRec = {
      name: pick(SERVICES),
      namespace,
      resourceVersion: rv(),
      type: 'ClusterIP',
      clusterIPs: headless ? [] : [...new Set(some(3))],
      headless,
      externalName: '',
      ports: [{ name: 'http', port: 80 + Math.floor(rnd() * 3), protocol: 'TCP' }],
      externalIPs: [...new Set(some(2))],
    };
    store.upsert('services', svc);
  } else if (r < 0.5) {
    const addrs = [...new Set(some(5))];
    const s: SliceRec = {
      name: `${pick(SERVICES)}-${Math.floor(rnd() * 3)}`,
      namespace,
      resourceVersion: rv(),
      // A slice may move to another service (its label changed).
      service: pick(SERVICES),
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      ...endpointColumns(
        addrs.map((address, i) => ({ address, hostname: i % 2 ? `h${i}` : undefined, podName: `p${i}` })),
      ),
      triggerTime: null,
    };
    store.upsert('endpointslices', s);
  } else if (r < 0.58) {
    store.upsert('namespaces', { name: namespace, resourceVersion: rv() });
  } else if (r < 0.7) {
    store.upsert('pods', {
      name: `pod-${Math.floor(rnd() * 8)}`,
      namespace,
      resourceVersion: rv(),
      ips: [...new Set(some(2))],
    });
  } else if (r < 0.76) {
    // A ServiceImport (`multicluster`): its type and ports move the multicluster serial, its IPs not.
    const imp: ImportRec = {
      name: pick(SERVICES),
      namespace,
      resourceVersion: rv(),
      type: rnd() < 0.3 ? 'Headless' : 'ClusterSetIP',
      ips: [...new Set(some(2))],
      ports: [{ name: 'http', port: 80 + Math.floor(rnd() * 2), protocol: 'TCP' }],
    };
    store.upsert('serviceimports', imp);
  } else if (r < 0.84) {
    const addrs = [...new Set(some(4))];
    const s: McSliceRec = {
      name: `imported-${Math.floor(rnd() * 4)}`,
      namespace,
      resourceVersion: rv(),
      service: pick(SERVICES),
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      ...endpointColumns(addrs.map((address, i) => ({ address, hostname: i % 2 ? `h${i}` : undefined }))),
      triggerTime: null,
      clusterId: pick(['c1', 'c2']),
    };
    store.upsert('mcslices', s);
  } else {
    const kind = pick(['services', 'endpointslices', 'namespaces', 'pods', 'serviceimports', 'mcslices'] as const);
    const keys = [...store.keys(kind)];
    if (keys.length) store.remove(kind, pick(keys));
  }
}

describe('the index in shared memory', () => {
  for (const seed of [1, 2, 3, 4]) {
    it(`answers as the store after every change, through rebuilds (seed ${seed})`, () => {
      const rnd = seededRandom(seed);
      let n = 1000;
      const rv = (): string => String(n++);
      const ips = Array.from({ length: 12 }, (_, i) => `10.0.${i >> 2}.${i}`).concat(['fd00::1', 'fd00::2']);
      const store = new Store();
      let clock = 1_700_000_000_000;
      store.now = () => (clock += 1000);
      const writer = new SharedIndexWriter(store);
      const reader = new SharedIndexReader();
      const storeDeps: string[][] = [];
      const readerDeps: string[][] = [];
      // An empty change (a pod without IPs) invalidates nothing; the threads are not told of it.
      store.subscribe((d) => d.size && storeDeps.push([...d].sort()));
      reader.subscribe((d) => readerDeps.push([...d].sort()));
      reader.apply({ deps: [], serial: 0, externalSerial: 0, multiclusterSerial: 0, generation: writer.generation });
      let generations = 1;
      for (let step = 0; step < 1500; step++) {
        randomChange(store, rnd, ips, rv);
        const u = writer.flush();
        if (u) {
          if (u.generation) generations++;
          reader.apply(u);
        }
        expect(every(reader, ips), `step ${step}`).toEqual(every(store, ips));
      }
      // The same change keys reach a thread's answer cache as the main thread's.
      expect(readerDeps).toEqual(storeDeps);
      // Replaced entries filled the first generation's arena: the writer built new ones.
      expect(generations).toBeGreaterThan(1);
      writer.close();
    });
  }

  it('a relist (replace) touching most keys builds a new generation at once', () => {
    const store = new Store();
    const writer = new SharedIndexWriter(store);
    const before = writer.generation;
    const svcs: ServiceRec[] = Array.from({ length: 500 }, (_, i) => ({
      name: `s${i}`,
      namespace: 'default',
      resourceVersion: String(i + 1),
      type: 'ClusterIP',
      clusterIPs: [`10.1.${i >> 8}.${i & 255}`],
      headless: false,
      externalName: '',
      ports: [],
      externalIPs: [],
    }));
    store.replace('services', svcs);
    const u = writer.flush()!;
    expect(u.generation?.sab).toBeDefined();
    expect(u.generation!.sab).not.toBe(before.sab);
    const reader = new SharedIndexReader();
    reader.apply(u);
    expect(reader.serviceByKey('s499.default')?.clusterIPs).toEqual(['10.1.1.243']);
    expect(reader.servicesWithIP('10.1.0.7').map((s) => s.name)).toEqual(['s7']);
    // Nothing changed: nothing to tell.
    expect(writer.flush()).toBeNull();
  });

  it('a snapshot to a reader that already has an index drops every answer computed before', () => {
    const store = new Store();
    const writer = new SharedIndexWriter(store);
    const reader = new SharedIndexReader();
    const heard: ReadonlySet<string>[] = [];
    reader.subscribe((d) => heard.push(d));
    reader.apply({
      deps: [],
      serial: 0,
      externalSerial: 0,
      multiclusterSerial: 0,
      generation: writer.generation,
      snapshot: true,
    });
    // The first snapshot: nothing was computed yet, nothing to drop.
    expect(heard).toEqual([]);
    reader.apply({
      deps: [],
      serial: 0,
      externalSerial: 0,
      multiclusterSerial: 0,
      generation: writer.generation,
      snapshot: true,
    });
    expect(heard).toEqual([EVERYTHING]);
  });

  it('churn keeps the shared memory within a few times the live entries', () => {
    // 200 services with a 50-endpoint slice each, then 3,000 endpoint changes.
    const store = new Store();
    const writer = new SharedIndexWriter(store);
    const slice = (i: number, gen: number): SliceRec => ({
      name: `s${i}-abc`,
      namespace: 'default',
      resourceVersion: `${i}.${gen}`,
      service: `s${i}`,
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      ...endpointColumns(
        Array.from({ length: 50 }, (_, j) => ({
          address: `10.${i >> 4}.${(i & 15) * 16 + (j >> 4)}.${(j & 15) + (gen % 200)}`,
          podName: `p${j}`,
        })),
      ),
      triggerTime: null,
    });
    store.replace(
      'services',
      Array.from({ length: 200 }, (_, i) => ({
        name: `s${i}`,
        namespace: 'default',
        resourceVersion: String(i + 1),
        type: 'ClusterIP',
        clusterIPs: [`10.96.${i >> 8}.${i & 255}`],
        headless: false,
        externalName: '',
        ports: [],
        externalIPs: [],
      })),
    );
    store.replace(
      'endpointslices',
      Array.from({ length: 200 }, (_, i) => slice(i, 0)),
    );
    writer.flush();
    let worst = 0;
    for (let n = 1; n <= 3000; n++) {
      store.upsert('endpointslices', slice(n % 200, n));
      writer.flush();
      const st = writer.table.stats;
      worst = Math.max(worst, st.bytes / (st.liveBytes + (1 << 20)));
    }
    // Garbage is rebuilt away at twice the live bytes; a new generation has room for as much again.
    expect(worst).toBeLessThan(5);
  });
});
