import { describe, expect, it } from 'vitest';
import { addressList } from './addresses.js';
import { endpointColumns, toService, toSlice } from './convert.js';
import { changeKey } from './changekeys.js';
import { Store } from './store.js';
import type { ServiceRec, SliceRec } from './types.js';
import { slice, svc } from './testdata.js';

function service(over: Partial<ServiceRec> = {}): ServiceRec {
  return {
    name: 'a',
    namespace: 'ns',
    resourceVersion: '1',
    type: 'ClusterIP',
    clusterIPs: ['10.0.0.1'],
    headless: false,
    externalName: '',
    ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
    externalIPs: [],
    ...over,
  };
}

function sl(over: Partial<SliceRec> = {}): SliceRec {
  return {
    name: 'a-1',
    namespace: 'ns',
    resourceVersion: '1',
    service: 'a',
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    ...endpointColumns([{ address: '10.1.0.1', podName: 'p' }]),
    triggerTime: null,
    ...over,
  };
}

describe('external addresses (k8s_external)', () => {
  it('keeps spec.externalIPs then each load-balancer ingress IP or hostname', () => {
    const obj = {
      ...svc('ns', 'lb', { type: 'LoadBalancer', clusterIP: '10.0.0.9', externalIPs: ['192.0.2.1'] }),
      status: { loadBalancer: { ingress: [{ ip: '198.51.100.1' }, { hostname: 'lb.example.net' }, {}] } },
    };
    expect(toService(obj)).toMatchObject({ externalIPs: ['192.0.2.1', '198.51.100.1', 'lb.example.net'] });
    expect(toService(svc('ns', 'plain', { clusterIP: '10.0.0.8' }))).toMatchObject({ externalIPs: [] });
  });

  it('the external serial moves on updates of external addresses or ports only (as CoreDNS)', () => {
    const store = new Store();
    let t = 2_000_000;
    store.now = () => t * 1000;
    store.upsert('services', service({ externalIPs: ['192.0.2.1'] }));
    expect(store.externalSerial).toBe(0); // an add does not move it
    t++;
    store.upsert('services', service({ resourceVersion: '2', externalIPs: ['192.0.2.1'] }));
    expect(store.externalSerial).toBe(0);
    store.upsert('services', service({ resourceVersion: '3', externalIPs: ['192.0.2.2'] }));
    expect(store.externalSerial).toBe(t);
    expect(store.serial).toBe(t - 1); // the cluster zone's serial is not moved by external addresses
    t++;
    store.upsert('services', service({ resourceVersion: '4', externalIPs: ['192.0.2.2'], ports: [] }));
    expect([store.externalSerial, store.serial]).toEqual([t, t]);
    t++;
    store.remove('services', 'ns/a');
    expect(store.externalSerial).toBe(t - 1);
  });
});

describe('store serial (§3.3)', () => {
  function clocked(): { store: Store; tick: () => number } {
    const store = new Store();
    let t = 1_000_000;
    store.now = () => t * 1000;
    return { store, tick: () => ++t };
  }

  it('bumps on add/delete and relevant updates only', () => {
    const { store, tick } = clocked();
    expect(store.serial).toBe(0);
    store.upsert('services', service());
    expect(store.serial).toBe(1_000_000);
    let now = tick();
    store.upsert('services', service({ resourceVersion: '1', ports: [] })); // same RV: ignored
    expect(store.serial).toBe(1_000_000);
    store.upsert('services', service({ resourceVersion: '2' })); // nothing DNS-relevant changed
    expect(store.serial).toBe(1_000_000);
    store.upsert('services', service({ resourceVersion: '3', ports: [{ name: 'http', port: 81, protocol: 'TCP' }] }));
    expect(store.serial).toBe(now);
    now = tick();
    store.upsert(
      'services',
      service({
        resourceVersion: '4',
        ports: [{ name: 'http', port: 81, protocol: 'TCP' }],
        externalName: 'x.example.',
      }),
    );
    expect(store.serial).toBe(now);
    now = tick();
    store.upsert('namespaces', { name: 'ns', resourceVersion: '1' });
    store.remove('namespaces', 'ns');
    expect(store.serial).toBe(now - 1);
    store.upsert('endpointslices', sl());
    expect(store.serial).toBe(now);
    now = tick();
    store.upsert(
      'endpointslices',
      sl({ resourceVersion: '2', ...endpointColumns([{ address: '10.1.0.1', podName: 'p' }]) }),
    );
    expect(store.serial).toBe(now - 1); // node name is not DNS data
    // The endpoint turned not ready: dropped on receipt, so the slice publishes nothing.
    store.upsert('endpointslices', sl({ resourceVersion: '3', ...endpointColumns([]) }));
    expect(store.serial).toBe(now);
    now = tick();
    store.upsert('pods', { name: 'p', namespace: 'ns', resourceVersion: '1', ips: ['10.1.0.1'] });
    expect(store.serial).toBe(now);
    now = tick();
    store.upsert('pods', { name: 'p', namespace: 'ns', resourceVersion: '2', ips: ['10.1.0.1'] });
    expect(store.serial).toBe(now - 1);
    store.upsert('pods', { name: 'p', namespace: 'ns', resourceVersion: '3', ips: ['10.1.0.2'] });
    expect(store.serial).toBe(now);
    expect(store.podNamespace('10.1.0.2')).toBe('ns');
    expect(store.podNamespace('10.1.0.1')).toBeUndefined();
    now = tick();
    store.remove('services', 'ns/a');
    expect(store.serial).toBe(now);
  });

  it('an endpoint zone change bumps the serial only with zonal', () => {
    for (const zonal of [false, true]) {
      const store = new Store(zonal);
      let t = 5_000;
      store.now = () => t * 1000;
      store.upsert('endpointslices', sl(endpointColumns([{ address: '10.1.0.1', zone: 'a' }])));
      t++;
      store.upsert(
        'endpointslices',
        sl({ resourceVersion: '2', ...endpointColumns([{ address: '10.1.0.1', zone: 'b' }]) }),
      );
      expect(store.serial).toBe(zonal ? 5_001 : 5_000);
    }
  });

  it('replace() diffs: unchanged objects untouched, vanished ones deleted, one notification', () => {
    const store = new Store();
    const notes: string[][] = [];
    store.subscribe((d) => notes.push([...d].sort()));
    store.upsert('services', service());
    store.upsert('services', service({ name: 'b', clusterIPs: ['10.0.0.2'] }));
    notes.length = 0;
    store.replace('services', [service(), service({ name: 'c', clusterIPs: ['10.0.0.3'] })]);
    expect([...store.services.keys()].sort()).toEqual(['a.ns', 'c.ns']);
    expect(store.servicesByIP.has('10.0.0.2')).toBe(false);
    expect(notes).toEqual([
      [
        changeKey.address('10.0.0.2'),
        changeKey.address('10.0.0.3'),
        changeKey.service('b.ns'),
        changeKey.service('c.ns'),
      ].sort(),
    ]);
  });

  it('beginReplace() takes a list page by page and removes what no page held at finish', () => {
    const store = new Store();
    const notes: string[][] = [];
    store.subscribe((d) => notes.push([...d].sort()));
    const a = service();
    store.upsert('services', a);
    store.upsert('services', service({ name: 'b', clusterIPs: ['10.0.0.2'] }));
    notes.length = 0;
    const r = store.beginReplace('services');
    // An unchanged record (same resourceVersion) keeps the one the index holds.
    r.page([service(), service({ name: 'c', clusterIPs: ['10.0.0.3'] })]);
    expect(store.services.get('a.ns')).toBe(a);
    expect([...store.services.keys()].sort()).toEqual(['a.ns', 'b.ns', 'c.ns']);
    expect(notes).toEqual([[changeKey.address('10.0.0.3'), changeKey.service('c.ns')].sort()]);
    r.page([]);
    r.finish();
    expect([...store.services.keys()].sort()).toEqual(['a.ns', 'c.ns']);
    expect(store.servicesByIP.has('10.0.0.2')).toBe(false);
    expect(notes[1]).toEqual([changeKey.address('10.0.0.2'), changeKey.service('b.ns')].sort());
    expect(notes).toHaveLength(2);
  });

  it('indexes slices by service and address, and unindexes on change', () => {
    const store = new Store();
    store.upsert('endpointslices', sl());
    expect([...store.slicesByService.get('a.ns')!]).toEqual(['ns/a-1']);
    expect([...store.slicesByAddr.get('10.1.0.1')!]).toEqual(['ns/a-1']);
    store.upsert('endpointslices', sl({ resourceVersion: '2', ...endpointColumns([{ address: '10.1.0.9' }]) }));
    expect(store.slicesByAddr.has('10.1.0.1')).toBe(false);
    expect([...store.slicesByAddr.get('10.1.0.9')!]).toEqual(['ns/a-1']);
    store.remove('endpointslices', 'ns/a-1');
    expect(store.slicesByService.size).toBe(0);
    expect(store.slicesByAddr.size).toBe(0);
  });
});

describe('converters', () => {
  it('keeps only the DNS fields of a service; headless and dual-stack', () => {
    const s = toService(
      svc('ns', 'x', {
        type: 'ClusterIP',
        clusterIP: 'FD00::0001',
        clusterIPs: ['fd00:0:0::1', '10.0.0.1'],
        ports: [{ name: 'p', port: 1, targetPort: 99 }],
        selector: { a: 'b' },
      }),
    );
    expect(s).toMatchObject({
      name: 'x',
      namespace: 'ns',
      clusterIPs: ['fd00::1', '10.0.0.1'],
      headless: false,
      ports: [{ name: 'p', port: 1, protocol: 'TCP' }],
    });
    expect(Object.keys(s as object).sort()).toEqual([
      'clusterIPs',
      'externalIPs',
      'externalName',
      'headless',
      'name',
      'namespace',
      'ports',
      'resourceVersion',
      'type',
    ]);
    expect(toService(svc('ns', 'h', { clusterIP: 'None' }))).toMatchObject({ headless: true, clusterIPs: [] });
  });

  it('reports malformed objects', () => {
    expect(toService({ metadata: { namespace: 'x' } })).toBe('missing metadata.name');
    expect(toService(svc('ns', 'x', { clusterIP: '1.2.3' }))).toMatch(/unparsable cluster IP/);
    expect(toService(svc('ns', 'x', { type: 'ExternalName' }))).toMatch(/without spec.externalName/);
    expect(toSlice(slice('ns', 's', 'x', [{ port: 'a' }], []))).toMatch(/invalid port number/);
    expect(toSlice(slice('ns', 's', 'x', [], [{ ip: '10.0.0.1' }], 'IPv6'))).toMatch(/unparsable address/);
    expect(toSlice(slice('ns', 's', 'x', [], [{ ip: 'a.example' }], 'FQDN'))).toBeNull();
  });

  it('slice ports: null port → -1, null name/protocol → empty; ready unset → true', () => {
    const s = toSlice(
      slice(
        'ns',
        's',
        'x',
        [{ port: null, name: null, protocol: null }],
        [
          { ip: '10.0.0.1', ready: null },
          { ip: '10.0.0.2', ready: false },
        ],
      ),
    );
    expect(s).toMatchObject({ ports: [{ name: '', port: -1, protocol: '' }] });
    expect(addressList((s as SliceRec).addresses)).toEqual(['10.0.0.1']);
  });

  it('slice endpoints become columns: ready only, one entry per address, unused columns null', () => {
    const raw = slice(
      'ns',
      's',
      'x',
      [],
      [
        { ip: ['10.0.0.1', '10.0.0.2'], hostname: 'web-0', pod: 'web-0' },
        { ip: '10.0.0.3', ready: false, hostname: 'web-1', pod: 'web-1' },
        { ip: '10.0.0.4', pod: 'web-2' },
      ],
    );
    (raw['endpoints'] as Record<string, unknown>[])[0]!['zone'] = 'z1';
    const all = toSlice(raw, { podNames: true, zones: true }) as SliceRec;
    expect(addressList(all.addresses)).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.4']);
    expect(all).toMatchObject({
      hostnames: ['web-0', 'web-0', ''],
      podNames: ['web-0', 'web-0', 'web-2'],
      zones: ['z1', 'z1', ''],
    });
    // Without endpoint_pod_names / zonal those are not DNS data and are not kept.
    expect(toSlice(raw, { podNames: false, zones: false })).toMatchObject({
      hostnames: ['web-0', 'web-0', ''],
      podNames: null,
      zones: null,
    });
    expect(toSlice(slice('ns', 's', 'x', [], [{ ip: '10.0.0.1' }]))).toMatchObject({
      hostnames: null,
      podNames: null,
      zones: null,
    });
  });
});

describe('negative replies written directly', () => {
  it('match the general encoder byte for byte', async () => {
    const { negativeEntry, makeEntry, buildMessage } = await import('./answers.js');
    const { Resolver } = await import('./resolve.js');
    const cases: [string, string, number, boolean][] = [
      ['missing.testns.svc.cluster.local.', 'cluster.local.', 1, true],
      ['cluster.local.', 'cluster.local.', 16, true],
      ['svc1.testns.svc.cluster.local.', 'cluster.local.', 28, false],
      ['99.99.0.10.in-addr.arpa.', 'in-addr.arpa.', 12, true],
      ['google.com.', '.', 1, true],
      ['.', '.', 1, false],
    ];
    for (const ttl of [5, 600]) {
      const r = new Resolver({
        zones: [],
        primaryZone: 'cluster.local.',
        ttl,
        podMode: 'disabled',
        endpointPodNames: false,
        namespaces: null,
        ignoreEmptyService: false,
        localIPs: [],
      });
      for (const [lname, zone, qtype, nx] of cases) {
        const general = makeEntry(buildMessage(0, 0, lname, qtype, 'IN', nx ? 3 : 0, [], [r.soa(zone, 0)], []), nx);
        const direct = negativeEntry(lname, qtype, zone, Math.min(ttl, 300), ttl, nx);
        expect(direct.wire, `${lname} ${qtype}`).toBe(general.wire);
        expect(direct.serialOffsets).toEqual(general.serialOffsets);
        expect(direct.qlen).toBe(general.qlen);
      }
    }
  });
});
