import { afterEach, describe, expect, it, vi } from 'vitest';
import { health } from './index.js';
import { HealthServer } from './server.js';
import { logger } from '../../src/log.js';
import { freePort } from '../../test/helpers/net.js';
import { httpErrorCode, httpRequest, sampleValue } from '../../test/helpers/http.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { dispenserFor, FakeCore, TestInstance } from '../../test/helpers/setup.js';
import { SharedResources } from '../../src/server/shared.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function load(text: string, shared: SharedResources, core = new FakeCore()): Promise<TestInstance> {
  const inst = new TestInstance({ core, shared });
  const ctx = inst.context('health');
  expect(await health.setup(dispenserFor(text, 'health'), ctx)).toBeNull();
  await inst.run('startup');
  await inst.run('serving');
  return inst;
}

describe('health endpoint', () => {
  it('answers /health with 200 OK for any method and 404 elsewhere', async () => {
    const port = await freePort();
    const shared = new SharedResources();
    const inst = await load(`health 127.0.0.1:${port}`, shared);
    cleanups.push(() => inst.release());

    for (const method of ['GET', 'POST', 'PUT', 'DELETE']) {
      const r = await httpRequest(port, '/health', { method });
      expect([method, r.status, r.body]).toEqual([method, 200, 'OK']);
    }
    expect((await httpRequest(port, '/health?verbose=1')).body).toBe('OK');
    for (const path of ['/', '/healthz', '/health/', '/ready', '/metrics']) {
      const r = await httpRequest(port, path);
      expect([path, r.status, r.body]).toEqual([path, 404, '404 page not found\n']);
    }
  });

  it('keeps the listener across a reload with the same address and moves it when the address changes', async () => {
    const [p1, p2] = [await freePort(), await freePort()];
    const shared = new SharedResources();
    const first = await load(`health 127.0.0.1:${p1}`, shared);
    const server = shared.peek(`health:127.0.0.1:${p1}`);

    // Reload with the same address: the same listener object, never closed in between.
    const second = await load(`health 127.0.0.1:${p1}`, shared);
    expect(shared.peek(`health:127.0.0.1:${p1}`)).toBe(server);
    await first.release();
    expect((await httpRequest(p1, '/health')).status).toBe(200);

    // Reload to another address: the new one serves, the old one is closed after the switch.
    const third = await load(`health 127.0.0.1:${p2}`, shared);
    expect((await httpRequest(p2, '/health')).status).toBe(200);
    expect((await httpRequest(p1, '/health')).status).toBe(200);
    await second.release();
    expect(await httpErrorCode(p1, '/health')).toBe('ECONNREFUSED');
    cleanups.push(() => third.release());
  });

  it('fails the start (not the process) when the port is taken', async () => {
    const port = await freePort();
    const sharedA = new SharedResources();
    const a = await load(`health 127.0.0.1:${port}`, sharedA);
    cleanups.push(() => a.release());
    const sharedB = new SharedResources();
    await expect(load(`health 127.0.0.1:${port}`, sharedB)).rejects.toThrow(`listen tcp 127.0.0.1:${port}: `);
  });
});

describe('health self-probe', () => {
  it('observes each local request in coredns_health_request_duration_seconds', async () => {
    const port = await freePort();
    const s = new HealthServer(`127.0.0.1:${port}`, logger('health'));
    await s.start();
    cleanups.push(() => s.stop());
    expect(s.probeUrl).toBe(`http://127.0.0.1:${port}/health`);
    const before =
      (await sampleValue('coredns_health_request_duration_seconds', 'coredns_health_request_duration_seconds_count')) ??
      0;
    const failuresBefore =
      (await sampleValue('coredns_health_request_failures_total', 'coredns_health_request_failures_total')) ?? 0;
    await s.probeOnce();
    await s.probeOnce();
    expect(
      await sampleValue('coredns_health_request_duration_seconds', 'coredns_health_request_duration_seconds_count'),
    ).toBe(before + 2);
    expect(await sampleValue('coredns_health_request_failures_total', 'coredns_health_request_failures_total')).toBe(
      failuresBefore,
    );
  });

  it('counts and logs a failed local request', async () => {
    const port = await freePort();
    const s = new HealthServer(`127.0.0.1:${port}`, logger('health'));
    await s.start();
    await s.listener.stop(0);
    const logs = captureLogs(cleanups);
    const before =
      (await sampleValue('coredns_health_request_failures_total', 'coredns_health_request_failures_total')) ?? 0;
    await s.probeOnce();
    expect(await sampleValue('coredns_health_request_failures_total', 'coredns_health_request_failures_total')).toBe(
      before + 1,
    );
    expect(logs.lines).toHaveLength(1);
    expect(logs.lines[0]).toMatch(
      new RegExp(
        `^\\[WARNING\\] plugin/health: Local health request to "http://127\\.0\\.0\\.1:${port}/health" failed: .*ECONNREFUSED`,
      ),
    );
    await s.stop();
  });

  it('probes localhost when ADDRESS has no host', () => {
    expect(new HealthServer(':8080', logger('health')).probeUrl).toBe('http://localhost:8080/health');
    expect(new HealthServer('0.0.0.0:8080', logger('health')).probeUrl).toBe('http://localhost:8080/health');
    expect(new HealthServer('[::1]:8080', logger('health')).probeUrl).toBe('http://[::1]:8080/health');
  });
});

describe('health lameduck', () => {
  it('logs, keeps /health at 200 during the sleep, and finishes afterwards', async () => {
    const port = await freePort();
    const shared = new SharedResources();
    const core = new FakeCore();
    const inst = await load(`health 127.0.0.1:${port} {\n lameduck 400ms\n}`, shared, core);
    cleanups.push(() => inst.release());
    expect(inst.instance.finalShutdown).toHaveLength(1);
    const logs = captureLogs(cleanups);
    const events: string[] = [];
    // The sleep runs on a fake clock: the order of events does not depend on machine speed.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    cleanups.push(() => void vi.useRealTimers());
    const lameduck = inst.run('finalShutdown').then(() => events.push('lameduck over'));
    await Promise.resolve();
    events.push(logs.lines.join('|'));
    const r = await httpRequest(port, '/health');
    events.push(`during: ${r.status} ${r.body}`);
    await vi.advanceTimersByTimeAsync(399);
    events.push('399ms later');
    await vi.advanceTimersByTimeAsync(1);
    await lameduck;
    expect(events).toEqual([
      '[INFO] plugin/health: Going into lameduck mode for 400ms',
      'during: 200 OK',
      '399ms later',
      'lameduck over',
    ]);
  });

  it('goes through lame duck once per shutdown even with several blocks, and not without lameduck', async () => {
    const shared = new SharedResources();
    const core = new FakeCore();
    const inst = new TestInstance({ core, shared });
    const port = await freePort();
    for (const text of [
      `health 127.0.0.1:${port} {\n lameduck 50ms\n}`,
      `health 127.0.0.1:${port} {\n lameduck 60ms\n}`,
      `health 127.0.0.1:${port}`,
    ]) {
      await health.setup(dispenserFor(text, 'health'), inst.context('health'));
    }
    expect(inst.instance.finalShutdown).toHaveLength(2);
    expect(shared.size).toBe(1);
    const logs = captureLogs(cleanups);
    await inst.run('finalShutdown');
    expect(logs.lines).toEqual(['[INFO] plugin/health: Going into lameduck mode for 50ms']);
  });
});

describe('side listener addresses', () => {
  it('binds localhost to the IPv4 loopback', async () => {
    const port = await freePort();
    const s = new HealthServer(`localhost:${port}`, logger('health'));
    await s.start();
    cleanups.push(() => s.stop());
    expect((await httpRequest(port, '/health')).body).toBe('OK');
    expect(s.probeUrl).toBe(`http://localhost:${port}/health`);
  });

  it('reports a non-numeric port when starting', async () => {
    const s = new HealthServer('127.0.0.1:http', logger('health'));
    await expect(s.start()).rejects.toThrow('listen tcp 127.0.0.1:http: unknown port');
  });
});
