import type { Answer } from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { Resolver } from './resolve.js';
import { SharedIndexReader, SharedIndexWriter } from './sharedindex.js';
import { baseConfig, fixtureStore } from './testutil.js';
import { kubernetesTransfer, srvWeight } from './xfr.js';

function text(a: Answer): string {
  const r = a as Answer & { ttl?: number; data?: unknown };
  return `${r.name}. ${r.ttl} ${r.type} ${JSON.stringify(r.data)}`;
}

describe('kubernetes zone transfer records', () => {
  const resolver = new Resolver(baseConfig());

  it("weights endpoint SRV records as CoreDNS's calcSRVWeight", () => {
    expect([1, 2, 3, 7, 100, 101, 1000].map(srvWeight)).toEqual([100, 50, 33, 14, 1, 1, 1]);
  });

  it('SOA first and last, then NS and ns.dns addresses, Services by name; the SOA alone for a current IXFR', () => {
    const store = fixtureStore();
    const all = [...kubernetesTransfer(store, resolver, 'cluster.local.', 0)].flat();
    expect(all[0]!.type).toBe('SOA');
    expect(all.at(-1)!.type).toBe('SOA');
    expect(all[1]).toMatchObject({ name: 'cluster.local', type: 'NS', ttl: 5 });
    // The server's own addresses follow the NS records, without a TTL (as CoreDNS builds them).
    const firstService = all.findIndex((x, i) => i > 1 && x.type !== 'NS' && (x as { ttl?: number }).ttl !== 0);
    expect(all.slice(2, firstService).every((x) => x.type === 'NS' || (x as { ttl?: number }).ttl === 0)).toBe(true);
    // Services in name order: the owners `name.namespace.svc.cluster.local` of their address records.
    const services = all
      .filter((x) => (x.type === 'A' || x.type === 'AAAA') && (x as { ttl?: number }).ttl === 5)
      .filter((x) => /^[^.]+\.[^.]+\.svc\.cluster\.local$/.test(x.name))
      .map((x) => x.name.split('.')[0]!);
    expect(services.length).toBeGreaterThan(3);
    expect(services).toEqual([...services].sort());
    expect(all.some((a) => a.type === 'PTR')).toBe(false);
    const ixfr = [...kubernetesTransfer(store, resolver, 'cluster.local.', store.serial)].flat();
    expect(ixfr.map((a) => a.type)).toEqual(['SOA']);
  });

  it('reads the same records from a query thread’s shared index as from the store', () => {
    const store = fixtureStore();
    const writer = new SharedIndexWriter(store);
    const reader = new SharedIndexReader();
    reader.apply({
      deps: [],
      serial: store.serial,
      externalSerial: 0,
      multiclusterSerial: 0,
      generation: writer.generation,
    });
    expect(reader.serviceKeys().sort()).toEqual(store.serviceKeys().sort());
    const fromStore = [...kubernetesTransfer(store, resolver, 'cluster.local.', 0)].flat().map(text);
    const fromThread = [...kubernetesTransfer(reader, resolver, 'cluster.local.', 0)].flat().map(text);
    expect(fromThread).toEqual(fromStore);
    writer.close();
  });
});
