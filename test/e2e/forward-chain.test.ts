/**
 * forward + cache + loadbalance (+ hosts, loop) through the real server over UDP and TCP on
 * 127.0.0.1, against the controllable test upstream and, when installed, dnsmasq.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { advanceCacheClock } from '../../plugins/cache/clock.js';
import { loopHooks } from '../../plugins/loop/loop.js';
import { encodeQuery, rcode, tcpQuery, udpExchange, udpQuery } from '../helpers/dns.js';
import { rrLines } from '../helpers/records.js';
import { decode } from '../../src/dns/message.js';
import { freePort } from '../helpers/net.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { a, TestUpstream } from '../helpers/upstream.js';
import { anyError, waitFor } from '../helpers/wait.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function upstream(): Promise<TestUpstream> {
  const u = await TestUpstream.start();
  cleanups.push(() => u.stop());
  return u;
}

async function server(corefile: string, port?: number): Promise<TestServer> {
  const s = await startServer(corefile, port === undefined ? {} : { port });
  cleanups.push(() => s.stop());
  return s;
}

const ttls = (rrs: Parameters<typeof rrLines>[0]): number[] => rrLines(rrs).map((s) => Number(s.split(' ')[1]));

describe('e2e: forward + cache + loadbalance', () => {
  it('answers equal the upstream, repeated queries are served from cache with decreasing TTLs, A order rotates', async () => {
    const u = await upstream();
    const ips = ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4'];
    u.on('www.example.org', { answers: ips.map((ip) => a('www.example.org', ip, 300)) });
    u.on('nx.example.org', { rcode: 3 });
    const s = await server(`. {\n  forward . ${u.addr}\n  cache 30\n  loadbalance\n}\n`);
    const first = await udpQuery(s.port, 'www.example.org', 'A');
    expect(rcode(first)).toBe(0);
    expect(
      rrLines(first.answers)
        .map((r) => r.split(' ').at(-1))
        .sort(),
    ).toEqual(ips);
    expect(ttls(first.answers)).toEqual([30, 30, 30, 30]);
    expect((first.flags ?? 0) & 0x0080).toBe(0x0080); // RA from the upstream
    const orders = new Set<string>();
    const restore = advanceCacheClock(7000);
    cleanups.push(restore);
    for (let i = 0; i < 20; i++) {
      const r =
        i % 2 === 0 ? await udpQuery(s.port, 'www.example.org', 'A') : await tcpQuery(s.port, 'www.example.org', 'A');
      expect(ttls(r.answers)).toEqual([23, 23, 23, 23]);
      expect((r.flags ?? 0) & 0x0400).toBe(0); // no AA on cache hits of a non-authoritative reply (CoreDNS 1.15.0)
      orders.add(rrLines(r.answers).join('|'));
    }
    expect(u.count('www.example.org')).toBe(1);
    expect(orders.size).toBeGreaterThan(1);
    // NXDOMAIN without SOA passes through, is not cached.
    expect(rcode(await udpQuery(s.port, 'nx.example.org', 'A'))).toBe(3);
    expect(rcode(await udpQuery(s.port, 'nx.example.org', 'A'))).toBe(3);
    expect(u.count('nx.example.org')).toBe(2);
  });

  it('TCP clients are forwarded over TCP; a truncated UDP answer makes the client retry over TCP', async () => {
    const u = await upstream();
    u.on('big.example.org', { truncateUdp: true, answers: [a('big.example.org', '192.0.2.10')] });
    const s = await server(`. {\n  forward . ${u.addr}\n}\n`);
    const viaUdp = await udpQuery(s.port, 'big.example.org', 'A');
    expect((viaUdp.flags ?? 0) & 0x0200).toBe(0x0200);
    const viaTcp = await tcpQuery(s.port, 'big.example.org', 'A');
    expect(rrLines(viaTcp.answers)).toEqual(['big.example.org. 300 IN A 192.0.2.10']);
    expect(u.received.map((r) => r.proto)).toEqual(['udp', 'tcp']);
  });

  it('with prefer_udp the server itself repeats a truncated answer over TCP', async () => {
    const u = await upstream();
    u.on('big.example.org', { truncateUdp: true, answers: [a('big.example.org', '192.0.2.10')] });
    const s = await server(`. {\n  forward . ${u.addr} {\n    prefer_udp\n  }\n}\n`);
    const r = await tcpQuery(s.port, 'big.example.org', 'A');
    expect(rrLines(r.answers)).toEqual(['big.example.org. 300 IN A 192.0.2.10']);
    expect(u.received.map((x) => x.proto)).toEqual(['udp', 'tcp']);
  });

  it('a dead upstream is skipped; all upstreams down gives SERVFAIL', async () => {
    const dead = await upstream();
    dead.defaultBehaviour = { drop: true };
    const alive = await upstream();
    alive.on('ok.example.org', { answers: [a('ok.example.org', '192.0.2.20')] });
    const s = await server(
      `. {\n  forward . ${dead.addr} ${alive.addr} {\n    policy sequential\n    read_timeout 200ms\n    health_check 50ms\n  }\n}\n`,
    );
    const r = await udpQuery(s.port, 'ok.example.org', 'A');
    expect(rrLines(r.answers)).toEqual(['ok.example.org. 300 IN A 192.0.2.20']);
    // Wait until health checks mark the dead one down.
    // Down after 3 failed probes: the 4th probe is sent once the 3rd has failed.
    await waitFor('the fourth health probe of the dead upstream', () => dead.count('.') >= 4);
    const seen = dead.count('ok.example.org');
    await udpQuery(s.port, 'ok.example.org', 'A');
    await udpQuery(s.port, 'ok.example.org', 'A');
    expect(dead.count('ok.example.org')).toBe(seen);
    await alive.stop();
    const down = await udpQuery(s.port, 'ok.example.org', 'A', { timeoutMs: 8000 });
    expect(rcode(down)).toBe(2);
    expect(down.answers).toEqual([]);
  });

  it('an upstream that dies and comes back serves again', async () => {
    const u = await upstream();
    u.on('back.example.org', { answers: [a('back.example.org', '192.0.2.30')] });
    const s = await server(`. {\n  forward . ${u.addr} {\n    read_timeout 200ms\n    health_check 50ms\n  }\n}\n`);
    expect(rcode(await udpQuery(s.port, 'back.example.org', 'A'))).toBe(0);
    await u.stop();
    expect(rcode(await udpQuery(s.port, 'back.example.org', 'A', { timeoutMs: 8000 }))).toBe(2);
    await u.restart();
    const ok = await waitFor(
      'the restarted upstream to answer through forward',
      async () => rcode(await udpQuery(s.port, 'back.example.org', 'A', { timeoutMs: 8000 })) === 0,
      { everyMs: 50 },
    );
    expect(ok).toBe(true);
  });

  it('max_concurrent overload answers REFUSED', async () => {
    const u = await upstream();
    u.on('slow.example.org', { delayMs: 400, answers: [a('slow.example.org', '192.0.2.40')] });
    const s = await server(`. {\n  forward . ${u.addr} {\n    max_concurrent 2\n  }\n}\n`);
    const replies = await Promise.all(Array.from({ length: 6 }, () => udpQuery(s.port, 'slow.example.org', 'A')));
    const codes = replies.map(rcode).sort();
    expect(codes).toEqual([0, 0, 5, 5, 5, 5]);
    expect(u.count('slow.example.org')).toBe(2);
  });

  it('keeps the client id and question case; forwards non-IN classes', async () => {
    const u = await upstream();
    u.on('mixed.example.org', { answers: [a('mixed.example.org', '192.0.2.50')] });
    const s = await server(`. {\n  forward . ${u.addr}\n}\n`);
    const raw = await udpExchange(s.port, encodeQuery('MiXeD.Example.Org', 'A', { id: 31337 }));
    const m = decode(raw);
    expect(m.id).toBe(31337);
    expect(m.questions[0]!.name).toBe('MiXeD.Example.Org');
    const ch = await udpQuery(s.port, 'version.bind', 'TXT', { class: 'CH' });
    expect(rcode(ch)).toBe(3); // the upstream's answer, not a REFUSED from the server
    expect(u.count('version.bind')).toBe(1);
  });

  it('hosts answers before forward; fallthrough reaches the upstream', async () => {
    const u = await upstream();
    u.on('ext.example.org', { answers: [a('ext.example.org', '192.0.2.60')] });
    const dir = mkdtempSync(join(tmpdir(), 'e2e-hosts-'));
    const hostsPath = join(dir, 'hosts');
    writeFileSync(hostsPath, '10.0.0.1 local.example.org\n');
    const s = await server(`. {\n  hosts ${hostsPath} {\n    fallthrough\n  }\n  forward . ${u.addr}\n}\n`);
    expect(rrLines((await udpQuery(s.port, 'local.example.org', 'A')).answers)).toEqual([
      'local.example.org. 3600 IN A 10.0.0.1',
    ]);
    expect(rrLines((await udpQuery(s.port, 'ext.example.org', 'A')).answers)).toEqual([
      'ext.example.org. 300 IN A 192.0.2.60',
    ]);
    expect(u.count('local.example.org')).toBe(0);
  });

  it('reload builds new forwarders and an empty cache; in-flight queries of the old instance still complete', async () => {
    const u = await upstream();
    u.on('r.example.org', { answers: [a('r.example.org', '192.0.2.70')] });
    let release!: () => void;
    u.on('slow.example.org', {
      hold: new Promise<void>((r) => (release = r)),
      answers: [a('slow.example.org', '192.0.2.71')],
    });
    const text = `. {\n  forward . ${u.addr}\n  cache 30\n}\n`;
    const s = await server(text);
    await udpQuery(s.port, 'r.example.org', 'A');
    await udpQuery(s.port, 'r.example.org', 'A');
    expect(u.count('r.example.org')).toBe(1);
    const slow = udpQuery(s.port, 'slow.example.org', 'A');
    // In flight across the reload: at the upstream, whose reply is held until the reload is done.
    await waitFor('the slow query at the upstream', () => u.count('slow.example.org') > 0);
    expect(await s.reload(text)).toBe(true);
    release();
    expect(rrLines((await slow).answers)).toEqual(['slow.example.org. 30 IN A 192.0.2.71']);
    await udpQuery(s.port, 'r.example.org', 'A');
    expect(u.count('r.example.org')).toBe(2);
  });

  it('exports the forward, cache and hosts metrics with the catalogue names and label order', async () => {
    const u = await upstream();
    u.on('m.example.org', { answers: [a('m.example.org', '192.0.2.90')] });
    const dir = mkdtempSync(join(tmpdir(), 'e2e-metrics-'));
    const hostsPath = join(dir, 'hosts');
    writeFileSync(hostsPath, '10.0.0.1 h.example.org\n');
    const metricsPort = await freePort();
    const s = await server(
      `. {\n  prometheus 127.0.0.1:${metricsPort}\n  hosts ${hostsPath} {\n    fallthrough\n  }\n  cache 30\n  forward . ${u.addr}\n}\n`,
    );
    await udpQuery(s.port, 'm.example.org', 'A');
    await udpQuery(s.port, 'm.example.org', 'A');
    await udpQuery(s.port, 'h.example.org', 'A');
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const srv = `dns://:${s.port}`;
    for (const line of [
      `coredns_forward_requests_total{to="${u.addr}"} 1`,
      `coredns_forward_responses_total{rcode="NOERROR",to="${u.addr}"} 1`,
      `coredns_forward_request_duration_seconds_count{to="${u.addr}",rcode="NOERROR"} 1`,
      `coredns_proxy_request_duration_seconds_count{proxy_name="forward",to="${u.addr}",rcode="NOERROR"} 1`,
      `coredns_proxy_conn_cache_misses_total{proxy_name="forward",to="${u.addr}",proto="udp"} 1`,
      // cache sits above hosts: three lookups, one hit, two entries (the hosts answer too)
      `coredns_cache_requests_total{server="${srv}",zones=".",view=""} 3`,
      `coredns_cache_hits_total{server="${srv}",type="success",zones=".",view=""} 1`,
      `coredns_cache_misses_total{server="${srv}",zones=".",view=""} 2`,
      `coredns_cache_entries{server="${srv}",type="success",zones=".",view=""} 2`,
      `coredns_hosts_entries{hostsfile="${hostsPath}"} 1`,
    ])
      expect(text.split('\n')).toContain(line);
    // Buckets 0.25 ms … 8.192 s (prom-client writes `le` first; label order is not significant).
    const les = [
      ...text.matchAll(
        new RegExp(
          `^coredns_proxy_request_duration_seconds_bucket\\{le="([^"]+)",proxy_name="forward",to="${u.addr}",rcode="NOERROR"\\}`,
          'gm',
        ),
      ),
    ].map((m) => m[1]);
    expect(les).toEqual([
      '0.00025',
      '0.0005',
      '0.001',
      '0.002',
      '0.004',
      '0.008',
      '0.016',
      '0.032',
      '0.064',
      '0.128',
      '0.256',
      '0.512',
      '1.024',
      '2.048',
      '4.096',
      '8.192',
      '+Inf',
    ]);
    expect(text).toMatch(/^# TYPE coredns_forward_max_concurrent_rejects_total counter$/m);
    expect(text).toMatch(/^# TYPE coredns_forward_healthcheck_broken_total counter$/m);
    expect(text).not.toMatch(/coredns_forward_sockets_open|coredns_cache_size|coredns_forward_conn_cache/);
  });

  it('the kubeadm Corefile shape (resolv.conf upstream, cache with disable, loop, loadbalance) serves and does not trip loop', async () => {
    const u = await upstream();
    u.on('www.example.org', {
      answers: [a('www.example.org', '192.0.2.1', 600), a('www.example.org', '192.0.2.2', 600)],
    });
    const dir = mkdtempSync(join(tmpdir(), 'e2e-kubeadm-'));
    const resolv = join(dir, 'resolv.conf');
    writeFileSync(resolv, `search svc.cluster.local\nnameserver 127.0.0.1\noptions ndots:5\n`);
    const exits: number[] = [];
    const prev = loopHooks.exit;
    loopHooks.exit = (code) => {
      exits.push(code);
    };
    cleanups.push(() => {
      loopHooks.exit = prev;
    });
    const s = await server(
      `. {\n    errors\n    forward . ${u.addr} {\n       max_concurrent 1000\n    }\n    cache 30 {\n       disable success cluster.local\n       disable denial cluster.local\n    }\n    loop\n    reload\n    loadbalance\n}\n`,
    );
    const r = await udpQuery(s.port, 'www.example.org', 'A');
    expect(ttls(r.answers)).toEqual([30, 30]);
    // The loop probe went through the chain once and came back answered (NXDOMAIN): no loop.
    await waitFor('the loop probe at the upstream', () => u.received.some((x) => x.type === 'HINFO'));
    expect(u.received.filter((x) => x.type === 'HINFO')).toHaveLength(1);
    expect(exits).toEqual([]);
    // `forward . /etc/resolv.conf` itself: nameserver lines (port 53); a loopback one is flagged.
    const s2 = await startServer(`. {\n  forward . ${resolv} {\n    max_concurrent 1000\n  }\n}\n`);
    cleanups.push(() => s2.stop());
    expect(
      s2.logs.some((l) =>
        l.startsWith(`[WARNING] plugin/forward: ${resolv} lists nameserver 127.0.0.1, a loopback address`),
      ),
    ).toBe(true);
  });

  it('loop: forwarding to itself is detected with the FATAL line and exit status 1', async () => {
    const exits: number[] = [];
    const prev = loopHooks.exit;
    loopHooks.exit = (code) => {
      exits.push(code);
    };
    cleanups.push(() => {
      loopHooks.exit = prev;
    });
    const port = await freePort();
    const s = await server(`. {\n  loop\n  forward . 127.0.0.1:${port} {\n    max_concurrent 20\n  }\n}\n`, port);
    await waitFor('the loop plugin to exit', () => exits.length > 0);
    expect(exits[0]).toBe(1);
    // With exit stubbed the looping queries keep going until max_concurrent cuts the chain; let
    // them unwind before the server stops: wait until 300 ms pass without a new exit.
    let seen = -1;
    await waitFor(
      'the looping queries to unwind',
      () => {
        const still = seen === exits.length;
        seen = exits.length;
        return still;
      },
      { everyMs: 300 },
    );
    expect(
      s.logs.some((l) =>
        /^\[FATAL\] plugin\/loop: Loop \(127\.0\.0\.1:\d+ -> [\d.:[\]]*:\d+\) detected for zone "\.", see https:\/\/coredns\.io\/plugins\/loop#troubleshooting\. Query: "HINFO \d+\.\d+\."$/.test(
          l,
        ),
      ),
    ).toBe(true);
  });
});

function findDnsmasq(): string | null {
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/sbin']) {
    if (dir && existsSync(join(dir, 'dnsmasq'))) return join(dir, 'dnsmasq');
  }
  return null;
}

const dnsmasq = findDnsmasq();

describe('e2e: dnsmasq as a real upstream', () => {
  it('forwards A, AAAA over UDP and TCP to a real dnsmasq, cached answers do not reach it', async () => {
    if (!dnsmasq) throw new Error('dnsmasq is not installed (apt-get install dnsmasq-base; .ci/run installs it)');
    const port = await freePort();
    // --keep-in-foreground, not --no-daemon: in debug mode dnsmasq serves TCP in its main loop,
    // so a pooled upstream TCP connection would block all its UDP traffic.
    const child: ChildProcess = spawn(
      dnsmasq!,
      [
        '--keep-in-foreground',
        '--no-resolv',
        '--no-hosts',
        '--no-poll',
        '--bind-interfaces',
        '--listen-address=127.0.0.1',
        `--port=${port}`,
        '--user=',
        '--pid-file=',
        '--log-facility=-',
        '--log-queries',
        '--address=/example.test/192.0.2.1',
        '--address=/v6.example.test/2001:db8::1',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let log = '';
    child.stdout!.on('data', (c: Buffer) => {
      log += c.toString();
    });
    child.stderr!.on('data', (c: Buffer) => {
      log += c.toString();
    });
    cleanups.push(() => {
      child.kill('SIGTERM');
    });
    const seen = (name: string): number => log.split('\n').filter((l) => l.includes(`query[A] ${name} `)).length;
    // Wait until dnsmasq answers (guard only).
    const ready = await waitFor(
      'dnsmasq to answer',
      async () => {
        await udpQuery(port, 'example.test', 'A', { timeoutMs: 200 });
        return true;
      },
      { everyMs: 50, retry: anyError },
    );
    expect(ready).toBe(true);
    const s = await server(`. {\n  forward . 127.0.0.1:${port}\n  cache 30\n}\n`);
    const r = await udpQuery(s.port, 'www.example.test', 'A');
    expect(rcode(r)).toBe(0);
    expect(rrLines(r.answers).map((x) => x.split(' ').slice(2).join(' '))).toEqual(['IN A 192.0.2.1']);
    const t = await tcpQuery(s.port, 'www.example.test', 'A');
    expect(rrLines(t.answers).map((x) => x.split(' ').slice(2).join(' '))).toEqual(['IN A 192.0.2.1']);
    const t2 = await tcpQuery(s.port, 'tcp.example.test', 'A');
    expect(rrLines(t2.answers).map((x) => x.split(' ').slice(2).join(' '))).toEqual(['IN A 192.0.2.1']);
    await waitFor('dnsmasq to log the TCP query', () => seen('tcp.example.test') > 0);
    expect(seen('www.example.test')).toBe(1); // the second query was a cache hit
    const v6 = await udpQuery(s.port, 'v6.example.test', 'AAAA');
    expect(rrLines(v6.answers).map((x) => x.split(' ').slice(2).join(' '))).toEqual(['IN AAAA 2001:db8::1']);
    const nx = await udpQuery(s.port, 'nothing.invalid', 'A');
    expect([2, 3, 5]).toContain(rcode(nx)); // dnsmasq without upstreams: REFUSED (or NXDOMAIN by version)
  });
});
