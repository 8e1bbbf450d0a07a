/**
 * The §11 vectors through the real server (UDP and TCP), fed by the sandbox API server through the
 * real watch client; plus startup wait, readiness, and reload reuse of the watch index.
 *
 * Rows 51/52 (NS / ns.dns) depend on the DNS server pod's own IP (10.244.0.5 in the fixture) which
 * a test process does not have; they are covered by handler.test.ts with that IP injected, and
 * here the fallback to the host's own addresses is checked instead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Answer } from 'dns-packet';
import { Flag, rcodeName } from '../../src/dns/constants.js';
import type { Message } from '../../src/dns/message.js';
import { encodeQuery, tcpQueries, udpQuery } from '../../test/helpers/dns.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { TestUpstream } from '../../test/helpers/upstream.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { fixtureObjects, slice, svc } from './testdata.js';
import { rrLines } from '../../test/helpers/records.js';
import { VECTORS, type Vector } from './vectors.js';
import { localIPs } from './index.js';
import { freePort } from '../../test/helpers/net.js';
import { waitFor } from '../../test/helpers/wait.js';

let sb: Sandbox;
let upstream: TestUpstream;
const servers = new Map<string, TestServer>();

function corefile(v: Vector | null, extra = ''): string {
  const lines = [`endpoint ${sb.url}`, 'pods insecure'];
  if (v?.corefile) lines.push(v.corefile);
  if (v?.noEndpoints) lines.push('noendpoints');
  if (v?.unsynced) lines.push('startup_timeout 700ms');
  if (extra) lines.push(extra);
  const fwd = v?.next ? `\n    forward . ${upstream.addr}` : '';
  return `. {\n    kubernetes cluster.local in-addr.arpa ip6.arpa {\n      ${lines.join('\n      ')}\n    }${fwd}\n}\n`;
}

async function serverFor(v: Vector): Promise<TestServer> {
  const text = corefile(v);
  let s = servers.get(text);
  if (!s) {
    s = await startServer(text);
    servers.set(text, s);
  }
  return s;
}

beforeAll(async () => {
  sb = await startSandbox({ objects: fixtureObjects(), log: () => undefined });
  // Row 68: a cluster where EndpointSlices can never be listed.
  sb.setFailure((r) =>
    r.path.includes('endpointslices') && r.query['labelSelector'] === 'never=synced' ? 500 : undefined,
  );
  upstream = await TestUpstream.start();
  upstream.defaultBehaviour = {
    answers: [
      { name: '99.99.0.10.in-addr.arpa', type: 'PTR', class: 'IN', ttl: 60, data: 'from-next.example' } as Answer,
    ],
  };
});

afterAll(async () => {
  for (const s of servers.values()) await s.stop();
  await upstream?.stop();
  await sb?.close();
});

function check(v: Vector, m: Message, proto: string): void {
  const label = `row ${v.n} over ${proto}`;
  expect(rcodeName((m.flags ?? 0) & 0xf), label).toBe(v.rcode);
  expect(((m.flags ?? 0) & Flag.AA) !== 0, `${label} AA`).toBe(v.aa ?? true);
  expect(m.questions[0]!.name + '.', label).toBe(v.q);
  const ans = rrLines(m.answers, { maskSerial: true });
  if (v.ordered) expect(ans, label).toEqual(v.ans ?? []);
  else expect([...ans].sort(), label).toEqual([...(v.ans ?? [])].sort());
  expect(rrLines(m.additionals, { maskSerial: true }).sort(), label).toEqual([...(v.extra ?? [])].sort());
  expect(rrLines(m.authorities, { maskSerial: true }), label).toEqual(v.ns ?? []);
}

describe('§11 vectors over UDP and TCP', () => {
  for (const v of VECTORS) {
    if (v.n === '51' || v.n === '52') continue;
    it(`#${v.n} ${v.q} ${v.t} → ${v.rcode}`, async () => {
      const unsyncedCfg = v.unsynced ? 'labels never=synced' : '';
      const s = v.unsynced ? await startServer(corefile(v, unsyncedCfg)) : await serverFor(v);
      try {
        if (!v.tcp) check(v, await udpQuery(s.port, v.q, v.t), 'udp');
        const [tm] = await tcpQueries(s.port, [encodeQuery(v.q, v.t)]);
        check(v, tm!, 'tcp');
        if (v.unsynced) {
          expect(s.logs).toContain('[INFO] plugin/kubernetes: waiting for Kubernetes API before starting server');
          expect(s.logs).toContain('[WARNING] plugin/kubernetes: starting server with unsynced Kubernetes API');
        }
      } finally {
        if (v.unsynced) await s.stop();
      }
    });
  }

  it('NS and ns.dns fall back to the host addresses when no slice contains them', async () => {
    const s = await serverFor({ n: 'ns', q: 'cluster.local.', t: 'NS', rcode: 'NOERROR' });
    const ips = localIPs([]);
    const m = await udpQuery(s.port, 'cluster.local.', 'NS', { edns: 4096 });
    expect(rcodeName((m.flags ?? 0) & 0xf)).toBe('NOERROR');
    if (ips.length === 0) {
      expect(m.answers).toEqual([]);
      return;
    }
    expect(rrLines(m.answers)).toEqual(['cluster.local. 5 IN NS ns.dns.cluster.local.']);
    expect(
      m.additionals
        .filter((r) => r.type !== 'OPT')
        .map((r) => String((r as { data: unknown }).data))
        .sort(),
    ).toEqual([...ips].sort());
  });
});

describe('response size', () => {
  it('a large headless answer is truncated over UDP without EDNS and complete over TCP', async () => {
    const ips = Array.from({ length: 40 }, (_, i) => `10.244.8.${i + 1}`);
    sb.apply(
      svc('testns', 'big', {
        type: 'ClusterIP',
        clusterIP: 'None',
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      }),
    );
    sb.apply(
      slice(
        'testns',
        'big-1',
        'big',
        [{ name: 'http', port: 8080, protocol: 'TCP' }],
        ips.map((ip) => ({ ip, ready: true })),
      ),
    );
    const s = await serverFor({ n: 'size', q: '', t: 'A', rcode: 'NOERROR' });
    const name = 'big.testns.svc.cluster.local.';
    let got = 0;
    await waitFor(
      () => `the big service complete (${got} answers)`,
      async () => {
        const [m] = await tcpQueries(s.port, [encodeQuery(name, 'A')]);
        got = m!.answers.length;
        return got === 40;
      },
    );
    const u = await udpQuery(s.port, name, 'A');
    expect((u.flags ?? 0) & Flag.TC).toBe(Flag.TC);
    expect(u.answers.length).toBeLessThan(40);
    const e = await udpQuery(s.port, name, 'A', { edns: 4096 });
    expect((e.flags ?? 0) & Flag.TC).toBe(0);
    expect(e.answers.map((r) => String((r as { data: unknown }).data)).sort()).toEqual([...ips].sort());
  });
});

describe('ExternalName through forward', () => {
  it('CNAME followed by the upstream answer; NXDOMAIN upstream keeps just the CNAME', async () => {
    upstream.on('www.example.com.', {
      answers: [{ name: 'www.example.com', type: 'A', class: 'IN', ttl: 300, data: '93.184.216.34' } as Answer],
    });
    upstream.on('nothing.example.org.', { rcode: 3 });
    const s = await startServer(
      `. {\n  kubernetes cluster.local {\n    endpoint ${sb.url}\n  }\n  forward . ${upstream.addr}\n}\n`,
    );
    try {
      const m = await udpQuery(s.port, 'ext.testns.svc.cluster.local.', 'A');
      expect(rcodeName((m.flags ?? 0) & 0xf)).toBe('NOERROR');
      expect(rrLines(m.answers)).toEqual([
        'ext.testns.svc.cluster.local. 5 IN CNAME www.example.com.',
        'www.example.com. 300 IN A 93.184.216.34',
      ]);
      sb.apply(svc('testns', 'ext2', { type: 'ExternalName', externalName: 'nothing.example.org' }));
      const m2 = await waitFor('ext2 to appear', async () => {
        const r = await udpQuery(s.port, 'ext2.testns.svc.cluster.local.', 'A');
        return r.answers.length > 0 && r;
      });
      expect(rcodeName((m2.flags ?? 0) & 0xf)).toBe('NOERROR');
      expect(rrLines(m2.answers)).toEqual(['ext2.testns.svc.cluster.local. 5 IN CNAME nothing.example.org.']);
    } finally {
      await s.stop();
    }
  });
});

describe('ExternalName lookups re-enter the whole server', () => {
  it('are routed to the server block of the target (stub domain)', async () => {
    const stub = await TestUpstream.start();
    stub.on('db.corp.example.', {
      answers: [{ name: 'db.corp.example', type: 'A', class: 'IN', ttl: 60, data: '192.0.2.99' } as Answer],
    });
    sb.apply(svc('testns', 'corpdb', { type: 'ExternalName', externalName: 'db.corp.example' }));
    const s = await startServer(
      `. {\n  kubernetes cluster.local {\n    endpoint ${sb.url}\n  }\n}\ncorp.example {\n  forward . ${stub.addr}\n}\n`,
    );
    try {
      const m = await waitFor('an answer for corpdb', async () => {
        const r = await udpQuery(s.port, 'corpdb.testns.svc.cluster.local.', 'A');
        return r.answers.length > 0 && r;
      });
      expect(rrLines(m.answers)).toEqual([
        'corpdb.testns.svc.cluster.local. 5 IN CNAME db.corp.example.',
        'db.corp.example. 60 IN A 192.0.2.99',
      ]);
      expect(stub.count('db.corp.example.')).toBeGreaterThan(0);
    } finally {
      await s.stop();
      await stub.stop();
    }
  });

  it('a CNAME cycle across two plugin zones terminates with SERVFAIL', async () => {
    sb.apply(svc('testns', 'cyc-a', { type: 'ExternalName', externalName: 'cyc-b.testns.svc.example.local' }));
    sb.apply(svc('testns', 'cyc-b', { type: 'ExternalName', externalName: 'cyc-a.testns.svc.cluster.local' }));
    const s = await startServer(`. {\n  kubernetes cluster.local example.local {\n    endpoint ${sb.url}\n  }\n}\n`);
    try {
      await waitFor(
        'cyc-a to appear',
        async () => (await udpQuery(s.port, 'cyc-a.testns.svc.cluster.local.', 'CNAME')).answers.length > 0,
      );
      const m = await udpQuery(s.port, 'cyc-a.testns.svc.cluster.local.', 'A', { timeoutMs: 15_000 });
      // The lookup of cyc-a inside the lookup of cyc-b is refused as a cycle: the query fails.
      expect(rcodeName((m.flags ?? 0) & 0xf)).toBe('SERVFAIL');
      expect(m.answers).toEqual([]);
    } finally {
      await s.stop();
    }
  });
});

describe('server lifecycle', () => {
  it('a reload with unchanged watch settings reuses the synced index (no relist); changed settings relist', async () => {
    const text = corefile(null, 'ttl 7');
    const s = await startServer(text);
    try {
      const lists = (): number =>
        sb.requests.filter((r) => r.path === '/api/v1/services' && r.query['watch'] === undefined).length;
      const m1 = await udpQuery(s.port, 'svc1.testns.svc.cluster.local.', 'A');
      expect(rrLines(m1.answers)).toEqual(['svc1.testns.svc.cluster.local. 7 IN A 10.96.0.11']);
      const before = lists();
      // ttl does not change what is watched: same index, new handler config
      expect(await s.reload(text.replace('ttl 7', 'ttl 9'))).toBe(true);
      expect(lists()).toBe(before);
      const m2 = await udpQuery(s.port, 'svc1.testns.svc.cluster.local.', 'A');
      expect(rrLines(m2.answers)).toEqual(['svc1.testns.svc.cluster.local. 9 IN A 10.96.0.11']);
      // the reused index keeps following the cluster
      sb.apply(
        svc('testns', 'after-reload', {
          type: 'ClusterIP',
          clusterIP: '10.96.7.7',
          ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
        }),
      );
      await waitFor(
        'the service created after the reload to appear',
        async () => (await udpQuery(s.port, 'after-reload.testns.svc.cluster.local.', 'A')).answers.length > 0,
      );
      // a change to the watched set (pods verified adds a pod watch) builds a new index
      expect(await s.reload(text.replace('ttl 7', 'ttl 9').replace('pods insecure', 'pods verified'))).toBe(true);
      expect(lists()).toBe(before + 1);
      expect(sb.requests.some((r) => r.path === '/api/v1/pods')).toBe(true);
      const m3 = await udpQuery(s.port, '10-244-2-7.testns.pod.cluster.local.', 'A');
      expect(rrLines(m3.answers)).toEqual(['10-244-2-7.testns.pod.cluster.local. 9 IN A 10.244.2.7']);
    } finally {
      await s.stop();
    }
  });

  it('/ready reports kubernetes until the watches have synced', async () => {
    const rsb = await startSandbox({ objects: fixtureObjects(), log: () => undefined });
    rsb.setFailure((r) => (r.path.includes('endpointslices') ? 403 : undefined));
    const readyPort = await freePort();
    const s = await startServer(
      `. {\n  ready 127.0.0.1:${readyPort}\n  kubernetes cluster.local {\n    endpoint ${rsb.url}\n    startup_timeout 100ms\n  }\n}\n`,
    );
    try {
      const get = async (): Promise<[number, string]> => {
        const res = await fetch(`http://127.0.0.1:${readyPort}/ready`);
        return [res.status, await res.text()];
      };
      const [code, body] = await get();
      expect(code).toBe(503);
      expect(body.split('\n')[0]).toBe('kubernetes');
      expect(s.logs).toContain('[WARNING] plugin/kubernetes: starting server with unsynced Kubernetes API');
      // name errors are SERVFAIL (with SOA) while unsynced
      const m = await udpQuery(s.port, 'missing.testns.svc.cluster.local.', 'A');
      expect(rcodeName((m.flags ?? 0) & 0xf)).toBe('SERVFAIL');
      expect(m.authorities.map((r) => r.type)).toEqual(['SOA']);
      rsb.setFailure();
      await waitFor('/ready 200', async () => (await get())[0] === 200, { everyMs: 50 });
      const m2 = await udpQuery(s.port, 'missing.testns.svc.cluster.local.', 'A');
      expect(rcodeName((m2.flags ?? 0) & 0xf)).toBe('NXDOMAIN');
    } finally {
      await s.stop();
      await rsb.close();
    }
  });

  it('a failing client configuration is a startup error', async () => {
    await expect(
      startServer('. {\n  kubernetes cluster.local {\n    kubeconfig /nonexistent/kubeconfig\n  }\n}\n'),
    ).rejects.toThrow();
  });
});
