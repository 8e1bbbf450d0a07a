/**
 * The sandbox's fault injection: the TCP proxy that freezes connections without closing them,
 * the resourceVersion counter set back (etcd restored), and request arrival times.
 */
import * as http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startFaultProxy } from './faultproxy.js';
import { startSandbox } from './server.js';
import { svc } from './testkit.js';
import { waitFor } from '../test/helpers/wait.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A raw watch: the lines received so far, and whether the stream ended or failed. */
function watch(url: string): { lines: string[]; ended: () => boolean; stop: () => void } {
  const lines: string[] = [];
  let ended = false;
  const req = http.get(url, { agent: false }, (res) => {
    res.setEncoding('utf8');
    let buf = '';
    res.on('data', (c: string) => {
      buf += c;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        lines.push(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
      }
    });
    res.on('end', () => {
      ended = true;
    });
    res.on('error', () => {
      ended = true;
    });
  });
  req.on('error', () => {
    ended = true;
  });
  return { lines, ended: () => ended, stop: () => req.destroy() };
}

async function getJson(url: string): Promise<Record<string, unknown>> {
  const r = await fetch(url);
  return (await r.json()) as Record<string, unknown>;
}

describe('fault proxy', () => {
  it('relays, and after freeze() an open connection gets nothing and is not closed while new ones work', async () => {
    const sb = await startSandbox({ objects: [svc('a', 'one')], log: () => undefined });
    cleanups.push(() => sb.close());
    const px = await startFaultProxy({ port: sb.port });
    cleanups.push(() => px.close());
    const w = watch(`${px.url}/api/v1/services?watch=true&resourceVersion=${sb.resourceVersion()}`);
    cleanups.push(() => w.stop());
    await waitFor('watch through the proxy', () => sb.watchCount() === 1);
    sb.apply(svc('a', 'two'));
    await waitFor('event relayed', () => w.lines.length === 1);
    expect(px.freeze()).toBe(1);
    sb.apply(svc('a', 'three'));
    // A new connection through the proxy sees the change; the frozen one does not, and stays open.
    const list = await getJson(`${px.url}/api/v1/services`);
    expect((list['items'] as unknown[]).length).toBe(3);
    const w2 = watch(`${px.url}/api/v1/services?watch=true&resourceVersion=${sb.resourceVersion()}`);
    cleanups.push(() => w2.stop());
    await waitFor('second watch', () => sb.watchCount() === 2);
    sb.apply(svc('a', 'four'));
    await waitFor('event on the new connection', () => w2.lines.length === 1);
    expect(w.lines).toHaveLength(1);
    expect(w.ended()).toBe(false);
    expect(px.accepted()).toBeGreaterThanOrEqual(3);
  });
});

describe('rewindResourceVersion', () => {
  it('sets the counter back, cuts watches, and a watch from the old revision gets 504 Too large', async () => {
    const sb = await startSandbox({
      objects: [svc('a', 'one'), svc('a', 'two'), svc('a', 'three')],
      log: () => undefined,
    });
    cleanups.push(() => sb.close());
    const old = sb.resourceVersion();
    expect(old).toBe('3');
    const w = watch(`${sb.url}/api/v1/services?watch=true&resourceVersion=${old}`);
    cleanups.push(() => w.stop());
    await waitFor('watch open', () => sb.watchCount() === 1);
    sb.rewindResourceVersion(1);
    await waitFor('watch cut', () => w.ended());
    expect(sb.resourceVersion()).toBe('1');
    sb.apply(svc('a', 'four'));
    expect(sb.resourceVersion()).toBe('2');
    const list = await getJson(`${sb.url}/api/v1/services`);
    expect((list['metadata'] as Record<string, unknown>)['resourceVersion']).toBe('2');
    expect((list['items'] as unknown[]).length).toBe(4);
    const w2 = watch(`${sb.url}/api/v1/services?watch=true&resourceVersion=${old}`);
    cleanups.push(() => w2.stop());
    await waitFor('error after waiting for the revision', () => w2.ended(), { timeoutMs: 10_000 });
    expect(JSON.parse(w2.lines[0]!)).toMatchObject({ type: 'ERROR', object: { code: 504 } });
    expect(() => sb.rewindResourceVersion(5)).toThrow(RangeError);
  });

  it('with keepWatches, open watches go on with the lower revisions', async () => {
    const sb = await startSandbox({
      objects: [svc('a', 'one'), svc('a', 'two'), svc('a', 'three')],
      log: () => undefined,
    });
    cleanups.push(() => sb.close());
    const w = watch(`${sb.url}/api/v1/services?watch=true&resourceVersion=3`);
    cleanups.push(() => w.stop());
    await waitFor('watch open', () => sb.watchCount() === 1);
    sb.rewindResourceVersion(0, { keepWatches: true });
    sb.apply(svc('a', 'four'));
    await waitFor('event', () => w.lines.length === 1);
    const ev = JSON.parse(w.lines[0]!) as { type: string; object: { metadata: { resourceVersion: string } } };
    expect(ev.type).toBe('ADDED');
    expect(ev.object.metadata.resourceVersion).toBe('1');
    expect(w.ended()).toBe(false);
  });

  it('restart cuts every watch, and resuming one from its last revision gets 410 Expired', async () => {
    const sb = await startSandbox({ objects: [svc('a', 'one'), svc('a', 'two')], log: () => undefined });
    cleanups.push(() => sb.close());
    const last = sb.resourceVersion();
    const w = watch(`${sb.url}/api/v1/services?watch=true&resourceVersion=${last}`);
    cleanups.push(() => w.stop());
    await waitFor('watch open', () => sb.watchCount() === 1);
    sb.restart();
    await waitFor('watch cut', () => w.ended());
    // The newest revision a client could have seen (its bookmark's) is gone from the history.
    const w2 = watch(`${sb.url}/api/v1/services?watch=true&resourceVersion=${last}`);
    cleanups.push(() => w2.stop());
    await waitFor('410 on resuming', () => w2.ended());
    expect(JSON.parse(w2.lines[0]!)).toMatchObject({ type: 'ERROR', object: { code: 410, reason: 'Expired' } });
    // A relist still sees every object, at the new revision.
    const list = await getJson(`${sb.url}/api/v1/services`);
    expect((list['items'] as unknown[]).length).toBe(2);
    expect((list['metadata'] as Record<string, unknown>)['resourceVersion']).toBe(String(Number(last) + 1));
  });

  it('records when each request arrived', async () => {
    const sb = await startSandbox({ log: () => undefined });
    cleanups.push(() => sb.close());
    const t0 = Date.now();
    await getJson(`${sb.url}/api/v1/services`);
    expect(sb.requests[0]!.at).toBeGreaterThanOrEqual(t0);
    expect(sb.requests[0]!.at).toBeLessThanOrEqual(Date.now());
  });
});
