import * as http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ready } from './index.js';
import type { ReadyServer } from './server.js';
import { freePort } from '../../test/helpers/net.js';
import { httpErrorCode, httpRequest } from '../../test/helpers/http.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { dispenserFor, FakeCore, TestInstance } from '../../test/helpers/setup.js';
import { SharedResources } from '../../src/server/shared.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function load(text: string, shared: SharedResources, core: FakeCore): Promise<TestInstance> {
  const inst = new TestInstance({ core, shared });
  const ctx = inst.context('ready');
  expect(await ready.setup(dispenserFor(text, 'ready'), ctx)).toBeNull();
  await inst.run('startup');
  await inst.run('serving');
  return inst;
}

/** A probe whose answer the test sets; counts how often it is asked. */
function switchable(initial: true | string): {
  probe: () => true | string;
  set(v: true | string): void;
  calls: number;
} {
  let v = initial;
  const s = {
    calls: 0,
    probe: () => {
      s.calls++;
      return v;
    },
    set(x: true | string) {
      v = x;
    },
  };
  return s;
}

describe('ready endpoint', () => {
  it('is 503 with the sorted not-ready names until every probe is ready, then 200 OK', async () => {
    const port = await freePort();
    const shared = new SharedResources();
    const core = new FakeCore();
    const k8s = switchable('');
    const k8sB = switchable('');
    const other = switchable('');
    core.probes.set('kubernetes', [k8s.probe, k8sB.probe]);
    core.probes.set('erratic', [other.probe]);
    const inst = await load(`ready 127.0.0.1:${port}`, shared, core);
    cleanups.push(() => inst.release());
    const logs = captureLogs(cleanups);

    let r = await httpRequest(port, '/ready');
    expect([r.status, r.body]).toEqual([503, 'erratic,kubernetes']);
    expect(logs.lines).toEqual(['[INFO] plugin/ready: Plugins not ready: "erratic,kubernetes"']);

    other.set(true);
    r = await httpRequest(port, '/ready');
    expect([r.status, r.body]).toEqual([503, 'kubernetes']);

    // Every instance of a name must be ready.
    k8s.set(true);
    k8sB.set('watch lost');
    r = await httpRequest(port, '/ready');
    expect(r.status).toBe(503);
    // The body is the names only, as CoreDNS's (a reason goes to the debug log).
    expect(r.body).toBe('kubernetes');

    k8sB.set(true);
    r = await httpRequest(port, '/ready');
    expect([r.status, r.body]).toEqual([200, 'OK']);
    expect(logs.lines.at(-1)).toBe('[INFO] plugin/ready: Plugins not ready: "kubernetes"');

    expect((await httpRequest(port, '/readyz')).status).toBe(404);
    expect((await httpRequest(port, '/health')).body).toBe('404 page not found\n');
  });

  it('is 200 when nothing registered a probe', async () => {
    const port = await freePort();
    const shared = new SharedResources();
    const inst = await load(`ready 127.0.0.1:${port}`, shared, new FakeCore());
    cleanups.push(() => inst.release());
    expect((await httpRequest(port, '/ready')).body).toBe('OK');
  });

  it('until-ready never asks a probe again once it answered ready; continuously always asks', async () => {
    for (const [monitor, expected] of [
      ['until-ready', [200, 200]],
      ['continuously', [200, 503]],
    ] as const) {
      const port = await freePort();
      const shared = new SharedResources();
      const core = new FakeCore();
      const p = switchable(true);
      core.probes.set('kubernetes', [p.probe]);
      const inst = await load(`ready 127.0.0.1:${port} {\n monitor ${monitor}\n}`, shared, core);
      cleanups.push(() => inst.release());
      const first = await httpRequest(port, '/ready');
      p.set('lost the watch');
      const second = await httpRequest(port, '/ready');
      expect([monitor, first.status, second.status]).toEqual([monitor, ...expected]);
      expect(p.calls).toBe(monitor === 'until-ready' ? 1 : 2);
    }
  });

  it("after a reload reports the new instance's probes (until-ready starts over)", async () => {
    const port = await freePort();
    const shared = new SharedResources();
    const core = new FakeCore();
    const old = switchable(true);
    core.probes.set('kubernetes', [old.probe]);
    const first = await load(`ready 127.0.0.1:${port}`, shared, core);
    expect((await httpRequest(port, '/ready')).status).toBe(200);

    // The new instance registers new probes that have not synced yet.
    const fresh = switchable('');
    core.probes.set('kubernetes', [fresh.probe]);
    const second = await load(`ready 127.0.0.1:${port}`, shared, core);
    await first.release();
    cleanups.push(() => second.release());
    expect((await httpRequest(port, '/ready')).status).toBe(503);
    fresh.set(true);
    expect((await httpRequest(port, '/ready')).status).toBe(200);
  });

  it('closes at the start of final shutdown: new probes are refused, an open connection gets "Shutting down"', async () => {
    const port = await freePort();
    const shared = new SharedResources();
    const core = new FakeCore();
    const inst = await load(`ready 127.0.0.1:${port}`, shared, core);
    cleanups.push(() => inst.release());
    const server = shared.peek(`ready:127.0.0.1:${port}`) as ReadyServer;

    // A request caught in the middle of the shutdown: the core already says shutting down.
    core.shuttingDown = true;
    const r = await httpRequest(port, '/ready');
    expect([r.status, r.body]).toEqual([503, 'Shutting down']);
    core.shuttingDown = false;

    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    cleanups.push(() => agent.destroy());
    expect((await httpRequest(port, '/ready', { agent })).status).toBe(200);
    core.startShutdown();
    expect(server.listener.isStopped).toBe(true);
    expect(await httpErrorCode(port, '/ready')).toBe('ECONNREFUSED');
  });
});

describe('ready before the first configuration serves', () => {
  it('never answers 200 while the startup hooks run (DNS ports not open yet)', async () => {
    const port = await freePort();
    const shared = new SharedResources();
    const core = new FakeCore();
    const inst = new TestInstance({ core, shared });
    await ready.setup(dispenserFor(`ready 127.0.0.1:${port}`, 'ready'), inst.context('ready'));
    cleanups.push(() => inst.release());
    await inst.run('startup');
    let r = await httpRequest(port, '/ready');
    expect([r.status, r.body]).toEqual([503, 'Starting']);
    const k8s = switchable('');
    core.probes.set('kubernetes', [k8s.probe]);
    r = await httpRequest(port, '/ready');
    expect([r.status, r.body]).toEqual([503, 'kubernetes']);
    k8s.set(true);
    await inst.run('serving');
    r = await httpRequest(port, '/ready');
    expect([r.status, r.body]).toEqual([200, 'OK']);
  });
});
