/**
 * The operational plugins inside the real server (test/helpers/server.ts): reload under load,
 * a broken reload, a ConfigMap-style symlink swap picked up by the reload plugin, and the order
 * of events at final shutdown with lameduck.
 */
import { mkdirSync, mkdtempSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as net from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { rcode, udpQuery } from '../helpers/dns.js';
import { freePort } from '../helpers/net.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { httpErrorCode, httpRequest } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';

const servers: TestServer[] = [];
afterEach(async () => {
  vi.useRealTimers();
  while (servers.length) await servers.pop()!.stop();
});

async function start(text: string, opts: { dir?: string } = {}): Promise<TestServer> {
  const s = await startServer(text, opts);
  servers.push(s);
  return s;
}

/** Sample value from a /metrics scrape, or 0 when absent. */
function sample(body: string, series: string): number {
  const line = body.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

function tcpRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });
}

describe('reload in the running server', () => {
  it('loses no query during a reload under load and serves the new configuration afterwards', async () => {
    const mport = await freePort();
    const base = `example.org {\n  whoami\n  prometheus 127.0.0.1:${mport}\n}\n`;
    const s = await start(base);
    expect(rcode(await udpQuery(s.port, 'www.example.net', 'A'))).toBe(5); // REFUSED: no such zone yet

    let stop = false;
    let answered = 0;
    const failures: string[] = [];
    const worker = async (): Promise<void> => {
      while (!stop) {
        try {
          const r = await udpQuery(s.port, 'load.example.org', 'A', { timeoutMs: 3000 });
          if (rcode(r) === 0) answered++;
          else failures.push(`rcode ${rcode(r)}`);
        } catch (e) {
          failures.push((e as Error).message);
        }
      }
    };
    const workers = [worker(), worker(), worker(), worker()];
    await waitFor('50 answers before the reload', () => answered >= 50, { everyMs: 1 });
    const ok = await s.reload(`${base}example.net {\n  whoami\n  prometheus 127.0.0.1:${mport}\n}\n`);
    const atSwitch = answered;
    await waitFor('50 answers after the reload', () => answered >= atSwitch + 50, { everyMs: 1 });
    stop = true;
    await Promise.all(workers);
    expect(ok).toBe(true);
    expect(failures).toEqual([]);
    expect(rcode(await udpQuery(s.port, 'www.example.net', 'A'))).toBe(0);

    // The metrics listener stayed up and counts the new block's queries under its zone.
    const body = (await httpRequest(mport, '/metrics')).body;
    expect(
      sample(
        body,
        'coredns_dns_requests_total{server="dns://:' +
          s.port +
          '",zone="example.net.",view="",proto="udp",family="1",type="A"}',
      ),
    ).toBe(1);
    expect(
      sample(
        body,
        'coredns_dns_requests_total{server="dns://:' +
          s.port +
          '",zone="example.org.",view="",proto="udp",family="1",type="A"}',
      ),
    ).toBe(answered + failures.length);
    expect(
      sample(
        body,
        'coredns_dns_responses_total{server="dns://:' +
          s.port +
          '",zone="example.org.",view="",rcode="NOERROR",plugin="whoami"}',
      ),
    ).toBe(answered);
    expect(
      sample(
        body,
        'coredns_dns_requests_total{server="dns://:' +
          s.port +
          '",zone="dropped",view="",proto="udp",family="1",type="A"}',
      ),
    ).toBe(1);
    expect(
      sample(
        body,
        'coredns_dns_responses_total{server="dns://:' + s.port + '",zone="dropped",view="",rcode="REFUSED",plugin=""}',
      ),
    ).toBe(1);
    expect(
      sample(body, 'coredns_dns_request_duration_seconds_count{server="dns://:' + s.port + '",zone="dropped",view=""}'),
    ).toBe(1);
    expect(body).toContain(
      'coredns_plugin_enabled{server="dns://:' + s.port + '",zone="example.net.",view="",name="whoami"} 1',
    );
  });

  it('keeps the old configuration when the new one is broken and counts the failure once', async () => {
    const [mport, hport] = [await freePort(), await freePort()];
    // `reload 1h`: the plugin's own loop does not tick during the test; the reload is the test's.
    const good = `example.org {\n  whoami\n  reload 1h\n  prometheus 127.0.0.1:${mport}\n  health 127.0.0.1:${hport}\n}\n`;
    const s = await start(good);
    const before = sample((await httpRequest(mport, '/metrics')).body, 'coredns_reload_failed_total');
    expect(
      s.logs.filter((l) => /^\[INFO\] plugin\/reload: Running configuration SHA512 = [0-9a-f]{128}$/.test(l)),
    ).toHaveLength(1);

    const ok = await s.reload(
      `example.org {\n  whoami\n  reload 1h\n  prometheus 127.0.0.1:${mport}\n  health 127.0.0.1:${hport}\n  nosuchplugin\n}\n`,
    );
    expect(ok).toBe(false);
    expect(s.logs).toContain(
      `[ERROR] Restart failed: ${s.corefilePath}:6 - Error during parsing: Unknown directive 'nosuchplugin'`,
    );
    expect(rcode(await udpQuery(s.port, 'www.example.org', 'A'))).toBe(0);
    expect((await httpRequest(hport, '/health')).body).toBe('OK');
    const body = (await httpRequest(mport, '/metrics')).body;
    expect(sample(body, 'coredns_reload_failed_total')).toBe(before + 1);

    // A good reload afterwards works with the same side-server ports (listeners are reused).
    expect(await s.reload(good.replace('whoami', 'whoami\n  errors'))).toBe(true);
    expect((await httpRequest(hport, '/health')).body).toBe('OK');
    expect(s.logs.filter((l) => l.includes('Running configuration SHA512'))).toHaveLength(2);
  });

  it('the reload plugin logs and counts a changed Corefile that fails to load, once', async () => {
    const mport = await freePort();
    const good = `example.org {\n  whoami\n  reload 2s 0\n  prometheus 127.0.0.1:${mport}\n}\n`;
    const s = await start(good);
    const before = sample((await httpRequest(mport, '/metrics')).body, 'coredns_reload_failed_total');
    writeFileSync(s.corefilePath, good.replace('whoami', 'whoami\n  health bogus'));
    const line = `[ERROR] plugin/reload: Corefile changed but reload failed: starting with listener file descriptors: plugin/health: ${s.corefilePath}:3 - Error during parsing: address bogus: missing port in address`;
    await waitFor('the reload failure logged', () => s.logs.includes(line));
    expect(s.logs).toContain(line);
    const body = (await httpRequest(mport, '/metrics')).body;
    expect(sample(body, 'coredns_reload_failed_total')).toBe(before + 1);
    expect(body).toMatch(/coredns_reload_version_info\{hash="sha512",value="[0-9a-f]{128}"\} 1/);
    expect(rcode(await udpQuery(s.port, 'www.example.org', 'A'))).toBe(0);
  });

  it('picks up a ConfigMap ..data symlink swap through the reload plugin', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ops-configmap-'));
    mkdirSync(join(dir, '..2026_11_22_10_00_00.1'));
    symlinkSync('..2026_11_22_10_00_00.1', join(dir, '..data'));
    symlinkSync('..data/Corefile', join(dir, 'Corefile'));
    // startServer writes through the Corefile symlink into the first timestamped directory.
    const s = await start('example.org {\n  whoami\n  reload 2s 0\n}\n', { dir });
    expect(rcode(await udpQuery(s.port, 'www.example.net', 'A'))).toBe(5);

    mkdirSync(join(dir, '..2026_11_22_10_01_00.2'));
    writeFileSync(
      join(dir, '..2026_11_22_10_01_00.2', 'Corefile'),
      'example.org example.net {\n  whoami\n  reload 2s 0\n}\n',
    );
    symlinkSync('..2026_11_22_10_01_00.2', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));

    // Wait for the plugin's next check (every 2 s) to reload.
    await waitFor(
      'the swapped Corefile to answer for example.net',
      async () => rcode(await udpQuery(s.port, 'www.example.net', 'A')) === 0,
    );
    expect(rcode(await udpQuery(s.port, 'www.example.net', 'A'))).toBe(0);
    // The new configuration answers as soon as it is switched in; its SHA512 line is logged by
    // the reload plugin right after (from the reload-result hook), so wait for it too.
    const shaLines = () => s.logs.filter((l) => l.includes('Running configuration SHA512'));
    await waitFor('the second SHA512 line', () => shaLines().length >= 2);
    expect(shaLines()).toHaveLength(2);
  });
});

describe('final shutdown with lameduck', () => {
  it('closes ready first, then sleeps while DNS and /health still answer, then stops', async () => {
    const [hport, rport] = [await freePort(), await freePort()];
    const s = await start(
      `example.org {\n  whoami\n  health 127.0.0.1:${hport} {\n    lameduck 5s\n  }\n  ready 127.0.0.1:${rport}\n}\n`,
    );
    servers.pop(); // stopped by the test itself
    expect((await httpRequest(rport, '/ready')).body).toBe('OK');

    // The lame-duck sleep runs on a fake clock so the order of events does not depend on speed.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const events: string[] = [];
    const done = s.server.shutdown().then((code) => events.push(`exit ${code}`));
    events.push(`ready: ${await httpErrorCode(rport, '/ready')}`);
    await new Promise((r) => setImmediate(r));
    events.push(s.logs.find((l) => l.includes('lameduck')) ?? 'no lameduck log');
    events.push(`dns: ${rcode(await udpQuery(s.port, 'www.example.org', 'A'))}`);
    const h = await httpRequest(hport, '/health');
    events.push(`health: ${h.status} ${h.body}`);
    events.push(`still running: ${events.every((e) => !e.startsWith('exit'))}`);
    await vi.advanceTimersByTimeAsync(5000);
    vi.useRealTimers();
    await done;
    events.push(`dns closed: ${await tcpRefused(s.port)}`);
    expect(events).toEqual([
      'ready: ECONNREFUSED',
      '[INFO] plugin/health: Going into lameduck mode for 5s',
      'dns: 0',
      'health: 200 OK',
      'still running: true',
      'exit 0',
      'dns closed: true',
    ]);
  });
});
