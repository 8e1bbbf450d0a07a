import { afterEach, describe, expect, it } from 'vitest';
import { ApiException, type V1Service } from '@kubernetes/client-node';
import { type Sandbox, startSandbox } from './server.js';
import { clientsFor, collectWatch, nameOf, rvOf, svc } from './testkit.js';
import { waitFor } from '../test/helpers/wait.js';

let sb: Sandbox | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

async function raw(url: string): Promise<{ status: number; body: string; headers: Headers }> {
  const r = await fetch(url);
  return { status: r.status, body: await r.text(), headers: r.headers };
}

describe('list', () => {
  it('pages with limit/continue over a consistent snapshot in key order', async () => {
    const objs: unknown[] = [];
    for (let i = 0; i < 25; i++) objs.push(svc(i % 2 === 0 ? 'a' : 'b', `s${String(i).padStart(2, '0')}`));
    sb = await startSandbox({ objects: objs });
    const { core } = clientsFor(sb.url);

    const p1 = await core.listServiceForAllNamespaces({ limit: 10 });
    expect(p1.items).toHaveLength(10);
    expect(p1.metadata?._continue).toBeTruthy();
    expect(p1.metadata?.remainingItemCount).toBe(15);
    const snapRv = p1.metadata?.resourceVersion;
    expect(snapRv).toBe(sb.resourceVersion());

    // Changes after the first page must not show up in the following pages.
    sb.apply(svc('b', 'zz-new'));
    sb.apply(svc('b', 's23', { labels: { changed: 'yes' } }));
    sb.remove('Service', 'b', 's21');

    const p2 = await core.listServiceForAllNamespaces({ limit: 10, _continue: p1.metadata?._continue });
    const p3 = await core.listServiceForAllNamespaces({ limit: 10, _continue: p2.metadata?._continue });
    expect(p2.metadata?.resourceVersion).toBe(snapRv);
    expect(p3.metadata?.resourceVersion).toBe(snapRv);
    expect(p3.metadata?._continue).toBeFalsy();
    const all = [...p1.items, ...p2.items, ...p3.items].map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`);
    expect(all).toHaveLength(25);
    expect(all).toEqual([...all].sort());
    expect(all).toContain('b/s21');
    expect(all).not.toContain('b/zz-new');
    const s23 = p3.items.find((s) => s.metadata?.name === 's23');
    expect(s23?.metadata?.labels?.['changed']).toBeUndefined();

    // A fresh list sees the new state.
    const fresh = await core.listServiceForAllNamespaces({});
    expect(fresh.items.map((s) => s.metadata?.name)).toContain('zz-new');
    expect(fresh.items.map((s) => s.metadata?.name)).not.toContain('s21');
    expect(fresh.items).toHaveLength(25);
  });

  it('lists namespaced and cluster-wide, items carry server metadata, kinds as the real API', async () => {
    sb = await startSandbox({
      objects: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } },
        svc('a', 'x'),
        svc('b', 'y'),
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'p', namespace: 'a' },
          status: { podIP: '10.0.0.1', phase: 'Running' },
        },
        {
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          metadata: { name: 'x-1', namespace: 'a', labels: { 'kubernetes.io/service-name': 'x' } },
          addressType: 'IPv4',
          endpoints: [{ addresses: ['10.0.0.1'], conditions: { ready: true } }],
          ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        },
      ],
    });
    const { core, discovery } = clientsFor(sb.url);
    const ns = await core.listNamespacedService({ namespace: 'a' });
    expect(ns.items.map((s) => s.metadata?.name)).toEqual(['x']);
    const item = ns.items[0] as V1Service;
    expect(item.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(item.metadata?.resourceVersion).toMatch(/^\d+$/);
    expect(item.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(item.spec?.clusterIPs).toEqual(['10.96.0.100']);
    expect(item.spec?.ports?.[0]?.protocol).toBe('TCP');

    const r = await raw(`${sb.url}/api/v1/namespaces/a/services`);
    const body = JSON.parse(r.body) as { kind: string; apiVersion: string; items: Record<string, unknown>[] };
    expect(body.kind).toBe('ServiceList');
    expect(body.apiVersion).toBe('v1');
    expect(body.items[0]?.['kind']).toBeUndefined();
    expect(body.items[0]?.['apiVersion']).toBeUndefined();

    const pods = await core.listPodForAllNamespaces({});
    expect(pods.items[0]?.status?.podIPs).toEqual([{ ip: '10.0.0.1' }]);
    const slices = await discovery.listEndpointSliceForAllNamespaces({});
    expect(slices.items.map((s) => s.metadata?.name)).toEqual(['x-1']);
    expect(slices.items[0]?.endpoints[0]?.conditions?.ready).toBe(true);
    const eps = await discovery.listNamespacedEndpointSlice({ namespace: 'b' });
    expect(eps.items).toEqual([]);
    const nsl = await core.listNamespace({});
    expect(nsl.items[0]?.metadata?.labels?.['kubernetes.io/metadata.name']).toBe('a');
    expect(nsl.items[0]?.status?.phase).toBe('Active');
  });

  it('filters by label selectors', async () => {
    sb = await startSandbox({
      objects: [
        svc('n', 'a', { labels: { app: 'web', tier: 'front' } }),
        svc('n', 'b', { labels: { app: 'db', tier: 'back' } }),
        svc('n', 'c', { labels: { app: 'cache' } }),
        svc('n', 'd'),
      ],
    });
    const { core } = clientsFor(sb.url);
    const names = async (labelSelector: string): Promise<string[]> =>
      (await core.listServiceForAllNamespaces({ labelSelector })).items.map((s) => s.metadata?.name ?? '');
    expect(await names('app=web')).toEqual(['a']);
    expect(await names('app==db')).toEqual(['b']);
    expect(await names('app!=web')).toEqual(['b', 'c', 'd']);
    expect(await names('app in (web, cache)')).toEqual(['a', 'c']);
    expect(await names('app notin (web,cache)')).toEqual(['b', 'd']);
    expect(await names('tier')).toEqual(['a', 'b']);
    expect(await names('!tier')).toEqual(['c', 'd']);
    expect(await names('app,tier=back')).toEqual(['b']);
    expect(await names('')).toEqual(['a', 'b', 'c', 'd']);
    const err = await core.listServiceForAllNamespaces({ labelSelector: 'app in (' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiException);
    expect((err as ApiException<unknown>).code).toBe(400);
  });

  it('filters by field selectors', async () => {
    sb = await startSandbox({
      objects: [
        svc('n1', 'a'),
        svc('n2', 'a'),
        svc('n2', 'b'),
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'run', namespace: 'n1' },
          status: { phase: 'Running', podIP: '10.0.0.1' },
        },
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'done', namespace: 'n1' },
          status: { phase: 'Succeeded', podIP: '10.0.0.2' },
        },
      ],
    });
    const { core } = clientsFor(sb.url);
    const names = async (fieldSelector: string): Promise<string[]> =>
      (await core.listServiceForAllNamespaces({ fieldSelector })).items.map(
        (s) => `${s.metadata?.namespace}/${s.metadata?.name}`,
      );
    expect(await names('metadata.name=a')).toEqual(['n1/a', 'n2/a']);
    expect(await names('metadata.name==a,metadata.namespace=n2')).toEqual(['n2/a']);
    expect(await names('metadata.namespace!=n1')).toEqual(['n2/a', 'n2/b']);
    expect(await names('metadata.name!=a')).toEqual(['n2/b']);
    const pods = await core.listPodForAllNamespaces({
      fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed,status.phase!=Unknown',
    });
    expect(pods.items.map((p) => p.metadata?.name)).toEqual(['run']);
    const err = await core.listServiceForAllNamespaces({ fieldSelector: 'spec.bogus=1' }).catch((e: unknown) => e);
    expect((err as ApiException<unknown>).code).toBe(400);
  });

  it('gets single objects and answers 404 Status for missing objects and unknown paths', async () => {
    sb = await startSandbox({
      objects: [svc('n', 'a'), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n' } }],
    });
    const { core } = clientsFor(sb.url);
    const a = await core.readNamespacedService({ namespace: 'n', name: 'a' });
    expect(a.kind).toBe('Service');
    expect(a.apiVersion).toBe('v1');
    const n = await core.readNamespace({ name: 'n' });
    expect(n.metadata?.name).toBe('n');
    const err = await core.readNamespacedService({ namespace: 'n', name: 'zz' }).catch((e: unknown) => e);
    expect((err as ApiException<unknown>).code).toBe(404);
    const r = await raw(`${sb.url}/api/v1/configmaps`);
    expect(r.status).toBe(404);
    const st = JSON.parse(r.body) as Record<string, unknown>;
    expect(st).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 });
    const r2 = await raw(`${sb.url}/nope`);
    expect(r2.status).toBe(404);
    expect(JSON.parse(r2.body)).toMatchObject({ kind: 'Status', code: 404 });
  });

  it('serves discovery, version and health endpoints', async () => {
    sb = await startSandbox({});
    const { core, kc } = clientsFor(sb.url);
    const res = await core.getAPIResources();
    expect(res.resources.map((r) => r.name).sort()).toEqual(['namespaces', 'pods', 'services']);
    const { DiscoveryV1Api, VersionApi, ApisApi } = await import('@kubernetes/client-node');
    const d = await kc.makeApiClient(DiscoveryV1Api).getAPIResources();
    expect(d.resources.map((r) => r.name)).toEqual(['endpointslices']);
    const v = await kc.makeApiClient(VersionApi).getCode();
    expect(v.major).toBe('1');
    const groups = await kc.makeApiClient(ApisApi).getAPIVersions();
    expect(groups.groups.map((g) => g.name)).toEqual(['discovery.k8s.io', 'multicluster.x-k8s.io']);
    const api = JSON.parse((await raw(`${sb.url}/api`)).body) as { versions: string[] };
    expect(api.versions).toEqual(['v1']);
    for (const p of ['/healthz', '/readyz']) {
      const h = await raw(`${sb.url}${p}`);
      expect([h.status, h.body]).toEqual([200, 'ok']);
    }
  });

  it('answers 410 Expired with a Status for a continue token older than the compacted history', async () => {
    sb = await startSandbox({ objects: [svc('n', 'a'), svc('n', 'b'), svc('n', 'c')] });
    const { core } = clientsFor(sb.url);
    const p1 = await core.listServiceForAllNamespaces({ limit: 1 });
    sb.apply(svc('n', 'd'));
    sb.compact();
    const err = await core
      .listServiceForAllNamespaces({ limit: 1, _continue: p1.metadata?._continue })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiException);
    expect((err as ApiException<unknown>).code).toBe(410);
    const r = await raw(
      `${sb.url}/api/v1/services?limit=1&continue=${encodeURIComponent(p1.metadata?._continue ?? '')}`,
    );
    expect(r.status).toBe(410);
    const st = JSON.parse(r.body) as { kind: string; reason: string; code: number; metadata: { continue?: string } };
    expect([st.kind, st.reason, st.code]).toEqual(['Status', 'Expired', 410]);
    // The inconsistent token continues after the last key, from the current state.
    const rest = await core.listServiceForAllNamespaces({ _continue: st.metadata.continue });
    expect(rest.items.map((s) => s.metadata?.name)).toEqual(['b', 'c', 'd']);
  });

  it('lists at an exact past resourceVersion, tolerates other resourceVersion params', async () => {
    sb = await startSandbox({ objects: [svc('n', 'a'), svc('n', 'b')] });
    const { core } = clientsFor(sb.url);
    const rv = sb.resourceVersion();
    sb.remove('Service', 'n', 'a');
    sb.apply(svc('n', 'b', { labels: { v: '2' } }));
    sb.apply(svc('n', 'c'));
    const past = await core.listServiceForAllNamespaces({ resourceVersion: rv, resourceVersionMatch: 'Exact' });
    expect(past.metadata?.resourceVersion).toBe(rv);
    expect(past.items.map((s) => `${s.metadata?.name}@${s.metadata?.resourceVersion}`)).toEqual(['a@1', 'b@2']);
    const now = await core.listServiceForAllNamespaces({ resourceVersion: rv, resourceVersionMatch: 'NotOlderThan' });
    expect(now.items.map((s) => s.metadata?.name)).toEqual(['b', 'c']);
    const any = await core.listServiceForAllNamespaces({ resourceVersion: '0' });
    expect(any.metadata?.resourceVersion).toBe(sb.resourceVersion());
    const ahead = await core.listServiceForAllNamespaces({ resourceVersion: '9999' }).catch((e: unknown) => e);
    expect((ahead as ApiException<unknown>).code).toBe(504);
    sb.compact();
    const gone = await core
      .listServiceForAllNamespaces({ resourceVersion: rv, resourceVersionMatch: 'Exact' })
      .catch((e: unknown) => e);
    expect((gone as ApiException<unknown>).code).toBe(410);
  });

  it('forces failures with setFailure and logs requests', async () => {
    sb = await startSandbox({ objects: [svc('n', 'a')] });
    const { core } = clientsFor(sb.url);
    sb.setFailure((req) => (req.path === '/api/v1/services' ? 403 : undefined));
    const err = await core.listServiceForAllNamespaces({}).catch((e: unknown) => e);
    expect((err as ApiException<unknown>).code).toBe(403);
    expect(JSON.stringify((err as ApiException<unknown>).body)).toContain('forbidden');
    expect((await core.listNamespacedService({ namespace: 'n' })).items).toHaveLength(1);
    sb.setFailure(() => 500);
    expect(((await core.listNamespace({}).catch((e: unknown) => e)) as ApiException<unknown>).code).toBe(500);
    sb.setFailure();
    expect((await core.listServiceForAllNamespaces({ labelSelector: 'x=y' })).items).toHaveLength(0);
    const logged = sb.requests.filter((r) => r.path === '/api/v1/services');
    expect(logged).toHaveLength(2);
    expect(logged[1]?.query).toEqual({ labelSelector: 'x=y' });
    expect(logged[0]?.method).toBe('GET');
  });
});

describe('control API', () => {
  it('apply fills server metadata and keeps uid/creationTimestamp on replace; remove accepts kind aliases', async () => {
    sb = await startSandbox({});
    const { core } = clientsFor(sb.url);
    sb.apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'a', resourceVersion: '999' },
      spec: { clusterIP: '10.96.0.5' },
    });
    const a1 = await core.readNamespacedService({ namespace: 'default', name: 'a' });
    expect(a1.metadata?.resourceVersion).toBe(sb.resourceVersion());
    expect(a1.metadata?.uid).toBeTruthy();
    sb.apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'a', labels: { v: '2' } },
      spec: { clusterIP: '10.96.0.5' },
    });
    const a2 = await core.readNamespacedService({ namespace: 'default', name: 'a' });
    expect(a2.metadata?.uid).toBe(a1.metadata?.uid);
    expect(a2.metadata?.creationTimestamp).toEqual(a1.metadata?.creationTimestamp);
    expect(Number(a2.metadata?.resourceVersion)).toBeGreaterThan(Number(a1.metadata?.resourceVersion));
    expect(a2.metadata?.labels).toEqual({ v: '2' });

    expect(() => sb?.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } })).toThrow(
      /unsupported kind/,
    );
    expect(() => sb?.apply({ apiVersion: 'v1', kind: 'Service', metadata: {} })).toThrow(/metadata.name/);
    expect(() => sb?.apply({ apiVersion: 'v2', kind: 'Service', metadata: { name: 'x' } })).toThrow(/apiVersion/);
    expect(() =>
      sb?.apply({ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'x' } }),
    ).toThrow(/addressType/);

    const rv = sb.resourceVersion();
    sb.remove('svc', 'default', 'nope'); // absent: no event, no new revision
    expect(sb.resourceVersion()).toBe(rv);
    sb.remove('svc', 'default', 'a');
    expect((await core.listServiceForAllNamespaces({})).items).toEqual([]);
    sb.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x', namespace: 'ignored' } });
    expect((await core.readNamespace({ name: 'x' })).metadata?.namespace).toBeUndefined();
    sb.remove('namespaces', undefined, 'x');
    expect((await core.listNamespace({})).items).toEqual([]);
  });
});

describe('watch', () => {
  it('streams ADDED/MODIFIED/DELETED in order after a resourceVersion, replaying history', async () => {
    sb = await startSandbox({ objects: [svc('n', 'a')] });
    const { core, watch } = clientsFor(sb.url);
    const list = await core.listServiceForAllNamespaces({});
    const rv = list.metadata?.resourceVersion ?? '';
    // Changes before the watch starts are replayed from history.
    sb.apply(svc('n', 'b'));
    sb.apply(svc('n', 'a', { labels: { v: '2' } }));
    const w = await collectWatch(watch, '/api/v1/services', { resourceVersion: rv });
    sb.remove('Service', 'n', 'b');
    sb.apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'n' } }); // other resource
    sb.apply(svc('m', 'c'));
    await waitFor('four events', () => w.events.length >= 4);
    expect(w.events.map((e) => `${e.type} ${nameOf(e.object)}`)).toEqual([
      'ADDED b',
      'MODIFIED a',
      'DELETED b',
      'ADDED c',
    ]);
    expect(w.events.every((e) => e.object['kind'] === 'Service' && e.object['apiVersion'] === 'v1')).toBe(true);
    const rvs = w.events.map((e) => Number(rvOf(e.object)));
    expect(rvs).toEqual([...rvs].sort((x, y) => x - y));
    expect(rvs[0]).toBeGreaterThan(Number(rv));
    // The deleted object carries the deletion revision.
    expect(rvs[2]).toBeGreaterThan(rvs[1] as number);
    w.abort();
  });

  it('sends synthetic ADDED for current state without resourceVersion, filtered by namespace and selectors', async () => {
    sb = await startSandbox({
      objects: [svc('n', 'a', { labels: { app: 'x' } }), svc('n', 'b'), svc('m', 'c', { labels: { app: 'x' } })],
    });
    const { watch } = clientsFor(sb.url);
    const w = await collectWatch(watch, '/api/v1/namespaces/n/services', { labelSelector: 'app=x' });
    await waitFor('initial event', () => w.events.length >= 1);
    sb.apply(svc('n', 'b', { labels: { app: 'x' } })); // now matches: ADDED
    sb.apply(svc('m', 'd', { labels: { app: 'x' } })); // other namespace
    sb.apply(svc('n', 'a', { labels: { app: 'y' } })); // no longer matches: DELETED
    await waitFor('three events', () => w.events.length >= 3);
    expect(w.events.map((e) => `${e.type} ${nameOf(e.object)}`)).toEqual(['ADDED a', 'ADDED b', 'DELETED a']);
    // DELETED for a selector mismatch carries the previous content.
    const md = w.events[2]?.object['metadata'] as { labels: Record<string, string> };
    expect(md.labels['app']).toBe('x');
    w.abort();
  });

  it('sends BOOKMARK events with only metadata.resourceVersion when allowed', async () => {
    sb = await startSandbox({ objects: [svc('n', 'a')], bookmarkIntervalMs: 50 });
    const { watch } = clientsFor(sb.url);
    const rv = sb.resourceVersion();
    const plain = await collectWatch(watch, '/api/v1/services', { resourceVersion: rv });
    const w = await collectWatch(watch, '/api/v1/services', { resourceVersion: rv, allowWatchBookmarks: true });
    await waitFor('bookmark', () => w.events.length >= 1);
    sb.apply(svc('n', 'b'));
    await waitFor('later bookmark', () =>
      w.events.some((e) => e.type === 'BOOKMARK' && Number(rvOf(e.object)) > Number(rv)),
    );
    const bm = w.events[0];
    expect(bm?.type).toBe('BOOKMARK');
    expect(bm?.object).toEqual({ kind: 'Service', apiVersion: 'v1', metadata: { resourceVersion: rv } });
    await waitFor('plain event', () => plain.events.length >= 1);
    // the watch without allowWatchBookmarks has seen later bookmark-worthy time but no BOOKMARK
    expect(plain.events.map((e) => e.type)).toEqual(['ADDED']);
    plain.abort();
    w.abort();
  });

  it('sends an ERROR event with a 410 Expired Status for a compacted resourceVersion', async () => {
    sb = await startSandbox({ objects: [svc('n', 'a')] });
    const { core, watch } = clientsFor(sb.url);
    const rv = (await core.listServiceForAllNamespaces({})).metadata?.resourceVersion ?? '';
    sb.apply(svc('n', 'b'));
    sb.compact();
    const w = await collectWatch(watch, '/api/v1/services', { resourceVersion: rv });
    const err = await w.done;
    expect(err).toBeNull();
    expect(w.events).toHaveLength(1);
    expect(w.events[0]?.type).toBe('ERROR');
    expect(w.events[0]?.object).toMatchObject({
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: 'Expired',
      code: 410,
    });
    // the current revision is still watchable after compaction
    const ok = await collectWatch(watch, '/api/v1/services', { resourceVersion: sb.resourceVersion() });
    sb.apply(svc('n', 'c'));
    await waitFor('event after compaction', () => ok.events.length >= 1);
    expect(ok.events[0]?.type).toBe('ADDED');
    ok.abort();
  });

  it('expires history beyond historyLimit', async () => {
    sb = await startSandbox({ historyLimit: 3 });
    sb.apply(svc('n', 's0'));
    const rv0 = sb.resourceVersion();
    for (let i = 1; i < 6; i++) sb.apply(svc('n', `s${i}`));
    const r = await raw(`${sb.url}/api/v1/services?watch=1&resourceVersion=${rv0}`);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body.trim())).toMatchObject({ type: 'ERROR', object: { code: 410, reason: 'Expired' } });
    const rv2 = String(Number(sb.resourceVersion()) - 3);
    const { watch } = clientsFor(sb.url);
    const w = await collectWatch(watch, '/api/v1/services', { resourceVersion: rv2 });
    await waitFor('three replayed', () => w.events.length >= 3);
    expect(w.events.map((e) => nameOf(e.object))).toEqual(['s3', 's4', 's5']);
    w.abort();
  });

  it('uses chunked newline-delimited JSON and closes after timeoutSeconds', async () => {
    sb = await startSandbox({ objects: [svc('n', 'a')] });
    const r = await raw(`${sb.url}/api/v1/services?watch=true&timeoutSeconds=1`);
    expect(r.status).toBe(200);
    expect(r.headers.get('transfer-encoding')).toBe('chunked');
    expect(r.headers.get('content-type')).toBe('application/json');
    const lines = r.body.split('\n').filter((l) => l !== '');
    expect(lines.map((l) => (JSON.parse(l) as { type: string }).type)).toEqual(['ADDED']);
    await waitFor('watch closed', () => sb?.watchCount() === 0);
  });

  it('watches EndpointSlices and Pods on their API paths, also via legacy /watch/ paths', async () => {
    const slice = (name: string, ip: string): Record<string, unknown> => ({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name, namespace: 'n', labels: { 'kubernetes.io/service-name': 'x' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [ip], conditions: { ready: true } }],
      ports: [{ name: 'http', port: 8080 }],
    });
    sb = await startSandbox({ objects: [slice('x-1', '10.0.0.1')] });
    const { watch } = clientsFor(sb.url);
    const rv = sb.resourceVersion();
    const w = await collectWatch(watch, '/apis/discovery.k8s.io/v1/namespaces/n/endpointslices', {
      resourceVersion: rv,
      labelSelector: 'kubernetes.io/service-name=x',
    });
    const pw = await collectWatch(watch, '/api/v1/pods', {
      resourceVersion: rv,
      fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed,status.phase!=Unknown',
    });
    sb.apply(slice('x-1', '10.0.0.2'));
    sb.apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'n' },
      status: { phase: 'Running', podIP: '10.0.0.2' },
    });
    sb.apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'n' },
      status: { phase: 'Succeeded', podIP: '10.0.0.2' },
    });
    sb.remove('endpointslices', 'n', 'x-1');
    await waitFor('slice and pod events', () => w.events.length >= 2 && pw.events.length >= 2);
    expect(w.events.map((e) => `${e.type} ${nameOf(e.object)}`)).toEqual(['MODIFIED x-1', 'DELETED x-1']);
    expect(w.events[0]?.object).toMatchObject({
      kind: 'EndpointSlice',
      apiVersion: 'discovery.k8s.io/v1',
      addressType: 'IPv4',
    });
    // the pod leaving the field selector is seen as DELETED
    expect(pw.events.map((e) => `${e.type} ${nameOf(e.object)}`)).toEqual(['ADDED p', 'DELETED p']);
    w.abort();
    pw.abort();

    const legacy = await raw(`${sb.url}/api/v1/watch/namespaces/n/pods?timeoutSeconds=1`);
    expect(
      legacy.body
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { type: string }).type),
    ).toEqual(['ADDED']);
  });

  it('sends initial events and the initial-events-end bookmark with sendInitialEvents=true', async () => {
    sb = await startSandbox({ objects: [svc('n', 'a'), svc('n', 'b')] });
    const { watch } = clientsFor(sb.url);
    const w = await collectWatch(watch, '/api/v1/services', {
      sendInitialEvents: true,
      resourceVersionMatch: 'NotOlderThan',
      allowWatchBookmarks: true,
    });
    await waitFor('initial events and bookmark', () => w.events.length >= 3);
    expect(w.events.map((e) => e.type)).toEqual(['ADDED', 'ADDED', 'BOOKMARK']);
    expect(w.events[2]?.object).toEqual({
      kind: 'Service',
      apiVersion: 'v1',
      metadata: { resourceVersion: sb.resourceVersion(), annotations: { 'k8s.io/initial-events-end': 'true' } },
    });
    w.abort();
  });

  it('waits for a resourceVersion ahead of the server, then reports 504 Too large resource version', async () => {
    sb = await startSandbox({ objects: [svc('n', 'a')] });
    const ahead = String(Number(sb.resourceVersion()) + 1);
    const { watch } = clientsFor(sb.url);
    const w = await collectWatch(watch, '/api/v1/services', { resourceVersion: ahead });
    sb.apply(svc('n', 'b')); // revision reaches `ahead`: the watch starts after it
    sb.apply(svc('n', 'c'));
    await waitFor('event after catching up', () => w.events.length >= 1);
    expect(w.events.map((e) => nameOf(e.object))).toEqual(['c']);
    w.abort();
    const far = await raw(`${sb.url}/api/v1/services?watch=1&resourceVersion=999999`);
    expect(JSON.parse(far.body.trim())).toMatchObject({
      type: 'ERROR',
      object: { kind: 'Status', code: 504, reason: 'Timeout' },
    });
  });

  it('survives clients that go away in the middle of a large list or initial watch dump', async () => {
    sb = await startSandbox({ synthetic: { services: 100, pods: 5_000 } });
    const http = await import('node:http');
    for (const path of ['/api/v1/pods', '/api/v1/pods?watch=1']) {
      await new Promise<void>((resolve, reject) => {
        const req = http.get(`${sb?.url ?? ''}${path}`, (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        });
        req.on('error', (e) => {
          if ((e as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(e);
        });
      });
    }
    await waitFor('aborted watch removed', () => sb?.watchCount() === 0);
    const { core } = clientsFor(sb.url);
    expect((await core.listNamespacedPod({ namespace: 'payments', limit: 10 })).items).toHaveLength(10);
  });

  it('goes offline (refuses connections, ends watches) and comes back', async () => {
    sb = await startSandbox({ objects: [svc('n', 'a')] });
    const { core, watch } = clientsFor(sb.url);
    const w = await collectWatch(watch, '/api/v1/services', {});
    await waitFor('initial', () => w.events.length >= 1);
    await sb.setOffline(true);
    const err = await w.done;
    // the stream was cut: client-node reports an error or a server-side close
    expect(sb.watchCount()).toBe(0);
    void err;
    const listErr = await core.listServiceForAllNamespaces({}).catch((e: unknown) => e);
    expect(listErr).toBeInstanceOf(Error);
    expect(String((listErr as Error).message) + String((listErr as { code?: unknown }).code)).toMatch(
      /ECONNREFUSED|fetch failed|request to/,
    );
    const port = sb.port;
    sb.apply(svc('n', 'b'));
    await sb.setOffline(false);
    expect(sb.port).toBe(port);
    const list = await core.listServiceForAllNamespaces({});
    expect(list.items.map((s) => s.metadata?.name)).toEqual(['a', 'b']);
  });

  it('counts open watches per resource, in process and at GET /debug/watches', async () => {
    sb = await startSandbox({ objects: [svc('n', 'a')] });
    const { watch } = clientsFor(sb.url);
    const w1 = await collectWatch(watch, '/api/v1/services', {});
    const w2 = await collectWatch(watch, '/api/v1/services', {});
    const w3 = await collectWatch(watch, '/api/v1/namespaces', {});
    await waitFor('three watches', () => sb?.watchCount() === 3);
    expect(sb.watchesByResource()).toEqual({ services: 2, namespaces: 1 });
    const r = await raw(`${sb.url}/debug/watches`);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ open: 3, byResource: { services: 2, namespaces: 1 } });
    for (const w of [w1, w2, w3]) w.abort();
    await waitFor('watches closed', () => sb?.watchCount() === 0);
    expect(JSON.parse((await raw(`${sb.url}/debug/watches`)).body)).toEqual({ open: 0, byResource: {} });
  });
});
