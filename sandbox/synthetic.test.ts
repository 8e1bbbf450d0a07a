import { afterEach, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from './server.js';
import { MAX_ENDPOINTS_PER_SLICE, generateCluster } from './synthetic.js';
import { clientsFor } from './testkit.js';

type Obj = Record<string, unknown> & {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
};

interface Slice {
  addressType: string;
  endpoints: {
    addresses: string[];
    conditions: { ready?: boolean };
    hostname?: string;
    targetRef?: { kind: string; name: string; namespace: string };
    nodeName?: string;
    zone?: string;
  }[];
  ports: { name: string; port: number; protocol: string }[];
}

function byKind(objs: unknown[]): Map<string, Obj[]> {
  const m = new Map<string, Obj[]>();
  for (const o of objs as Obj[]) {
    const list = m.get(o.kind) ?? [];
    list.push(o);
    m.set(o.kind, list);
  }
  return m;
}

let sb: Sandbox | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

describe('generateCluster', () => {
  it('produces the requested counts and controller-shaped EndpointSlices', () => {
    const objs = generateCluster({ services: 50, pods: 2_000, namespaces: 4, headlessFraction: 0.3, seed: 7 });
    const k = byKind(objs);
    expect(k.get('Namespace')).toHaveLength(4);
    expect(k.get('Service')).toHaveLength(50);
    expect(k.get('Pod')).toHaveLength(2_000);
    const services = k.get('Service') ?? [];
    const slices = k.get('EndpointSlice') ?? [];
    const pods = k.get('Pod') ?? [];

    // 2000 pods over 50 services: 40 each, one slice each
    expect(slices).toHaveLength(50);
    const headless = services.filter((s) => (s['spec'] as { clusterIP: string }).clusterIP === 'None');
    expect(headless.length).toBeGreaterThan(0);
    expect(headless.length).toBeLessThan(50);

    const podByName = new Map(pods.map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, p]));
    let endpoints = 0;
    for (const s of slices) {
      const body = s as unknown as Slice;
      const svcName = s.metadata.labels?.['kubernetes.io/service-name'];
      const svc = services.find((x) => x.metadata.name === svcName && x.metadata.namespace === s.metadata.namespace);
      expect(svc).toBeDefined();
      expect(body.addressType).toBe('IPv4');
      expect(body.endpoints.length).toBeLessThanOrEqual(MAX_ENDPOINTS_PER_SLICE);
      expect(body.ports.map((p) => p.name)).toContain('http');
      expect(s.metadata.annotations?.['endpoints.kubernetes.io/last-change-trigger-time']).toMatch(/^\d{4}-\d\d-\d\dT/);
      const isHeadless = (svc?.['spec'] as { clusterIP: string }).clusterIP === 'None';
      for (const e of body.endpoints) {
        endpoints++;
        expect(typeof e.conditions.ready).toBe('boolean');
        expect(e.nodeName).toMatch(/^node-\d{4}$/);
        expect(e.zone).toMatch(/^zone-[abc]$/);
        expect(e.targetRef?.kind).toBe('Pod');
        const pod = podByName.get(`${e.targetRef?.namespace}/${e.targetRef?.name}`);
        expect((pod?.['status'] as { podIP: string }).podIP).toBe(e.addresses[0]);
        if (isHeadless) expect(e.hostname).toBe(e.targetRef?.name);
        else expect(e.hostname).toBeUndefined();
      }
    }
    expect(endpoints).toBe(2_000);

    const ips = pods.map((p) => (p['status'] as { podIP: string }).podIP);
    expect(new Set(ips).size).toBe(ips.length);
    for (const p of pods) {
      const st = p['status'] as { phase: string; podIP: string; podIPs: { ip: string }[] };
      expect(st.phase).toBe('Running');
      expect(st.podIPs).toEqual([{ ip: st.podIP }]);
    }
    const cips = services.map((s) => (s['spec'] as { clusterIP: string }).clusterIP).filter((ip) => ip !== 'None');
    expect(new Set(cips).size).toBe(cips.length);
  });

  it('splits large services into slices of at most 100 endpoints and is deterministic per seed', () => {
    const objs = generateCluster({ services: 2, pods: 450, headlessFraction: 0, seed: 3 });
    const slices = (byKind(objs).get('EndpointSlice') ?? []) as unknown as (Slice & Obj)[];
    // 225 pods per service → 100 + 100 + 25
    expect(slices.map((s) => s.endpoints.length)).toEqual([100, 100, 25, 100, 100, 25]);
    expect(JSON.stringify(generateCluster({ services: 2, pods: 450, seed: 3 }))).toBe(
      JSON.stringify(generateCluster({ services: 2, pods: 450, seed: 3 })),
    );
    expect(JSON.stringify(generateCluster({ services: 2, pods: 450, seed: 4 }))).not.toBe(
      JSON.stringify(generateCluster({ services: 2, pods: 450, seed: 3 })),
    );
    // podsPerService when pods is not given; a service without pods still gets an (empty) slice
    const k = byKind(generateCluster({ services: 3, podsPerService: 0 }));
    expect(k.get('Pod')).toBeUndefined();
    expect(k.get('EndpointSlice')).toHaveLength(3);
    expect(byKind(generateCluster({ services: 3 })).get('Pod')).toHaveLength(9);
  });
});

describe('scale', () => {
  it('loads 10k services / 150k pods and serves complete paged and unpaged lists', async () => {
    sb = await startSandbox({ synthetic: { services: 10_000, pods: 150_000 } });
    const { core } = clientsFor(sb.url);

    // Paged, the way informers list (limit 500): count items and check continuity.
    let cont: string | undefined;
    let count = 0;
    let pages = 0;
    let lastKey = '';
    let outOfOrder = 0;
    let rv: string | undefined;
    do {
      const r = await fetch(`${sb.url}/api/v1/pods?limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
      expect(r.status).toBe(200);
      const page = (await r.json()) as { metadata: { continue?: string; resourceVersion: string }; items: Obj[] };
      rv ??= page.metadata.resourceVersion;
      expect(page.metadata.resourceVersion).toBe(rv);
      for (const p of page.items) {
        const key = `${p.metadata.namespace ?? ''}/${p.metadata.name}`;
        if (!(key > lastKey)) outOfOrder++;
        lastKey = key;
      }
      count += page.items.length;
      pages++;
      cont = page.metadata.continue;
    } while (cont);
    expect(count).toBe(150_000);
    expect(pages).toBe(300);
    expect(outOfOrder).toBe(0);

    // One full unpaged list, streamed.
    const full = await fetch(`${sb.url}/api/v1/pods`);
    const text = await full.text();
    const parsed = JSON.parse(text) as { kind: string; items: unknown[] };
    expect(parsed.kind).toBe('PodList');
    expect(parsed.items).toHaveLength(150_000);

    // The typed client reads a page too.
    const svcPage = await core.listServiceForAllNamespaces({ limit: 1000 });
    expect(svcPage.items).toHaveLength(1000);
    expect(svcPage.metadata?.remainingItemCount).toBe(9_000);
    const slices = await fetch(`${sb.url}/apis/discovery.k8s.io/v1/endpointslices?limit=100000`);
    const sl = (await slices.json()) as { items: Slice[] };
    expect(sl.items.reduce((n, s) => n + s.endpoints.length, 0)).toBe(150_000);
    expect(Math.max(...sl.items.map((s) => s.endpoints.length))).toBeLessThanOrEqual(100);
  }, 300_000); // a failure guard only: the machine may be shared and slow
});
