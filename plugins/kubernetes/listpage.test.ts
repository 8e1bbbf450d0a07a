/**
 * The list page bound of the plugin's reflectors: a page whose body is longer than the bound is
 * asked for again (same `continue`) with half the `limit`, and a server that answers every list
 * with an endless body makes each list fail at the bound (its connection closed, the heap not
 * growing) and be retried with backoff. The bound is made small through the index's `tuning`.
 */
import * as http from 'node:http';
import type * as net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { answers, startHandler, startIndex, startTestSandbox, type Cleanups } from '../../test/helpers/kubeindex.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { waitFor } from '../../test/helpers/wait.js';
import { ns, svc } from './testdata.js';

const cleanups: Cleanups = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** The body of GET `url` as text. */
const fetchText = async (url: string): Promise<string> => (await fetch(url)).text();

const SERVICES = 40;

function services(): unknown[] {
  const out: unknown[] = [ns('testns')];
  for (let i = 0; i < SERVICES; i++) {
    // names and addresses of one length: every service has the same size in a list page
    out.push(
      svc('testns', `svc-${10 + i}`, {
        type: 'ClusterIP',
        clusterIP: `10.96.1.${10 + i}`,
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      }),
    );
  }
  return out;
}

describe('list pages larger than the bound', () => {
  it('asks again with half the limit until a page fits, keeps that limit for the rest of the list, and starts the next list at 500', async () => {
    const logs = captureLogs(cleanups).lines;
    const sb = await startTestSandbox(cleanups, services());
    // The bound: a page of 8 services. Pages of 500, 250, 125, 62 and 31 (all 40) and 15 are
    // larger; 7 fits.
    const bound = (await fetchText(`${sb.url}/api/v1/services?limit=8`)).length;
    expect((await fetchText(`${sb.url}/api/v1/services?limit=15`)).length).toBeGreaterThan(bound);
    expect((await fetchText(`${sb.url}/api/v1/services?limit=7`)).length).toBeLessThanOrEqual(bound);
    const mine = sb.requests.length;
    const ix = startIndex(cleanups, sb.url, { tuning: { maxListPageChars: bound } });
    const h = startHandler(cleanups, ix);
    await waitFor('synced', () => ix.synced());
    for (let i = 0; i < SERVICES; i++) {
      expect(await answers(h, `svc-${10 + i}.testns.svc.cluster.local.`)).toEqual([
        `svc-${10 + i}.testns.svc.cluster.local. 5 IN A 10.96.1.${10 + i}`,
      ]);
    }
    const lists = (): { limit: string; cont: string }[] =>
      sb.requests
        .slice(mine)
        .filter((r) => r.path === '/api/v1/services' && r.query['watch'] !== 'true')
        .map((r) => ({ limit: r.query['limit'] ?? '', cont: r.query['continue'] ?? '' }));
    const halvings = ['500', '250', '125', '62', '31', '15'];
    const oneList = [...halvings, '7', '7', '7', '7', '7', '7'];
    expect(lists().map((l) => l.limit)).toEqual(oneList);
    // the retries are the same request (no continue: the first page); then the pages go on
    expect(
      lists()
        .slice(0, 7)
        .every((l) => l.cont === ''),
    ).toBe(true);
    expect(
      new Set(
        lists()
          .slice(7)
          .map((l) => l.cont),
      ).size,
    ).toBe(5);
    expect(
      lists()
        .slice(7)
        .every((l) => l.cont !== ''),
    ).toBe(true);
    const warning = (from: string, to: string): string =>
      `[WARNING] plugin/kubernetes: services: list page larger than ${bound} characters at limit=${from}: asking again with limit=${to}`;
    const expected = halvings.map((l, i) => warning(l, [...halvings.slice(1), '7'][i]!));
    expect(logs.filter((l) => l.includes('list page larger than'))).toEqual(expected);
    // the namespaces and EndpointSlices lists fit at 500
    expect(
      sb.requests
        .slice(mine)
        .filter((r) => r.path !== '/api/v1/services' && r.query['watch'] !== 'true')
        .map((r) => r.query['limit']),
    ).toEqual(['500', '500']);

    // A relist (the watch resumes into 410 Gone after the connection was cut) starts at 500 again.
    let gone = false;
    sb.setFailure((r) => {
      if (gone || r.path !== '/api/v1/services' || r.query['watch'] !== 'true') return undefined;
      gone = true;
      return 410;
    });
    await sb.setOffline(true);
    await sb.setOffline(false);
    await waitFor('a second list done', () => lists().length === 2 * oneList.length);
    expect(lists().map((l) => l.limit)).toEqual([...oneList, ...oneList]);
    await waitFor(
      'twelve warnings',
      () => logs.filter((l) => l.includes('list page larger than')).length === 2 * expected.length,
    );
    expect(ix.synced()).toBe(true);
  });

  it('an API server answering every list with an endless body: each list fails at the bound, with backoff, the heap stays bounded', async () => {
    let opened = 0;
    let closed = 0;
    const limits: string[] = [];
    const srv = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/api/v1/services') limits.push(url.searchParams.get('limit') ?? '');
      opened++;
      res.on('close', () => {
        closed++;
      });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[');
      const item = Buffer.from(`{"metadata":{"name":"${'x'.repeat(1000)}"}},`);
      const chunk = Buffer.concat(Array.from({ length: 64 }, () => item));
      // forever, as fast as the client reads
      const pump = (): void => {
        while (!res.destroyed) if (!res.write(chunk)) return void res.once('drain', pump);
      };
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

    const bound = 1024 * 1024;
    // Each reflector holds at most a bound's worth of text (a few MiB for the three) at a time
    // (measured: 13 MiB of heap growth at most); without the bound the first page alone grows to
    // hundreds of MiB.
    const heapLimitMiB = 128;
    const base = process.memoryUsage().heapUsed;
    const growth = (): number => (peak - base) / 1048576;
    let peak = base;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().heapUsed);
    }, 5);
    cleanups.push(() => clearInterval(sampler));
    const logs = captureLogs(cleanups).lines;
    const ix = startIndex(cleanups, `http://127.0.0.1:${port}`, {
      tuning: { maxListPageChars: bound, backoffMinMs: 20, backoffMaxMs: 40 },
    });
    // three lists of services, each down to limit=1
    const oneList = ['500', '250', '125', '62', '31', '15', '7', '3', '1'];
    await waitFor(
      'three lists of services failed',
      () => {
        if (growth() >= heapLimitMiB) throw new Error(`heap grew by ${growth().toFixed(0)} MiB`);
        return limits.length >= 3 * oneList.length && ix.watches.every((r) => r.failures >= 3);
      },
      { timeoutMs: 60_000 },
    );
    clearInterval(sampler);
    expect(limits.slice(0, 3 * oneList.length)).toEqual([...oneList, ...oneList, ...oneList]);
    expect(ix.synced()).toBe(false);
    expect(ix.notReadyReason()).toContain(`list page larger than ${bound} characters`);
    expect(logs).toContain(
      `[WARNING] plugin/kubernetes: list of services failed: services: list page larger than ${bound} characters`,
    );
    // every response was cut by the client (the server writes forever otherwise)
    await waitFor('every connection closed but the ones open now', () => closed >= opened - 3, { timeoutMs: 20_000 });
    expect(closed).toBeGreaterThanOrEqual(3 * 3 * oneList.length - 3);
    expect(growth()).toBeLessThan(heapLimitMiB);
  }, 90_000);
});
