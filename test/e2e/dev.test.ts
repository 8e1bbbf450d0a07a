/**
 * `npm start` (tools/start.mjs builds, then tools/dev.ts runs): ports from flags or the
 * environment, free-port fallbacks for busy defaults, and a start that prints where DNS, health,
 * ready and metrics listen plus three `dig` commands that answer. The spawned runs use port 0
 * and a loopback upstream that answers nothing, so no test traffic leaves 127.0.0.1.
 * Requires `npm run build` (dist/tools/dev.js).
 */
import { spawn, spawnSync } from 'node:child_process';
import * as net from 'node:net';
import { resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  choosePorts,
  DEFAULT_PORTS,
  DEFAULT_UPSTREAM,
  parseDevArgs,
  type PortRequest,
} from '../../tools/dev-options.js';
import { rcode, udpQuery } from '../helpers/dns.js';
import { rrLines } from '../helpers/records.js';
import { freePort } from '../helpers/net.js';
import { waitFor } from '../helpers/wait.js';

const DEV = resolve(import.meta.dirname, '../../dist/tools/dev.js');

function busyTcp(): Promise<net.Server> {
  const srv = net.createServer();
  return new Promise((r) => srv.listen(0, '127.0.0.1', () => r(srv)));
}
const portOf = (srv: net.Server) => (srv.address() as net.AddressInfo).port;

describe('npm start options', () => {
  it('ports come from flags, else the environment, else the defaults; the rest goes to clusterdns', () => {
    const d = parseDevArgs([], {});
    expect(d.ports.dns).toEqual({ port: DEFAULT_PORTS.dns, from: 'default' });
    expect(d.upstream).toBe(DEFAULT_UPSTREAM);
    const o = parseDevArgs(['--dns-port', '1054', '--ready-port=0', '-quiet', '--upstream', '127.0.0.1:5353'], {
      CLUSTERDNS_DNS_PORT: '2000',
      CLUSTERDNS_HEALTH_PORT: '8081',
      CLUSTERDNS_UPSTREAM: '127.0.0.1:53',
    });
    expect(o.ports).toEqual({
      dns: { port: 1054, from: '--dns-port' },
      health: { port: 8081, from: 'CLUSTERDNS_HEALTH_PORT' },
      ready: { port: 0, from: '--ready-port' },
      metrics: { port: 9153, from: 'default' },
    });
    expect(o.upstream).toBe('127.0.0.1:5353');
    expect(o.rest).toEqual(['-quiet']);
    expect(parseDevArgs(['--help'], {}).help).toBe(true);
  });

  it('rejects a bad port, a missing value and one port for two listeners', () => {
    expect(() => parseDevArgs(['--dns-port', 'x'], {})).toThrow('--dns-port: "x" is not a port number (0-65535)');
    expect(() => parseDevArgs([], { CLUSTERDNS_METRICS_PORT: '70000' })).toThrow(
      'CLUSTERDNS_METRICS_PORT: "70000" is not a port number',
    );
    expect(() => parseDevArgs(['--health-port'], {})).toThrow('--health-port needs a port number');
    expect(() => parseDevArgs(['--health-port', '9153'], {})).toThrow('health and metrics cannot both use port 9153');
  });

  it('replaces a busy default port by a free one and says so; a busy explicit port is an error naming its source', async () => {
    const busy = await busyTcp();
    const b = portOf(busy);
    const others: Record<'dns' | 'ready' | 'metrics', PortRequest> = {
      dns: { port: 0, from: '--dns-port' },
      ready: { port: 0, from: '--ready-port' },
      metrics: { port: 0, from: '--metrics-port' },
    };
    try {
      const c = await choosePorts({ ...others, health: { port: b, from: 'default' } });
      expect(c.ports.health).not.toBe(b);
      expect(c.notes).toEqual([
        `port ${b} (health) is in use on 127.0.0.1: using ${c.ports.health} instead (set --health-port or CLUSTERDNS_HEALTH_PORT to choose)`,
      ]);
      // Port 0 gives four different free ports.
      expect(new Set(Object.values(c.ports)).size).toBe(4);
      expect(Object.values(c.ports).every((p) => p > 0)).toBe(true);

      await expect(choosePorts({ ...others, health: { port: b, from: 'CLUSTERDNS_HEALTH_PORT' } })).rejects.toThrow(
        `port ${b} (health) is in use on 127.0.0.1 (asked for by CLUSTERDNS_HEALTH_PORT); choose another, or 0 for any free port`,
      );
      await expect(
        choosePorts({ ...others, dns: { port: b, from: '--dns-port' }, health: { port: 0, from: '--health-port' } }),
      ).rejects.toThrow(`port ${b} (dns, UDP and TCP) is in use on 127.0.0.1 (asked for by --dns-port)`);
    } finally {
      busy.close();
    }
  });
});

describe('npm start (dist/tools/dev.js)', () => {
  let child: ReturnType<typeof spawn> | undefined;
  afterEach(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    child = undefined;
  });

  it('prints the DNS, health, ready and metrics addresses and three dig commands that answer', async () => {
    // An upstream that answers nothing: the forward and loop plugins stay on loopback.
    const upstream = `127.0.0.1:${await freePort()}`;
    child = spawn(process.execPath, [DEV, '--dns-port', '0', '--health-port=0', '--upstream', upstream], {
      env: { ...process.env, CLUSTERDNS_READY_PORT: '0', CLUSTERDNS_METRICS_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const done = new Promise<void>((ok, fail) => {
      child!.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        if (/Ctrl-C stops/.test(out)) ok();
      });
      child!.stderr!.on('data', (c: Buffer) => (out += c.toString()));
      child!.once('exit', (code) => fail(new Error(`dev.js exited (${code}) early:\n${out}`)));
    });
    await done;
    const dns = Number(/ {2}DNS {7}127\.0\.0\.1:(\d+) \(UDP and TCP\)/.exec(out)?.[1]);
    const http = (name: string) => new RegExp(` {2}${name} +(http://127\\.0\\.0\\.1:\\d+/${name})`).exec(out)?.[1];
    const [health, ready, metrics] = [http('health'), http('ready'), http('metrics')];
    expect(dns).toBeGreaterThan(0);
    expect(out).toContain(`other names are forwarded to ${upstream}`);
    const digs = [...out.matchAll(/^ {2}dig @127\.0\.0\.1 -p (\d+) (.+)$/gm)];
    expect(digs.map((m) => m[2])).toEqual([
      'kubernetes.default.svc.cluster.local',
      '-x 10.96.0.10',
      '_https._tcp.kubernetes.default.svc.cluster.local SRV',
    ]);
    expect(digs.every((m) => Number(m[1]) === dns)).toBe(true);

    expect((await fetch(health!)).status).toBe(200);
    // Ready once the kubernetes plugin has synced with the sandbox.
    let readyStatus = 0;
    await waitFor(
      () => `/ready 200 (last: ${readyStatus})`,
      async () => (readyStatus = (await fetch(ready!)).status) === 200,
      { everyMs: 100 },
    );
    expect(readyStatus).toBe(200);
    expect(await (await fetch(metrics!)).text()).toContain('coredns_build_info');

    // The three example queries answer from the sandbox cluster.
    const a = await udpQuery(dns, 'kubernetes.default.svc.cluster.local', 'A');
    expect(rrLines(a.answers)).toEqual(['kubernetes.default.svc.cluster.local. 30 IN A 10.96.0.1']);
    const ptr = await udpQuery(dns, '10.0.96.10.in-addr.arpa', 'PTR');
    expect(rrLines(ptr.answers)).toEqual([
      '10.0.96.10.in-addr.arpa. 30 IN PTR kube-dns.kube-system.svc.cluster.local.',
    ]);
    const srv = await udpQuery(dns, '_https._tcp.kubernetes.default.svc.cluster.local', 'SRV');
    expect(rcode(srv)).toBe(0);
    expect(rrLines(srv.answers)).toEqual([
      '_https._tcp.kubernetes.default.svc.cluster.local. 30 IN SRV 0 100 443 kubernetes.default.svc.cluster.local.',
    ]);
  });

  it('exits 2 with the reason when a port asked for is in use', async () => {
    const busy = await busyTcp();
    try {
      const r = spawnSync(process.execPath, [DEV, '--metrics-port', String(portOf(busy))], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(
        `npm start: port ${portOf(busy)} (metrics) is in use on 127.0.0.1 (asked for by --metrics-port)`,
      );
    } finally {
      busy.close();
    }
  });
});
