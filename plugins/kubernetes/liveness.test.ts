/**
 * API liveness of the plugin's list/watch client against the sandbox API server: a connection
 * that dies silently (through sandbox/faultproxy.ts), retries that leave nothing behind, the
 * backoff starting over after an outage, 429 with Retry-After, a resourceVersion counter that went
 * backwards, and the staleness metric and log lines. Waits poll with a generous failure timeout;
 * the liveness bound and backoff are made small through the index's `tuning` setting.
 */
import { getEventListeners } from 'node:events';
import * as http from 'node:http';
import * as net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { registry } from '../../src/metrics/registry.js';
import { answers, startHandler, startIndex, startTestSandbox, type Cleanups } from '../../test/helpers/kubeindex.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { waitFor } from '../../test/helpers/wait.js';
import { startFaultProxy, type FaultProxy } from '../../sandbox/faultproxy.js';
import type { Sandbox } from '../../sandbox/server.js';
import { retryAfterMs } from './client.js';
import { KubernetesHandler } from './handler.js';
import { KubeIndexSource } from './indexsource.js';
import type { WatchSettings } from './kubeindex.js';
import { fixtureObjects, svc } from './testdata.js';
import { rvBefore } from './watch.js';

const cleanups: Cleanups = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const sandbox = (opts: { bookmarkIntervalMs?: number } = {}): Promise<Sandbox> =>
  startTestSandbox(cleanups, fixtureObjects(), opts);

async function proxy(sb: Sandbox): Promise<FaultProxy> {
  const px = await startFaultProxy({ port: sb.port });
  cleanups.push(() => px.close());
  return px;
}

const index = (url: string, over: Partial<WatchSettings> = {}): KubeIndexSource => startIndex(cleanups, url, over);

const handler = (ix: KubeIndexSource): KubernetesHandler => startHandler(cleanups, ix);

const seen = (h: KubernetesHandler, name: string) => async (): Promise<boolean> =>
  (await answers(h, `${name}.testns.svc.cluster.local.`)).length === 1;

function service(name: string, ip: string): unknown {
  return svc('testns', name, {
    type: 'ClusterIP',
    clusterIP: ip,
    ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
  });
}

async function staleness(resource: string): Promise<number | undefined> {
  const m = await registry.getSingleMetric('coredns_kubernetes_watch_staleness_seconds')!.get();
  return m.values.find((v) => v.labels['resource'] === resource)?.value;
}

describe('API liveness', () => {
  it('re-establishes a watch whose connection stopped relaying (no FIN, no RST) and sees a new service', async () => {
    const logs = captureLogs(cleanups).lines;
    const sb = await sandbox({ bookmarkIntervalMs: 100 });
    const px = await proxy(sb);
    const ix = index(px.url, { tuning: { livenessMs: 1000 } });
    const h = handler(ix);
    await waitFor('synced', () => ix.synced());
    await waitFor('three watches open', () => sb.watchCount() === 3);
    expect(
      sb.requests.filter((r) => r.query['watch'] === 'true').every((r) => r.query['allowWatchBookmarks'] === 'true'),
    ).toBe(true);
    expect(px.freeze()).toBeGreaterThanOrEqual(3);
    sb.apply(service('after-freeze', '10.96.7.7'));
    await waitFor('service created after the freeze seen', seen(h, 'after-freeze'));
    expect(
      logs.some((l) =>
        /^\[WARNING\] plugin\/kubernetes: watch of services delivered nothing \(no event, no bookmark\) for [\d.]+s: re-establishing it$/.test(
          l,
        ),
      ),
    ).toBe(true);
    // the new watches came through new connections
    expect(px.live()).toBeGreaterThanOrEqual(1);
  });

  it('logs staleness past the bound, reports it as a metric, and keeps serving the last state', async () => {
    const logs = captureLogs(cleanups).lines;
    const sb = await sandbox({ bookmarkIntervalMs: 100 });
    const ix = index(sb.url, { tuning: { livenessMs: 500 } });
    const h = handler(ix);
    await waitFor('synced', () => ix.synced());
    expect(await staleness('services')).toBeGreaterThanOrEqual(0);
    const from = logs.length;
    await sb.setOffline(true);
    const stale =
      /^\[WARNING\] plugin\/kubernetes: services: no event or bookmark from the API server for [\d.]+s \(bound 0\.5s\); serving the last-known state$/;
    await waitFor('staleness warning', () => logs.some((l) => stale.test(l)));
    expect(await staleness('services')).toBeGreaterThanOrEqual(0.5);
    // logged once per stale period, not at every check
    await waitFor('stale for three times the bound', async () => ((await staleness('services')) ?? 0) >= 1.5);
    expect(logs.slice(from).filter((l) => stale.test(l))).toHaveLength(1);
    expect(await answers(h, 'svc1.testns.svc.cluster.local.')).toEqual([
      'svc1.testns.svc.cluster.local. 5 IN A 10.96.0.11',
    ]);
    await sb.setOffline(false);
    await waitFor('up to date again', () =>
      logs.some((l) =>
        /^\[INFO\] plugin\/kubernetes: services: up to date again after [\d.]+s without an event or bookmark$/.test(l),
      ),
    );
  });

  it('retries during repeated outages leave no abort listeners behind', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => {
      warnings.push(w);
    };
    process.on('warning', onWarning);
    cleanups.push(() => {
      process.off('warning', onWarning);
    });
    const sb = await sandbox();
    const ix = index(sb.url, { tuning: { backoffMinMs: 2, backoffMaxMs: 10 } });
    await waitFor('synced', () => ix.synced());
    for (let round = 0; round < 3; round++) {
      const before = ix.watches.map((r) => r.failures);
      await sb.setOffline(true);
      await waitFor('15 failed retries per watch', () => ix.watches.every((r, i) => r.failures >= before[i]! + 15));
      await sb.setOffline(false);
      await waitFor('watches back', () => sb.watchCount() === ix.watches.length);
    }
    // at most the link of the open watch's request
    for (const r of ix.watches) expect(getEventListeners(r.signal, 'abort').length).toBeLessThanOrEqual(1);
    await new Promise((r) => setImmediate(r));
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map(String)).toEqual([]);
  });

  it('starts the backoff over once a watch is healthy again: a change made during each of many outages is seen', async () => {
    const sb = await sandbox({ bookmarkIntervalMs: 100 });
    const ix = index(sb.url, { tuning: { backoffMinMs: 200, backoffMaxMs: 60_000 } });
    const h = handler(ix);
    await waitFor('synced', () => ix.synced());
    for (let i = 0; i < 10; i++) {
      await sb.setOffline(true);
      sb.apply(service(`cut${i}`, `10.96.8.${i + 1}`));
      await sb.setOffline(false);
      // Without the reset the delay doubles with every outage (25 s and more by the 8th).
      await waitFor(`service made during outage ${i} seen`, seen(h, `cut${i}`), { timeoutMs: 10_000 });
    }
  }, 120_000);

  it('waits out Retry-After of a 429 on list and watch', async () => {
    const sb = await sandbox();
    let lists = 0;
    let watches = 0;
    sb.setFailure((r) => {
      if (r.path !== '/api/v1/services') return undefined;
      const n = r.query['watch'] === 'true' ? watches++ : lists++;
      return n < 2 ? 429 : undefined;
    });
    const ix = index(sb.url, { tuning: { backoffMinMs: 10, backoffMaxMs: 50 } });
    await waitFor('synced', () => ix.synced());
    await waitFor('third watch request', () => watches >= 3);
    const at = (watch: boolean): number[] =>
      sb.requests
        .filter((r) => r.path === '/api/v1/services' && (r.query['watch'] === 'true') === watch)
        .map((r) => r.at);
    for (const times of [at(false), at(true)]) {
      // the sandbox answers 429 with `Retry-After: 1`
      expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(990);
      expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(990);
    }
  });

  it('spaces the relists of a watch that keeps answering 410 right after each list (doubling delay)', async () => {
    const sb = await sandbox();
    sb.setFailure((r) => (r.path === '/api/v1/services' && r.query['watch'] === 'true' ? 410 : undefined));
    const ix = index(sb.url, { tuning: { backoffMinMs: 200, backoffMaxMs: 60_000 } });
    const lists = (): number[] =>
      sb.requests.filter((r) => r.path === '/api/v1/services' && r.query['limit'] === '500').map((r) => r.at);
    await waitFor('six lists of services', () => lists().length >= 6, { timeoutMs: 30_000 });
    const at = lists();
    // Delays drawn from [d/2, d) with d doubling from 200 ms: the fifth is at least 1600 ms.
    // (Lower bounds only: timers never fire early.) Without spacing, each list follows the last
    // 410 after 100-200 ms, however often it happens.
    expect(at[5]! - at[4]!).toBeGreaterThanOrEqual(1600);
    expect(ix.synced()).toBe(true);
  }, 40_000);

  /** A synced index with its three watches open, and a count of the services lists it made. */
  const syncedWithListCount = async () => {
    const logs = captureLogs(cleanups).lines;
    const sb = await sandbox();
    const ix = index(sb.url);
    const h = handler(ix);
    await waitFor('synced', () => ix.synced());
    await waitFor('three watches open', () => sb.watchCount() === 3);
    const lists = (): number =>
      sb.requests.filter((r) => r.path === '/api/v1/services' && r.query['limit'] === '500').length;
    return { logs, sb, h, lists, before: lists() };
  };

  it('relists when the API server comes back with its resourceVersion counter set back (etcd restored)', async () => {
    const { logs, sb, h, lists, before } = await syncedWithListCount();
    // The API server restarts on an etcd restored from an old backup: watches are cut, and the
    // resumed ones ask for a resourceVersion the server has not reached (504 after 3 s).
    sb.rewindResourceVersion(2);
    sb.apply(service('after-restore', '10.96.9.9'));
    await waitFor('service created after the restore seen', seen(h, 'after-restore'));
    expect(lists()).toBeGreaterThan(before);
    expect(
      logs.some((l) =>
        /^\[WARNING\] plugin\/kubernetes: services: the API server's resourceVersion went backwards \(now \d+, \d+ seen before; etcd restored or wiped\?\): relisting$/.test(
          l,
        ),
      ),
    ).toBe(true);
  });

  it('relists when a watch event carries a resourceVersion below the last one seen', async () => {
    const { logs, sb, h, lists, before } = await syncedWithListCount();
    sb.rewindResourceVersion(2, { keepWatches: true });
    sb.apply(service('after-rewind', '10.96.9.10'));
    await waitFor('service created after the rewind seen', seen(h, 'after-rewind'));
    // seen through a relist, not by applying the event from before the counter's past
    expect(lists()).toBe(before + 1);
    expect(
      logs.some((l) => l.includes("services: the API server's resourceVersion went backwards (watch event at 3,")),
    ).toBe(true);
  });
});

describe('connecting', () => {
  it('gives up a TLS handshake the API server never answers after the connect timeout', async () => {
    // accepts TCP connections, never says a word
    const held = new Set<net.Socket>();
    const srv = net.createServer((s) => {
      held.add(s);
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          for (const s of held) s.destroy();
          srv.close(() => r());
        }),
    );
    const port = (srv.address() as net.AddressInfo).port;
    const ix = index(`https://127.0.0.1:${port}`, { connectTimeoutMs: 300 });
    await waitFor('connect timeout reported', () =>
      ix.notReadyReason().includes(`TLS handshake with 127.0.0.1:${port}: i/o timeout (300 ms)`),
    );
    expect(ix.synced()).toBe(false);
  });
});

describe('a misbehaving API server', () => {
  it('a watch line that never ends is cut at the event size bound: the stream is dropped, memory stays bounded', async () => {
    // Lists answer empty; every watch streams characters without a newline until the client hangs up.
    let closedWatches = 0;
    const LIMIT_SENT = 64 * 1024 * 1024;
    const srv = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      res.writeHead(200, { 'Content-Type': 'application/json' });
      if (url.searchParams.get('watch') !== 'true') {
        res.end(JSON.stringify({ kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] }));
        return;
      }
      const chunk = Buffer.alloc(64 * 1024, 0x78);
      let sent = 0;
      const pump = (): void => {
        while (sent < LIMIT_SENT && !res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
      };
      res.on('close', () => {
        closedWatches++;
      });
      res.write('{"type":"ADDED","object":{"metadata":{"name":"');
      pump();
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          srv.closeAllConnections();
          srv.close(() => r());
        }),
    );
    const port = (srv.address() as net.AddressInfo).port;
    const ix = index(`http://127.0.0.1:${port}`, { tuning: { backoffMinMs: 50, backoffMaxMs: 100 } });
    await waitFor('synced', () => ix.synced());
    await waitFor(
      'a watch cut at the bound',
      () => ix.watches.some((r) => (r.lastError ?? '').includes('watch event longer than')),
      { timeoutMs: 30_000 },
    );
    await waitFor('the server saw the watch closed', () => closedWatches >= 1, { timeoutMs: 30_000 });
  }, 60_000);
});

describe('an API server answering an error with an endless body', () => {
  it('reads a bounded part of the body: the request fails with the status, memory stays bounded', async () => {
    let closed = 0;
    const srv = http.createServer((_req, res) => {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x78);
      let sent = 0;
      const pump = (): void => {
        while (sent < 64 * 1024 * 1024 && !res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
      };
      res.on('close', () => {
        closed++;
      });
      pump();
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          srv.closeAllConnections();
          srv.close(() => r());
        }),
    );
    const port = (srv.address() as net.AddressInfo).port;
    const ix = index(`http://127.0.0.1:${port}`, { tuning: { backoffMinMs: 50, backoffMaxMs: 100 } });
    await waitFor('the list failure reported', () => ix.notReadyReason().includes('HTTP 500 on services'), {
      timeoutMs: 30_000,
    });
    await waitFor('the server saw the request closed', () => closed >= 1, { timeoutMs: 30_000 });
  }, 60_000);
});

describe('helpers', () => {
  it('compares decimal resourceVersions as numbers and never orders opaque ones', () => {
    expect(rvBefore('9', '10')).toBe(true);
    expect(rvBefore('10', '9')).toBe(false);
    expect(rvBefore('10', '10')).toBe(false);
    expect(rvBefore('007', '10')).toBe(true);
    expect(rvBefore('123456789012345678901', '123456789012345678902')).toBe(true);
    expect(rvBefore('abc', '10')).toBe(false);
    expect(rvBefore('', '10')).toBe(false);
  });

  it('parses Retry-After as seconds or an HTTP date, capped at 5 minutes', () => {
    expect(retryAfterMs('1')).toBe(1000);
    expect(retryAfterMs(undefined)).toBeNull();
    expect(retryAfterMs('soon')).toBeNull();
    expect(retryAfterMs('100000')).toBe(300_000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:07 GMT', now)).toBe(7000);
    expect(retryAfterMs('Wed, 31 Dec 2025 23:59:00 GMT', now)).toBe(0);
  });
});
