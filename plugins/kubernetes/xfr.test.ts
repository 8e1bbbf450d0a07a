import type { Answer } from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { Resolver } from './resolve.js';
import { SharedIndexReader, SharedIndexWriter } from './sharedindex.js';
import { packAddresses } from './addresses.js';
import { Store } from './store.js';
import { baseConfig, fixtureStore } from './testutil.js';
import type { PortRec, ServiceRec, SliceRec } from './types.js';
import { transferAnswers } from '../../src/transfer.js';
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
    const all = [...transferAnswers(kubernetesTransfer(store, resolver, 'cluster.local.', 0))].flat();
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
    const ixfr = [...transferAnswers(kubernetesTransfer(store, resolver, 'cluster.local.', store.serial))].flat();
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
    const fromStore = [...transferAnswers(kubernetesTransfer(store, resolver, 'cluster.local.', 0))].flat().map(text);
    const fromThread = [...transferAnswers(kubernetesTransfer(reader, resolver, 'cluster.local.', 0))].flat().map(text);
    expect(fromThread).toEqual(fromStore);
    writer.close();
  });

  describe('every record shape, written in wire form', () => {
    const port = (name: string, p: number, protocol = 'TCP'): PortRec => ({ name, port: p, protocol });
    const service = (name: string, over: Partial<ServiceRec>): ServiceRec => ({
      name,
      namespace: 'ns1',
      resourceVersion: '1',
      type: 'ClusterIP',
      clusterIPs: [],
      headless: false,
      externalName: '',
      ports: [],
      externalIPs: [],
      ...over,
    });
    const slice = (svc: string, addrs: string[], over: Partial<SliceRec> = {}): SliceRec => ({
      name: `${svc}-abc`,
      namespace: 'ns1',
      resourceVersion: '1',
      service: svc,
      addressType: addrs[0]!.includes(':') ? 'IPv6' : 'IPv4',
      ports: [],
      addresses: packAddresses(addrs),
      hostnames: null,
      podNames: null,
      zones: null,
      triggerTime: null,
      ...over,
    });
    function store(): Store {
      const st = new Store();
      st.upsert('namespaces', { name: 'ns1', resourceVersion: '1' });
      st.upsert(
        'services',
        service('dual', { clusterIPs: ['10.96.0.20', 'fd00::20'], ports: [port('HTTP', 80), port('', 8080, 'UDP')] }),
      );
      st.upsert('services', service('ext', { type: 'ExternalName', externalName: 'example.org' }));
      st.upsert('services', service('ext-ip', { type: 'ExternalName', externalName: '192.0.2.1' }));
      st.upsert('services', service('hl', { headless: true }));
      st.upsert(
        'endpointslices',
        slice('hl', ['10.244.0.10', '10.244.1.2'], {
          ports: [port('dns', 53, 'UDP'), port('', 9)],
          hostnames: ['web-0', ''],
          podNames: ['pod-a', 'pod.with.dots'],
        }),
      );
      st.upsert('services', service('hl6', { headless: true }));
      st.upsert('endpointslices', slice('hl6', ['fd00::1', 'fd00:1::'], { ports: [port('grpc', 443)] }));
      st.upsert('services', service('np', { type: 'NodePort', clusterIPs: ['10.96.0.21'] }));
      return st;
    }
    const services = (r: Resolver, zone = 'cluster.local.'): string[] =>
      [...transferAnswers(kubernetesTransfer(store(), r, zone, 0))]
        .flat()
        .filter((a) => a.type !== 'SOA' && a.type !== 'NS' && (a as { ttl?: number }).ttl !== 0)
        .map(text);

    it('ClusterIP (both families), ExternalName, headless by hostname or address, IPv6, named and unnamed ports', () => {
      expect(services(resolver)).toEqual([
        'dual.ns1.svc.cluster.local. 5 A "10.96.0.20"',
        'dual.ns1.svc.cluster.local. 5 AAAA "fd00::20"',
        'dual.ns1.svc.cluster.local. 5 SRV {"priority":0,"weight":100,"port":80,"target":"dual.ns1.svc.cluster.local"}',
        '_http._tcp.dual.ns1.svc.cluster.local. 5 SRV {"priority":0,"weight":100,"port":80,"target":"dual.ns1.svc.cluster.local"}',
        'dual.ns1.svc.cluster.local. 5 SRV {"priority":0,"weight":100,"port":8080,"target":"dual.ns1.svc.cluster.local"}',
        'ext.ns1.svc.cluster.local. 5 CNAME "example.org"',
        'hl.ns1.svc.cluster.local. 5 A "10.244.0.10"',
        'web-0.hl.ns1.svc.cluster.local. 5 A "10.244.0.10"',
        '_dns._udp.hl.ns1.svc.cluster.local. 5 SRV {"priority":0,"weight":50,"port":53,"target":"web-0.hl.ns1.svc.cluster.local"}',
        'hl.ns1.svc.cluster.local. 5 A "10.244.1.2"',
        '10-244-1-2.hl.ns1.svc.cluster.local. 5 A "10.244.1.2"',
        '_dns._udp.hl.ns1.svc.cluster.local. 5 SRV {"priority":0,"weight":50,"port":53,"target":"10-244-1-2.hl.ns1.svc.cluster.local"}',
        'hl6.ns1.svc.cluster.local. 5 AAAA "fd00::1"',
        'fd00--1.hl6.ns1.svc.cluster.local. 5 AAAA "fd00::1"',
        '_grpc._tcp.hl6.ns1.svc.cluster.local. 5 SRV {"priority":0,"weight":50,"port":443,"target":"fd00--1.hl6.ns1.svc.cluster.local"}',
        'hl6.ns1.svc.cluster.local. 5 AAAA "fd00:1::"',
        'fd00-1--0.hl6.ns1.svc.cluster.local. 5 AAAA "fd00:1::"',
        '_grpc._tcp.hl6.ns1.svc.cluster.local. 5 SRV {"priority":0,"weight":50,"port":443,"target":"fd00-1--0.hl6.ns1.svc.cluster.local"}',
        'np.ns1.svc.cluster.local. 5 A "10.96.0.21"',
      ]);
    });

    it('endpoint_pod_names: a pod name with dots gives several labels; the root zone', () => {
      const named = services(new Resolver(baseConfig({ endpointPodNames: true })));
      expect(named).toContain('web-0.hl.ns1.svc.cluster.local. 5 A "10.244.0.10"');
      expect(named).toContain('pod.with.dots.hl.ns1.svc.cluster.local. 5 A "10.244.1.2"');
      expect(named).toContain(
        '_dns._udp.hl.ns1.svc.cluster.local. 5 SRV {"priority":0,"weight":50,"port":53,"target":"pod.with.dots.hl.ns1.svc.cluster.local"}',
      );
      const root = services(new Resolver(baseConfig({ zones: ['.'], primaryZone: '.' })), '.');
      expect(root[0]).toBe('dual.ns1.svc. 5 A "10.96.0.20"');
      expect(root).toContain('10-244-1-2.hl.ns1.svc. 5 A "10.244.1.2"');
    });

    it('a Service of more endpoints than a batch goes out in several batches, none of them empty', () => {
      const st = new Store();
      st.upsert('namespaces', { name: 'ns1', resourceVersion: '1' });
      st.upsert('services', service('big', { headless: true }));
      const addrs = Array.from({ length: 300 }, (_, i) => `10.1.${i >> 8}.${i & 255}`);
      st.upsert('endpointslices', slice('big', addrs, { ports: [port('http', 80)] }));
      const batches = [...transferAnswers(kubernetesTransfer(st, resolver, 'cluster.local.', 0))];
      const records = batches.flat().filter((a) => a.name.endsWith('big.ns1.svc.cluster.local'));
      expect(records).toHaveLength(900);
      expect(batches.filter((b) => b.some((a) => a.name.endsWith('big.ns1.svc.cluster.local'))).length).toBeGreaterThan(
        3,
      );
      expect(batches.every((b) => b.length > 0)).toBe(true);
      expect(records.at(-2)).toMatchObject({ name: '10-1-1-43.big.ns1.svc.cluster.local', data: '10.1.1.43' });
    });
  });
});
