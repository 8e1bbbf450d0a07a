/**
 * The watch-backed index against the local API server of sandbox/: initial list, live changes,
 * API server outage, forced relist (410), malformed objects, readiness reasons, label selectors.
 * Waits poll with a failure timeout; nothing asserts on timing.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { rcodeFromName } from '../../src/dns/constants.js';
import { registry } from '../../src/metrics/registry.js';
import { makeQuery } from '../../test/helpers/dns.js';
import { answers, startHandler, startIndex, startTestSandbox, type Cleanups } from '../../test/helpers/kubeindex.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { waitFor } from '../../test/helpers/wait.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { changeKey } from './changekeys.js';
import { KubernetesHandler } from './handler.js';
import { KubeIndexSource, parseRfc3339 } from './indexsource.js';
import type { WatchSettings } from './kubeindex.js';
import { fixtureObjects, ns, slice, svc } from './testdata.js';
import { baseConfig, replyOf } from './testutil.js';
import { rrLines } from '../../test/helpers/records.js';
import { VECTORS } from './vectors.js';

const cleanups: Cleanups = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const sandbox = (objects: unknown[] = fixtureObjects(), opts: { bookmarkIntervalMs?: number } = {}): Promise<Sandbox> =>
  startTestSandbox(cleanups, objects, opts);

const index = (url: string, over: Partial<WatchSettings> = {}): KubeIndexSource => startIndex(cleanups, url, over);

const handler = (ix: KubeIndexSource): KubernetesHandler => startHandler(cleanups, ix);

describe('watch-backed index', () => {
  it('lists everything, becomes ready, and uses paged lists with bookmarks', async () => {
    const sb = await sandbox();
    const ix = index(sb.url, { pods: true });
    await waitFor('synced', () => ix.synced());
    expect(ix.store.services.size).toBe(14);
    expect(ix.store.slices.size).toBe(10);
    expect(ix.store.namespaces.size).toBe(4);
    expect(ix.store.pods.size).toBe(3);
    expect(ix.store.serial).toBeGreaterThan(0);
    const lists = sb.requests.filter((r) => r.path === '/api/v1/services' && r.query['watch'] === undefined);
    expect(lists[0]?.query['limit']).toBe('500');
    await waitFor('watches open', () =>
      sb.requests.some((r) => r.path === '/api/v1/pods' && r.query['watch'] === 'true'),
    );
    const w = sb.requests.find((r) => r.path === '/api/v1/pods' && r.query['watch'] === 'true')!;
    expect(w.query['allowWatchBookmarks']).toBe('true');
    expect(w.query['fieldSelector']).toBe('status.phase!=Succeeded,status.phase!=Failed,status.phase!=Unknown');
    expect(w.query['resourceVersion']).toMatch(/^\d+$/);
  });

  it('pages through more than 500 objects', async () => {
    const many = [
      ns('big'),
      ...Array.from({ length: 1203 }, (_, i) =>
        svc('big', `s${i}`, {
          type: 'ClusterIP',
          clusterIP: `10.97.${i >> 8}.${i & 255}`,
          ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
        }),
      ),
    ];
    const sb = await sandbox(many);
    const ix = index(sb.url);
    await waitFor('synced', () => ix.synced());
    expect(ix.store.services.size).toBe(1203);
    const pages = sb.requests.filter((r) => r.path === '/api/v1/services' && r.query['watch'] === undefined);
    expect(pages.length).toBe(3);
    expect(pages[1]!.query['continue']).toBeTruthy();
  });

  it('answers follow creates, updates and deletes of services and slices', async () => {
    const sb = await sandbox();
    const ix = index(sb.url);
    const h = handler(ix);
    await waitFor('synced', () => ix.synced());
    const name = 'fresh.testns.svc.cluster.local.';
    expect(await answers(h, name)).toEqual([]);
    sb.apply(
      svc('testns', 'fresh', {
        type: 'ClusterIP',
        clusterIP: '10.96.1.1',
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      }),
    );
    await waitFor('created service visible', async () => (await answers(h, name)).length === 1);
    expect(await answers(h, name)).toEqual([`${name} 5 IN A 10.96.1.1`]);

    // headless service whose endpoints change
    sb.apply(
      svc('testns', 'hl2', {
        type: 'ClusterIP',
        clusterIP: 'None',
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      }),
    );
    sb.apply(
      slice(
        'testns',
        'hl2-a',
        'hl2',
        [{ name: 'http', port: 8080, protocol: 'TCP' }],
        [{ ip: '10.244.9.1', ready: true }],
      ),
    );
    const hl2 = 'hl2.testns.svc.cluster.local.';
    await waitFor('headless endpoints visible', async () => (await answers(h, hl2)).length === 1);
    sb.apply(
      slice(
        'testns',
        'hl2-a',
        'hl2',
        [{ name: 'http', port: 8080, protocol: 'TCP' }],
        [
          { ip: '10.244.9.1', ready: true },
          { ip: '10.244.9.2', ready: true },
        ],
      ),
    );
    await waitFor('second endpoint visible', async () => (await answers(h, hl2)).length === 2);
    expect((await answers(h, hl2)).sort()).toEqual([`${hl2} 5 IN A 10.244.9.1`, `${hl2} 5 IN A 10.244.9.2`]);
    sb.remove('EndpointSlice', 'testns', 'hl2-a');
    const nx = async (): Promise<boolean> => {
      const q = makeQuery(hl2, 'A');
      return (await h.serve(q)) === 3;
    };
    await waitFor('headless without endpoints is NXDOMAIN', nx);

    sb.remove('Service', 'testns', 'fresh');
    await waitFor('deleted service gone', async () => (await answers(h, name)).length === 0);
  });

  it('keeps serving the last state while the API server is offline and catches up afterwards', async () => {
    const sb = await sandbox();
    const ix = index(sb.url);
    const h = handler(ix);
    await waitFor('synced', () => ix.synced());
    const lists = (): number => sb.requests.filter((r) => r.query['watch'] === undefined).length;
    const listsBefore = lists();
    await sb.setOffline(true);
    expect(await answers(h, 'svc1.testns.svc.cluster.local.')).toEqual([
      'svc1.testns.svc.cluster.local. 5 IN A 10.96.0.11',
    ]);
    sb.apply(
      svc('testns', 'during-cut', {
        type: 'ClusterIP',
        clusterIP: '10.96.2.2',
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      }),
    );
    sb.remove('Service', 'testns', 'svc2');
    // still the old state while offline
    expect(await answers(h, 'svc2.testns.svc.cluster.local.')).toEqual([
      'svc2.testns.svc.cluster.local. 5 IN A 10.96.0.12',
    ]);
    await sb.setOffline(false);
    await waitFor(
      'change made during the cut seen',
      async () => (await answers(h, 'during-cut.testns.svc.cluster.local.')).length === 1,
    );
    await waitFor(
      'delete made during the cut seen',
      async () => (await answers(h, 'svc2.testns.svc.cluster.local.')).length === 0,
    );
    expect(ix.synced()).toBe(true);
    // the watches resumed from the last seen resourceVersion: no relist was needed
    expect(lists()).toBe(listsBefore);
  });

  it('relists and diffs after 410 Gone (history compacted while disconnected)', async () => {
    const sb = await sandbox();
    const ix = index(sb.url);
    const h = handler(ix);
    await waitFor('synced', () => ix.synced());
    const listsBefore = sb.requests.filter(
      (r) => r.path === '/api/v1/services' && r.query['watch'] === undefined,
    ).length;
    await sb.setOffline(true);
    sb.remove('Service', 'testns', 'svc1');
    sb.apply(
      svc('testns', 'after-gone', {
        type: 'ClusterIP',
        clusterIP: '10.96.3.3',
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      }),
    );
    sb.compact();
    await sb.setOffline(false);
    await waitFor(
      'relist happened',
      () =>
        sb.requests.filter((r) => r.path === '/api/v1/services' && r.query['watch'] === undefined).length > listsBefore,
    );
    await waitFor(
      'vanished object deleted by the diff',
      async () => (await answers(h, 'svc1.testns.svc.cluster.local.')).length === 0,
    );
    await waitFor(
      'new object present',
      async () => (await answers(h, 'after-gone.testns.svc.cluster.local.')).length === 1,
    );
    expect(ix.store.services.has('svc1.testns')).toBe(false);
  });

  it('relists after an API server restart page by page: unchanged records are kept, not copied', async () => {
    const big = (i: number, ip = `10.97.${i >> 8}.${i & 255}`) =>
      svc('big', `s${String(i).padStart(4, '0')}`, {
        type: 'ClusterIP',
        clusterIP: ip,
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      });
    const sb = await sandbox([ns('big'), ...Array.from({ length: 1203 }, (_, i) => big(i))]);
    const ix = index(sb.url);
    await waitFor('synced', () => ix.synced());
    const lists = () => sb.requests.filter((r) => r.path === '/api/v1/services' && r.query['watch'] === undefined);
    const listsBefore = lists().length;
    const unchanged = ix.store.services.get('s0500.big');
    expect(unchanged).toBeDefined();
    // Changes no watch delivers: made while the API server is away, then its history is compacted.
    await sb.setOffline(true);
    sb.apply(big(1, '10.98.0.1')); // in the first page
    sb.remove('Service', 'big', 's0700');
    sb.apply(big(1202, '10.98.0.2')); // in the last page
    sb.restart();
    const notes: string[][] = [];
    cleanups.push(ix.store.subscribe((d) => notes.push([...d])));
    await sb.setOffline(false);
    await waitFor('relisted', () => lists().length >= listsBefore + 3 && !ix.store.services.has('s0700.big'));
    expect(ix.store.services.size).toBe(1202);
    expect(ix.store.services.get('s0001.big')?.clusterIPs).toEqual(['10.98.0.1']);
    expect(ix.store.services.get('s1202.big')?.clusterIPs).toEqual(['10.98.0.2']);
    // The record of an unchanged service is the one listed first: the relist's copy was dropped.
    expect(ix.store.services.get('s0500.big')).toBe(unchanged);
    // Each page went into the index as it came: the first page's change, the last page's change
    // and the removal at the end of the list were told apart.
    const told = (k: string) => notes.findIndex((n) => n.includes(k));
    const first = told(changeKey.service('s0001.big'));
    const last = told(changeKey.service('s1202.big'));
    const removed = told(changeKey.service('s0700.big'));
    expect(first).toBeGreaterThanOrEqual(0);
    expect(last).toBeGreaterThan(first);
    expect(removed).toBeGreaterThan(last);
  });

  it('skips malformed objects with one warning each and keeps the rest', async () => {
    const logs = captureLogs(cleanups).lines;
    const objs = [
      ...fixtureObjects(),
      svc('testns', 'badip', {
        type: 'ClusterIP',
        clusterIP: '10.96.999.1',
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      }),
      slice(
        'testns',
        'badaddr',
        'svc1',
        [{ name: 'http', port: 8080, protocol: 'TCP' }],
        [{ ip: 'not-an-ip', ready: true }],
      ),
      slice('testns', 'fqdn', 'svc1', [], [{ ip: 'www.example.com', ready: true }], 'FQDN'),
    ];
    const sb = await sandbox(objs);
    const ix = index(sb.url);
    const h = handler(ix);
    await waitFor('synced', () => ix.synced());
    expect(ix.store.services.has('badip.testns')).toBe(false);
    expect(ix.store.slices.has('testns/badaddr')).toBe(false);
    expect(ix.store.slices.has('testns/fqdn')).toBe(false);
    expect(await answers(h, 'svc1.testns.svc.cluster.local.')).toEqual([
      'svc1.testns.svc.cluster.local. 5 IN A 10.96.0.11',
    ]);
    const warnings = logs.filter((l) => l.startsWith('[WARNING] plugin/kubernetes: skipping malformed'));
    expect(warnings.filter((l) => l.includes('badip')).length).toBe(1);
    expect(warnings.filter((l) => l.includes('badaddr')).length).toBe(1);
    expect(warnings.some((l) => l.includes('fqdn'))).toBe(false);
    // a malformed update arriving over the watch is skipped too
    sb.apply(
      svc('testns', 'badport', {
        type: 'ClusterIP',
        clusterIP: '10.96.4.4',
        ports: [{ name: 'http', port: 'eighty', protocol: 'TCP' }],
      }),
    );
    await waitFor('warning for watched malformed object', () =>
      logs.some((l) => l.includes('skipping malformed') && l.includes('badport')),
    );
  });

  it('reports why it is not ready (RBAC) and becomes ready when access is granted', async () => {
    const sb = await sandbox();
    sb.setFailure((r) => (r.path.includes('endpointslices') ? 403 : undefined));
    const ix = index(sb.url);
    await waitFor('error recorded', () => ix.notReadyReason().includes('403'));
    expect(ix.synced()).toBe(false);
    expect(ix.notReadyReason()).toMatch(/^kubernetes: 403 on endpointslices — RBAC missing list\/watch/);
    const h = new KubernetesHandler(baseConfig(), ix.store, () => ix.synced(), null, null);
    cleanups.push(() => h.close());
    await waitFor('services listed', () => ix.store.services.size > 0);
    const q = makeQuery('missing.testns.svc.cluster.local.', 'A');
    expect(await h.serve(q)).toBe(2); // name error while unsynced → SERVFAIL with SOA
    expect(replyOf(q)!.authorities.map((r) => r.type)).toEqual(['SOA']);
    sb.setFailure();
    await waitFor('synced after access granted', () => ix.synced());
  });

  it('passes label selectors to the API and exposes only selected namespaces', async () => {
    const objs = [
      ns('team-a', { team: 'a' }),
      ns('team-b', { team: 'b' }),
      svc(
        'team-a',
        'web',
        { type: 'ClusterIP', clusterIP: '10.96.5.1', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
        { app: 'web' },
      ),
      svc(
        'team-b',
        'web',
        { type: 'ClusterIP', clusterIP: '10.96.5.2', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
        { app: 'web' },
      ),
      svc(
        'team-a',
        'db',
        { type: 'ClusterIP', clusterIP: '10.96.5.3', ports: [{ name: 'pg', port: 5432, protocol: 'TCP' }] },
        { app: 'db' },
      ),
    ];
    const sb = await sandbox(objs);
    const ix = index(sb.url, { labels: 'app=web', namespaceLabels: 'team=a' });
    const h = handler(ix);
    await waitFor('synced', () => ix.synced());
    expect(sb.requests.find((r) => r.path === '/api/v1/services')!.query['labelSelector']).toBe('app=web');
    expect(sb.requests.find((r) => r.path === '/api/v1/namespaces')!.query['labelSelector']).toBe('team=a');
    expect(await answers(h, 'web.team-a.svc.cluster.local.')).toEqual([
      'web.team-a.svc.cluster.local. 5 IN A 10.96.5.1',
    ]);
    expect(await answers(h, 'web.team-b.svc.cluster.local.')).toEqual([]);
    expect(await answers(h, 'db.team-a.svc.cluster.local.')).toEqual([]);
    // PTR is not filtered by namespace_labels (quirk #6)
    expect(await answers(h, '2.5.96.10.in-addr.arpa.', 'PTR')).toEqual([
      '2.5.96.10.in-addr.arpa. 5 IN PTR web.team-b.svc.cluster.local.',
    ]);
  });

  it('observes the DNS programming duration from the trigger-time annotation', async () => {
    const sb = await sandbox();
    const ix = index(sb.url);
    await waitFor('synced', () => ix.synced());
    const count = async (): Promise<number> => {
      const m = await registry.getSingleMetric('coredns_kubernetes_dns_programming_duration_seconds')!.get();
      return m.values
        .filter(
          (v) =>
            (v as { metricName?: string }).metricName?.endsWith('_count') &&
            v.labels['service_kind'] === 'headless_with_selector',
        )
        .reduce((a, v) => a + v.value, 0);
    };
    const before = await count();
    const trig = new Date(Date.now() - 1500).toISOString().replace('Z', '123456Z');
    sb.apply(
      slice(
        'testns',
        'hl-v4',
        'hl',
        [{ name: 'http', port: 8080, protocol: 'TCP' }],
        [{ ip: '10.244.1.20', hostname: 'web-0', ready: true }],
        'IPv4',
        { annotations: { 'endpoints.kubernetes.io/last-change-trigger-time': trig } },
      ),
    );
    await waitFor('observation recorded', async () => (await count()) === before + 1);
    const text = await registry.metrics();
    expect(text).toContain('coredns_kubernetes_rest_client_requests_total{code="200",method="GET",host="127.0.0.1:');
    expect(text).toContain(
      'coredns_kubernetes_rest_client_request_duration_seconds_bucket{le="0.005",verb="GET",host="127.0.0.1:',
    );
    expect(text).toContain(
      'coredns_kubernetes_rest_client_rate_limiter_duration_seconds_count{verb="GET",host="127.0.0.1:',
    );
    expect(text).toContain(
      'coredns_kubernetes_dns_programming_duration_seconds_bucket{le="524.288",service_kind="headless_with_selector"}',
    );
  });

  it('the repository fixture examples/cluster.yaml answers the §11 vectors through list/watch', async () => {
    const sb = await startSandbox({
      files: [fileURLToPath(new URL('../../examples/cluster.yaml', import.meta.url))],
      log: () => undefined,
    });
    cleanups.push(() => sb.close());
    // As in the product, endpoint pod names are kept only by an index for endpoint_pod_names.
    const indexes = [index(sb.url, { pods: true }), index(sb.url, { pods: true, podNames: true })];
    await waitFor('synced', () => indexes.every((ix) => ix.synced()));
    const stores = new Map<string, KubernetesHandler>();
    for (const v of VECTORS) {
      if (v.noWrite || v.unsynced || v.next || v.noEndpoints) continue;
      const key = JSON.stringify(v.cfg ?? {}, (_k, val: unknown) => (val instanceof Set ? [...val] : val));
      let h = stores.get(key);
      if (!h) {
        const ix = indexes[v.cfg?.endpointPodNames ? 1 : 0]!;
        h = new KubernetesHandler(baseConfig(v.cfg), ix.store, () => ix.synced(), null, null);
        cleanups.push(() => h!.close());
        stores.set(key, h);
      }
      const q = makeQuery(v.q, v.t);
      const rc = await h.serve(q);
      const m = replyOf(q)!;
      const label = `row ${v.n}`;
      expect(rc, label).toBe(rcodeFromName(v.rcode));
      expect(rrLines(m.answers, { maskSerial: true }).sort(), label).toEqual([...(v.ans ?? [])].sort());
      expect(rrLines(m.additionals, { maskSerial: true }).sort(), label).toEqual([...(v.extra ?? [])].sort());
      expect(rrLines(m.authorities, { maskSerial: true }), label).toEqual(v.ns ?? []);
    }
  });

  it('parses RFC 3339 trigger times with nanoseconds', () => {
    expect(parseRfc3339('2026-01-01T00:00:00.123456789Z')).toBe(Date.UTC(2026, 0, 1) + 123.456789);
    expect(parseRfc3339('2026-01-01T01:00:00+01:00')).toBe(Date.UTC(2026, 0, 1));
    expect(parseRfc3339('yesterday')).toBeUndefined();
  });
});
