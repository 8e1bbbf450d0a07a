import type { Answer } from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { Resolver } from './resolve.js';
import { SharedIndexReader, SharedIndexWriter } from './sharedindex.js';
import { compareServiceKeys, SortedKeys } from './sortedkeys.js';
import type { Store } from './store.js';
import { baseConfig, fixtureStore } from './testutil.js';
import type { ServiceRec } from './types.js';
import { batchAnswers, transferAnswers } from '../../src/transfer.js';
import { kubernetesTransfer } from './xfr.js';

/** The order transfers used when each sorted its own copy: name, then namespace, by `<`. */
function byNameThenNamespace(a: string, b: string): number {
  const [an, ans] = [a.slice(0, a.lastIndexOf('.')), a.slice(a.lastIndexOf('.') + 1)];
  const [bn, bns] = [b.slice(0, b.lastIndexOf('.')), b.slice(b.lastIndexOf('.') + 1)];
  return an < bn ? -1 : an > bn ? 1 : ans < bns ? -1 : ans > bns ? 1 : 0;
}

function clusterIP(namespace: string, name: string, ip: string): ServiceRec {
  return {
    name,
    namespace,
    resourceVersion: '',
    type: 'ClusterIP',
    clusterIPs: [ip],
    headless: false,
    externalName: '',
    ports: [],
    externalIPs: [],
  };
}

/** The `name.namespace` of the Services with address records in a transfer, in transfer order. */
function servicesIn(records: readonly Answer[]): string[] {
  const names = records
    // TTL 0: the server's own addresses after the NS records, not a Service of the walk.
    .filter((r) => r.type === 'A' && r.ttl !== 0 && /^[^.]+\.[^.]+\.svc\.cluster\.local$/.test(r.name))
    .map((r) => r.name.split('.').slice(0, 2).join('.'));
  // A headless Service has one such record per endpoint, all in a row.
  return [...new Set(names)];
}

/** The store's object key (`namespace/name`) of service key `name.namespace`. */
function objectKey(key: string): string {
  const dot = key.lastIndexOf('.');
  return `${key.slice(dot + 1)}/${key.slice(0, dot)}`;
}

/** A deterministic pseudo-random sequence (a test must give the same keys every run). */
function lcg(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

describe('service keys in transfer order', () => {
  const resolver = new Resolver(baseConfig());

  it('orders by name, then namespace, as the per-transfer sort did', () => {
    const keys = ['a.b', 'a-b.a', 'ab.a', 'a.ab', 'a.a', 'b.a', 'a0.z', 'a.a-b', 'zz.a', 'z.zz'];
    expect([...keys].sort(compareServiceKeys)).toEqual([...keys].sort(byNameThenNamespace));
    for (const a of keys)
      for (const b of keys) expect(Math.sign(compareServiceKeys(a, b))).toBe(Math.sign(byNameThenNamespace(a, b)));
  });

  it('merges added and removed keys into the kept order, and never changes an order handed out', () => {
    const order = new SortedKeys();
    const present = new Set<string>();
    const rand = lcg(27);
    const name = () => `s${Math.floor(rand() * 300)}.ns${Math.floor(rand() * 4)}`;
    for (let i = 0; i < 200; i++) present.add(name());
    const sorted = () =>
      order.sorted(
        () => present,
        (k) => present.has(k),
      );
    const handedOut: { order: readonly string[]; copy: string[] }[] = [];
    for (let round = 0; round < 40; round++) {
      const got = sorted();
      expect(got).toEqual([...present].sort(byNameThenNamespace));
      handedOut.push({ order: got, copy: [...got] });
      // A few changes, as between two transfers: adds, removes, and a key reported twice.
      for (let c = Math.floor(rand() * 6); c > 0; c--) {
        const k = name();
        if (present.has(k) && rand() < 0.5) present.delete(k);
        else present.add(k);
        order.changed(k);
        if (rand() < 0.3) order.changed(k);
      }
    }
    for (const h of handedOut) expect(h.order).toEqual(h.copy);
    // Nothing changed since the last call: the same array, no new work.
    expect(sorted()).toBe(sorted());
  });

  it('a transfer lists Services added and leaves out those removed between two transfers', () => {
    const store = fixtureStore();
    const first = servicesIn([...transferAnswers(kubernetesTransfer(store, resolver, 'cluster.local.', 0))].flat());
    expect(first).toEqual([...first].sort(byNameThenNamespace));
    store.upsert('services', clusterIP('testns', 'aaa-first', '10.96.7.1'));
    store.upsert('services', clusterIP('default', 'zzz-last', '10.96.7.2'));
    store.remove('services', objectKey(first[0]!));
    const second = servicesIn([...transferAnswers(kubernetesTransfer(store, resolver, 'cluster.local.', 0))].flat());
    expect(second).toEqual(['aaa-first.testns', ...first.slice(1), 'zzz-last.default']);
    expect(store.sortedServiceKeys()).toEqual(store.serviceKeys().sort(byNameThenNamespace));
  });

  it('a transfer in progress keeps the Services of its start: none added, a removed one left out', () => {
    const store = fixtureStore();
    // Enough Services for several batches (a batch is about 64 records), so that the last one is
    // read after the first went out.
    for (let i = 0; i < 200; i++) store.upsert('services', clusterIP('testns', `many-${i}`, `10.96.8.${i}`));
    const whole = servicesIn([...transferAnswers(kubernetesTransfer(store, resolver, 'cluster.local.', 0))].flat());
    expect(whole.length).toBeGreaterThan(3);
    const transfer = kubernetesTransfer(store, resolver, 'cluster.local.', 0)[Symbol.iterator]();
    const pulled: Answer[] = [];
    // Pull until the first Service went out (the key order is taken when the Services begin).
    while (servicesIn(pulled).length === 0) {
      const r = transfer.next();
      expect(r.done).toBe(false);
      pulled.push(...batchAnswers(r.value));
    }
    const last = whole.at(-1)!;
    store.remove('services', objectKey(last));
    store.upsert('services', clusterIP('testns', 'aaa-added', '10.96.7.3'));
    store.upsert('services', clusterIP('testns', 'zzz-added', '10.96.7.4'));
    // The order the next transfer gets is rebuilt; the one in progress is not changed by it.
    expect(store.sortedServiceKeys()).toContain('zzz-added.testns');
    for (let r = transfer.next(); !r.done; r = transfer.next()) pulled.push(...batchAnswers(r.value));
    expect(servicesIn(pulled)).toEqual(whole.slice(0, -1));
    expect(pulled.at(-1)!.type).toBe('SOA');
  });

  it('a query thread keeps the same order from the change keys it is sent', () => {
    const store: Store = fixtureStore();
    const writer = new SharedIndexWriter(store);
    const reader = new SharedIndexReader();
    reader.apply({
      deps: [],
      serial: store.serial,
      externalSerial: 0,
      multiclusterSerial: 0,
      generation: writer.generation,
    });
    expect(reader.sortedServiceKeys()).toEqual(store.sortedServiceKeys());
    for (let i = 0; i < 5; i++) {
      store.upsert('services', clusterIP(i % 2 === 0 ? 'testns' : 'default', `added-${i}`, `10.96.8.${i}`));
      if (i === 2) store.remove('services', 'testns/added-0');
      const u = writer.flush();
      // After the first flush (which hands over the generation the writer built at its start),
      // written into the same table: the reader merges the keys it is told of.
      if (i > 0) expect(u?.generation).toBeUndefined();
      reader.apply(u!);
      expect(reader.sortedServiceKeys()).toEqual(store.sortedServiceKeys());
      expect(reader.sortedServiceKeys()).toEqual(reader.serviceKeys().sort(byNameThenNamespace));
    }
    // A change to most keys at once makes the writer build a new table generation: the reader
    // drops its order and sorts the new table once.
    const before = reader.sortedServiceKeys();
    for (let i = 0; i < 60; i++) store.upsert('services', clusterIP('default', `bulk-${i}`, `10.96.9.${i}`));
    const u = writer.flush();
    expect(u?.generation).toBeDefined();
    reader.apply(u!);
    expect(reader.sortedServiceKeys()).toEqual(store.sortedServiceKeys());
    expect(reader.sortedServiceKeys()).toHaveLength(before.length + 60);
    // ServiceImports keep an order of their own, the same way.
    const imp = (namespace: string, name: string) => ({
      name,
      namespace,
      resourceVersion: '',
      type: 'ClusterSetIP',
      ips: ['10.96.10.1'],
      ports: [],
    });
    store.upsert('serviceimports', imp('testns', 'zeta'));
    store.upsert('serviceimports', imp('default', 'alpha'));
    reader.apply(writer.flush()!);
    expect(store.sortedImportKeys()).toEqual(['alpha.default', 'zeta.testns']);
    expect(reader.sortedImportKeys()).toEqual(['alpha.default', 'zeta.testns']);
    store.remove('serviceimports', 'default/alpha');
    store.upsert('serviceimports', imp('kube-system', 'mid'));
    reader.apply(writer.flush()!);
    expect(store.sortedImportKeys()).toEqual(['mid.kube-system', 'zeta.testns']);
    expect(reader.sortedImportKeys()).toEqual(['mid.kube-system', 'zeta.testns']);
    writer.close();
  });
});
