/**
 * Differential: forward, cache, loadbalance, hosts, autopath and malformed queries against
 * CoreDNS 1.15.0, with a scripted upstream (test/helpers/upstream.ts) shared by both servers, or
 * one per server where a case reads the upstreams' query logs (prefetch, health checks).
 */
import * as dnsPacket from 'dns-packet';
import type { Answer } from 'dns-packet';
import { afterAll, describe, expect, it } from 'vitest';
import { a, aaaa, type TestUpstream } from '../helpers/upstream.js';
import {
  assertResult,
  encode,
  exchange,
  generate,
  judge,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type QuerySpec,
  type Variant,
} from './harness.js';
import { waitFor } from '../helpers/wait.js';

const soa = (zone: string, ttl = 60): Answer => ({
  name: zone,
  type: 'SOA',
  class: 'IN',
  ttl,
  data: {
    mname: `ns.${zone}`,
    rname: `hostmaster.${zone}`,
    serial: 2026112401,
    refresh: 7200,
    retry: 1800,
    expire: 86400,
    minimum: 30,
  },
});

/** The scripted upstream: one behaviour per name (any qtype). */
function script(u: TestUpstream): void {
  u.defaultBehaviour = { rcode: 3, authorities: [soa('example.org')] };
  u.on('a.example.org', { answers: [a('a.example.org', '192.0.2.1', 300)], aa: true });
  u.on('v6.example.org', { answers: [aaaa('v6.example.org', '2001:db8::1', 120)] });
  u.on('multi.example.org', {
    answers: ['192.0.2.10', '192.0.2.11', '192.0.2.12', '192.0.2.13'].map((ip) => a('multi.example.org', ip, 60)),
  });
  u.on('cname.example.org', {
    answers: [
      { name: 'cname.example.org', type: 'CNAME', class: 'IN', ttl: 100, data: 'a.example.org' },
      a('a.example.org', '192.0.2.1', 300),
    ],
  });
  u.on('mx.example.org', {
    answers: [
      {
        name: 'mx.example.org',
        type: 'MX',
        class: 'IN',
        ttl: 50,
        data: { preference: 10, exchange: 'mail.example.org' },
      },
    ],
  });
  u.on('txt.example.org', {
    answers: [{ name: 'txt.example.org', type: 'TXT', class: 'IN', ttl: 50, data: ['v=spf1 -all', 'hello world'] }],
  });
  u.on('nodata.example.org', { authorities: [soa('example.org')] });
  u.on('servfail.example.org', { rcode: 2 });
  u.on('refused.example.org', { rcode: 5 });
  u.on('big.example.org', {
    answers: Array.from({ length: 40 }, (_, i) => a('big.example.org', `198.51.100.${i + 1}`, 60)),
  });
  u.on('tc.example.org', { answers: [a('tc.example.org', '192.0.2.99', 60)], truncateUdp: true });
  u.on('withextra.example.org', {
    answers: [a('withextra.example.org', '192.0.2.5', 60)],
    authorities: [{ name: 'example.org', type: 'NS', class: 'IN', ttl: 60, data: 'ns1.example.org' }],
    additionals: [a('ns1.example.org', '192.0.2.53', 60)],
  });
  u.on('zero.example.org', { answers: [a('zero.example.org', '192.0.2.7', 0)] });
}

/** Each name with the type its records have (a cache classifies a reply by the question's type). */
const TYPED: readonly [string, string][] = [
  ['a.example.org', 'A'],
  ['v6.example.org', 'AAAA'],
  ['multi.example.org', 'A'],
  ['cname.example.org', 'A'],
  ['mx.example.org', 'MX'],
  ['txt.example.org', 'TXT'],
  ['nodata.example.org', 'A'],
  ['servfail.example.org', 'A'],
  ['refused.example.org', 'A'],
  ['tc.example.org', 'A'],
  ['withextra.example.org', 'A'],
  ['zero.example.org', 'A'],
  ['nx.example.org', 'A'],
  ['nx.example.org', 'AAAA'],
  ['example.org', 'SOA'],
];

function typed(variants: readonly Variant[], seed: number): QuerySpec[] {
  return TYPED.flatMap(([n, t], i) => generate([n], [t], variants, seed * 100 + i));
}

/** big.example.org: 40 A records in one unpadded, uncompressed datagram, whatever the client's buffer (see the rule). */
const OVERSIZE = ['big.example.org'];

const NAMES = [
  'a.example.org',
  'v6.example.org',
  'multi.example.org',
  'cname.example.org',
  'mx.example.org',
  'txt.example.org',
  'nodata.example.org',
  'servfail.example.org',
  'refused.example.org',
  'tc.example.org',
  'withextra.example.org',
  'zero.example.org',
  'nx.example.org',
  'example.org',
];
const TYPES = ['A', 'AAAA', 'MX', 'TXT'];
const VARIANTS: readonly Variant[] = [
  { proto: 'udp' },
  { proto: 'udp', edns: 1232 },
  { proto: 'tcp' },
  { proto: 'udp', edns: 4096, do: true, mixed: true },
];

/** The A addresses in a reply. */
const ips = (b: Buffer): string[] =>
  (dnsPacket.decode(b).answers ?? []).flatMap((x) => (x.type === 'A' ? [x.data] : []));

const PROBE = { name: 'a.example.org', type: 'A' };

async function runCase(
  id: string,
  corefile: string,
  plugins: string[],
  queries: QuerySpec[],
  o: {
    oversize?: QuerySpec[];
    probe?: { name: string; type: string } | null;
    concurrency?: number;
    files?: Record<string, string>;
    objects?: unknown[];
    cluster?: string[];
    minCompared?: number;
  } = {},
): Promise<void> {
  const pair = await startPair(
    { corefile, upstream: script, files: o.files, objects: o.objects, cluster: o.cluster },
    o.probe === null ? undefined : (o.probe ?? PROBE),
  );
  try {
    const result = newResult(id);
    await runQueries(pair, result, queries, plugins, { concurrency: o.concurrency });
    if (o.oversize)
      await runQueries(pair, result, o.oversize, plugins, { concurrency: o.concurrency, tags: ['oversize-upstream'] });
    assertResult(result, o.minCompared ?? queries.length + (o.oversize?.length ?? 0));
  } finally {
    await pair.stop();
  }
}

describe('differential: resolver plugins', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential resolver: ${t.compared} queries compared in ${t.cases} cases\n`);
  });

  it('forward', async () => {
    expect(missing).toBeNull();
    await runCase(
      'forward',
      '.:{{DNS}} {\n  forward . {{UPSTREAM}}\n}\n',
      ['forward'],
      generate(NAMES, TYPES, VARIANTS, 101),
      { oversize: generate(OVERSIZE, ['A'], VARIANTS, 112) },
    );
  }, 120_000);

  it('forward policies with two upstreams, force_tcp and prefer_udp', async () => {
    expect(missing).toBeNull();
    for (const [id, opts] of [
      ['forward-round-robin', 'policy round_robin'],
      ['forward-sequential', 'policy sequential'],
      ['forward-force-tcp', 'force_tcp'],
      ['forward-prefer-udp', 'prefer_udp'],
    ] as const) {
      await runCase(
        id,
        `.:{{DNS}} {\n  forward . {{UPSTREAM}} {{UPSTREAM2}} {\n    ${opts}\n  }\n}\n`,
        ['forward'],
        generate(NAMES.slice(0, 12), ['A'], VARIANTS, 102),
      );
    }
  }, 120_000);

  it('forward with a dead upstream beside a live one, and only a dead one', async () => {
    expect(missing).toBeNull();
    await runCase(
      'forward-dead-and-live',
      '.:{{DNS}} {\n  forward . {{DEAD}} {{UPSTREAM}} {\n    policy sequential\n  }\n}\n',
      ['forward'],
      generate(NAMES.slice(0, 6), ['A'], [{ proto: 'udp' }, { proto: 'tcp' }], 103),
    );
    await runCase(
      'forward-dead',
      '.:{{DNS}} {\n  forward . {{DEAD}}\n}\n',
      ['forward'],
      generate(
        ['a.example.org', 'nx.example.org'],
        ['A'],
        [{ proto: 'udp' }, { proto: 'udp', edns: 1232 }, { proto: 'tcp' }],
        104,
      ),
      { probe: null, concurrency: 1 },
    );
  }, 120_000);

  it('cache: misses, hits, negative answers, AA on hits', async () => {
    expect(missing).toBeNull();
    // Every query twice in a row: the first fills the cache, the second is a hit.
    const qs = typed(
      [
        { proto: 'udp' },
        { proto: 'udp', edns: 1232, do: true },
        { proto: 'tcp', mixed: true },
        { proto: 'tcp', edns: 4096 },
      ],
      105,
    ).flatMap((q) => [q, { ...q, id: (q.id + 1) & 0xffff }]);
    await runCase('cache', '.:{{DNS}} {\n  cache 30\n  forward . {{UPSTREAM}}\n}\n', ['cache', 'forward'], qs, {
      concurrency: 1,
      probe: null,
    });
  }, 120_000);

  it('cache: success/denial capacity and TTL caps, keepttl', async () => {
    expect(missing).toBeNull();
    const qs = typed([{ proto: 'udp' }, { proto: 'udp' }, { proto: 'tcp', edns: 1232 }], 106);
    await runCase(
      'cache-options',
      '.:{{DNS}} {\n  cache 20 {\n    success 1000 10\n    denial 1000 5\n  }\n  forward . {{UPSTREAM}}\n}\n',
      ['cache', 'forward'],
      qs,
      { concurrency: 1, probe: null },
    );
    await runCase(
      'cache-keepttl',
      '.:{{DNS}} {\n  cache {\n    keepttl\n  }\n  forward . {{UPSTREAM}}\n}\n',
      ['cache', 'forward'],
      qs,
      { concurrency: 1, probe: null },
    );
  }, 120_000);

  it('cache: SERVFAIL when the upstream fails without a response is cached (1.15.0)', async () => {
    expect(missing).toBeNull();
    const pair = await startPair(
      { corefile: '.:{{DNS}} {\n  cache 30 {\n    servfail 30s\n  }\n  forward . {{UPSTREAM}}\n}\n', upstream: script },
      PROBE,
    );
    try {
      const result = newResult('cache-servfail');
      const qs = generate(['a.example.org', 'mx.example.org', 'txt.example.org'], ['A'], [{ proto: 'udp' }], 107);
      const u = pair.upstreams[0]!;
      await u.stop();
      await runQueries(pair, result, qs, ['cache', 'forward'], { concurrency: 1 });
      await u.restart();
      // The upstream answers again: a cached SERVFAIL is still served.
      await runQueries(
        pair,
        result,
        qs.map((q) => ({ ...q, id: q.id ^ 0x5555 })),
        ['cache', 'forward'],
        { concurrency: 1 },
      );
      assertResult(result, qs.length * 2);
    } finally {
      await pair.stop();
    }
  }, 120_000);

  it('cache: serve_stale answers from the cache once the upstream is gone and the entry expired', async () => {
    expect(missing).toBeNull();
    const pair = await startPair(
      {
        corefile:
          '.:{{DNS}} {\n  cache 30 {\n    success 1000 5 1\n    serve_stale 1h\n  }\n  forward . {{UPSTREAM}}\n}\n',
        oneThread: true,
        upstream: (u) => {
          script(u);
          u.on('short.example.org', { answers: [a('short.example.org', '192.0.2.77', 2)] });
        },
      },
      PROBE,
    );
    try {
      const result = newResult('cache-serve-stale');
      const q: QuerySpec = { name: 'short.example.org', type: 'A', proto: 'udp', id: 4242 };
      await runQueries(pair, result, [q], ['cache', 'forward'], { concurrency: 1 });
      await pair.upstreams[0]!.stop();
      // Ask both, side by side, until both serve the expired entry (TTL 0 from serve_stale).
      let i = 0;
      const ttl = (b: Buffer | null): number => (b && b.readUInt16BE(6) > 0 ? b.readUInt32BE(b.length - 10) : -1);
      const staleSeen = await waitFor(
        'both servers to serve the stale entry with TTL 0',
        async () => {
          const qi = { ...q, id: (q.id + ++i) & 0xffff };
          const packet = encode(qi);
          const [ref, cand] = await Promise.all([
            exchange(pair.ref.dns, packet, 'udp'),
            exchange(pair.cand.dns, packet, 'udp'),
          ]);
          judge(result, qi, ref, cand, ['cache', 'forward']);
          return ttl(ref) === 0 && ttl(cand) === 0;
        },
        { everyMs: 250 },
      );
      expect(staleSeen, 'both servers serve the stale entry with TTL 0').toBe(true);
      assertResult(result, 2);
    } finally {
      await pair.stop();
    }
  }, 120_000);

  it('cache prefetch: both servers refresh a hot entry from the upstream before it expires', async () => {
    expect(missing).toBeNull();
    // Each server has its own upstream, so each upstream's query log is one server's traffic.
    // TTL 10 and `prefetch 2 10m 90%`: a hit prefetches once the item has 2 hits and at most
    // ceil(90% of 10) = 9 s left, i.e. from 1 s after it was stored on; it expires at 10 s, so
    // waiting out 1.1 s (a lower bound, not a race) makes the 2nd hit the one that prefetches.
    // CoreDNS prefetches in the background: a faithful comparison of which reply first carries
    // the refreshed data is timing-bound, so the test waits for each upstream to see the refresh,
    // then for each server to serve it, and compares the replies before and after.
    const name = 'pf.example.org';
    const pair = await startPair(
      {
        corefile: '.:{{DNS}} {\n  cache 30 {\n    prefetch 2 10m 90%\n  }\n  forward . {{UPSTREAM}}\n}\n',
        perServerUpstreams: true,
        oneThread: true,
        upstream: (u) => {
          script(u);
          u.on(name, { answers: [a(name, '192.0.2.101', 10)] });
        },
      },
      PROBE,
    );
    try {
      const result = newResult('cache-prefetch');
      const ups = [pair.upstreamsOf.coredns[0]!, pair.upstreamsOf.clusterdns[0]!] as const;
      let id = 7000;
      const ask = async (): Promise<[Buffer | null, Buffer | null]> => {
        const q: QuerySpec = { name, type: 'A', proto: 'udp', id: id++ };
        const packet = encode(q);
        const [ref, cand] = await Promise.all([
          exchange(pair.ref.dns, packet, 'udp'),
          exchange(pair.cand.dns, packet, 'udp'),
        ]);
        judge(result, q, ref, cand, ['cache', 'forward']);
        return [ref, cand];
      };
      await ask(); // miss: fills both caches
      const stored = Date.now();
      expect(ups.map((u) => u.count(name))).toEqual([1, 1]);
      // From now on the upstreams answer with new data: a refresh is visible in the replies.
      for (const u of ups) u.on(name, { answers: [a(name, '192.0.2.102', 10)] });
      while (Date.now() < stored + 1100) await new Promise((res) => setTimeout(res, 50));
      await ask(); // 1st hit: below the TTL threshold but only one hit, no prefetch
      expect(
        ups.map((u) => u.count(name)),
        'no prefetch after one hit',
      ).toEqual([1, 1]);
      const [r2, c2] = await ask(); // 2nd hit: prefetch in the background, the reply is still the cached one
      for (const r of [r2, c2]) expect(r && ips(r)).toEqual(['192.0.2.101']);
      await waitFor('each upstream to see the refresh', () => ups.every((u) => u.count(name) >= 2));
      expect(
        ups.map((u) => u.count(name)),
        'each server refreshed once',
      ).toEqual([2, 2]);
      // Each server serves the refreshed entry (polled one by one: the caches update after the upstream replied).
      for (const p of [pair.ref, pair.cand]) {
        const seen = await waitFor(`${p.name} to serve the prefetched answer`, async () => {
          const r = await exchange(p.dns, encode({ name, type: 'A', id: id++ }), 'udp');
          return !!r && ips(r).includes('192.0.2.102');
        });
        expect(seen, `${p.name} serves the prefetched answer`).toBe(true);
      }
      // The refresh was a prefetch, not a miss after expiry: no client query was sent while
      // waiting for the upstreams to see it, and the query that triggered it was a cache hit.
      expect(
        ups.map((u) => u.count(name)),
        'the refresh was served from the cache',
      ).toEqual([2, 2]);
      const [r3, c3] = await ask();
      for (const r of [r3, c3]) expect(r && ips(r)).toEqual(['192.0.2.102']);
      assertResult(result, 4);
    } finally {
      await pair.stop();
    }
  }, 120_000);

  it('forward max_fails 1 / health_check 100ms: the dead upstream is marked down and skipped; all down', async () => {
    expect(missing).toBeNull();
    // {{UPSTREAM}} (per server) never replies: a black hole that logs what it is sent, so that
    // "stopped sending to it" is seen in its own log; {{UPSTREAM2}} is the live one.
    const pair = await startPair({
      corefile:
        '.:{{DNS}} {\n  forward . {{UPSTREAM}} {{UPSTREAM2}} {\n    policy sequential\n    max_fails 1\n    health_check 100ms\n  }\n}\n',
      perServerUpstreams: true,
      oneThread: true,
      upstream: (u, i) => {
        if (i === 0) u.defaultBehaviour = { drop: true };
        else script(u);
      },
    });
    try {
      const result = newResult('forward-health-check');
      const dead = [pair.upstreamsOf.coredns[0]!, pair.upstreamsOf.clusterdns[0]!] as const;
      const live = [pair.upstreamsOf.coredns[1]!, pair.upstreamsOf.clusterdns[1]!] as const;
      // The first query goes to the black hole first, times out there, and is answered by the live one.
      await runQueries(pair, result, [{ name: 'a.example.org', type: 'A', proto: 'udp', id: 0x4001 }], ['forward'], {
        concurrency: 1,
        timeoutMs: 10000,
      });
      // Wait until each server health-checks the black hole (a query for the root) repeatedly: it is down.
      const hc = (u: TestUpstream): number => u.received.filter((r) => r.name === '.').length;
      await waitFor('both servers to health-check the dead upstream three times', () => dead.every((u) => hc(u) >= 3), {
        everyMs: 50,
      });
      expect(
        dead.map(hc).map((n) => n >= 3),
        'both servers health-check the dead upstream',
      ).toEqual([true, true]);
      const deadClient = dead.map((u) => u.received.filter((r) => r.name !== '.').length);
      const liveBefore = live.map((u) => u.received.filter((r) => r.name !== '.').length);
      const qs = generate(NAMES.slice(0, 8), ['A'], [{ proto: 'udp' }, { proto: 'tcp' }], 114);
      await runQueries(pair, result, qs, ['forward'], { concurrency: 1, timeoutMs: 1500 });
      // Down: every query went straight to the live upstream, none to the dead one.
      expect(
        dead.map((u) => u.received.filter((r) => r.name !== '.').length),
        'no client query to the down upstream',
      ).toEqual(deadClient);
      expect(
        live.map((u, i) => u.received.filter((r) => r.name !== '.').length - liveBefore[i]!),
        'every query to the live upstream',
      ).toEqual([qs.length, qs.length]);
      assertResult(result, 1 + qs.length);
    } finally {
      await pair.stop();
    }
    // All upstreams down (nothing listens on {{DEAD}}): both keep trying and answer SERVFAIL alike.
    await runCase(
      'forward-health-check-all-down',
      '.:{{DNS}} {\n  forward . {{DEAD}} {\n    max_fails 1\n    health_check 100ms\n  }\n}\n',
      ['forward'],
      generate(
        ['a.example.org', 'nx.example.org', 'mx.example.org'],
        ['A'],
        [{ proto: 'udp' }, { proto: 'udp', edns: 1232 }, { proto: 'tcp' }],
        115,
      ),
      { probe: null, concurrency: 1 },
    );
  }, 120_000);

  it('loadbalance', async () => {
    expect(missing).toBeNull();
    await runCase(
      'loadbalance',
      '.:{{DNS}} {\n  loadbalance\n  forward . {{UPSTREAM}}\n}\n',
      ['loadbalance', 'forward'],
      generate(
        ['multi.example.org', 'mx.example.org', 'cname.example.org', 'withextra.example.org'],
        ['A', 'MX'],
        VARIANTS,
        108,
      ),
      { oversize: generate(OVERSIZE, ['A'], VARIANTS, 113) },
    );
  }, 120_000);

  it('hosts', async () => {
    expect(missing).toBeNull();
    const hostsFile =
      '# test hosts\n192.0.2.30 web.example.net web\n2001:db8::30 web.example.net\n192.0.2.31 db.example.net db.alias.example.net\n10.0.0.1 gw\n192.0.2.32 Mixed.Example.NET\n';
    const names = [
      'web.example.net',
      'web',
      'db.example.net',
      'db.alias.example.net',
      'gw',
      'mixed.example.net',
      'nosuch.example.net',
      'a.example.org',
      'inline.example.net',
      '30.2.0.192.in-addr.arpa',
      '31.2.0.192.in-addr.arpa',
      '1.0.0.10.in-addr.arpa',
      '0.3.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa',
      '99.2.0.192.in-addr.arpa',
    ];
    await runCase(
      'hosts',
      '.:{{DNS}} {\n  hosts {{DIR}}/hosts {\n    192.0.2.40 inline.example.net\n    ttl 60\n    fallthrough\n  }\n  forward . {{UPSTREAM}}\n}\n',
      ['hosts', 'forward'],
      generate(names, ['A', 'AAAA', 'PTR', 'MX'], VARIANTS, 109),
      { files: { hosts: hostsFile } },
    );
    await runCase(
      'hosts-no-reverse-no-fallthrough',
      'example.net:{{DNS}} {\n  hosts {{DIR}}/hosts example.net {\n    no_reverse\n  }\n}\n',
      ['hosts'],
      generate(names.slice(0, 8), ['A', 'AAAA', 'PTR'], [{ proto: 'udp' }, { proto: 'tcp', mixed: true }], 110),
      { files: { hosts: hostsFile }, probe: { name: 'web.example.net', type: 'A' } },
    );
  }, 120_000);

  it('autopath @kubernetes (the client is a pod at 127.0.0.1)', async () => {
    expect(missing).toBeNull();
    const client = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'looper', namespace: 'testns' },
      spec: { containers: [{ name: 'c', image: 'x' }] },
      status: { phase: 'Running', podIP: '127.0.0.1', podIPs: [{ ip: '127.0.0.1' }] },
    };
    const names = [
      'svc1.testns.svc.cluster.local',
      'svc1.svc.cluster.local',
      'svc1.testns.svc.cluster.local.testns.svc.cluster.local',
      'svc2.testns.svc.cluster.local.testns.svc.cluster.local',
      'kubernetes.default.svc.cluster.local.testns.svc.cluster.local',
      'a.example.org.testns.svc.cluster.local',
      'nx.example.org.testns.svc.cluster.local',
      'a.example.org',
      'svc1.testns.svc.cluster.local.svc.cluster.local',
    ];
    await runCase(
      'autopath',
      '.:{{DNS}} {\n  autopath @kubernetes\n  kubernetes cluster.local in-addr.arpa {\n    endpoint {{API}}\n    pods verified\n  }\n  forward . {{UPSTREAM}}\n}\n',
      ['autopath', 'kubernetes', 'forward'],
      generate(
        names,
        ['A', 'AAAA'],
        [{ proto: 'udp' }, { proto: 'tcp', edns: 1232 }, { proto: 'udp', mixed: true }],
        111,
      ),
      {
        cluster: ['examples/cluster.yaml'],
        objects: [client],
        probe: { name: 'kubernetes.default.svc.cluster.local', type: 'A' },
      },
    );
  }, 120_000);

  it('malformed and unusual queries', async () => {
    expect(missing).toBeNull();
    const pair = await startPair(
      { corefile: '.:{{DNS}} {\n  hosts {\n    192.0.2.30 web.example.net\n  }\n}\n' },
      { name: 'web.example.net', type: 'A' },
    );
    try {
      const result = newResult('malformed');
      const base = encode({ name: 'web.example.net', type: 'A', id: 0x1234 });
      const withOpt = (opt: Buffer): Buffer => {
        const b = Buffer.concat([base, opt]);
        b.writeUInt16BE(1, 10);
        return b;
      };
      const optRR = (udp: number, ttl: number, rdata: Buffer): Buffer => {
        const b = Buffer.alloc(11 + rdata.length);
        b.writeUInt16BE(41, 1);
        b.writeUInt16BE(udp, 3);
        b.writeUInt32BE(ttl, 5);
        b.writeUInt16BE(rdata.length, 9);
        rdata.copy(b, 11);
        return b;
      };
      const option = (code: number, data: Buffer): Buffer => {
        const b = Buffer.alloc(4 + data.length);
        b.writeUInt16BE(code, 0);
        b.writeUInt16BE(data.length, 2);
        data.copy(b, 4);
        return b;
      };
      const patch = (f: (b: Buffer) => void): Buffer => {
        const b = Buffer.from(base);
        f(b);
        return b;
      };
      const raws: [string, Buffer][] = [
        ['empty', Buffer.alloc(0)],
        ['short header', base.subarray(0, 7)],
        ['header only', base.subarray(0, 12)],
        ['question cut', base.subarray(0, base.length - 2)],
        ['QR set', patch((b) => b.writeUInt16BE(0x8100, 2))],
        ['opcode IQUERY', patch((b) => b.writeUInt16BE(0x0900, 2))],
        ['opcode STATUS', patch((b) => b.writeUInt16BE(0x1100, 2))],
        ['opcode NOTIFY', patch((b) => b.writeUInt16BE(0x2100, 2))],
        ['opcode UPDATE', patch((b) => b.writeUInt16BE(0x2900, 2))],
        ['opcode 15', patch((b) => b.writeUInt16BE(0x7900, 2))],
        ['TC set in query', patch((b) => b.writeUInt16BE(0x0300, 2))],
        ['Z bit', patch((b) => b.writeUInt16BE(0x0140, 2))],
        ['AD and CD', patch((b) => b.writeUInt16BE(0x0130, 2))],
        ['AA set', patch((b) => b.writeUInt16BE(0x0500, 2))],
        ['rcode bits set', patch((b) => b.writeUInt16BE(0x0103, 2))],
        ['qdcount 0', patch((b) => b.writeUInt16BE(0, 4))],
        ['qdcount 2', patch((b) => b.writeUInt16BE(2, 4))],
        ['ancount 1 without record', patch((b) => b.writeUInt16BE(1, 6))],
        ['arcount 1 without record', patch((b) => b.writeUInt16BE(1, 10))],
        ['compression pointer loop', Buffer.concat([base.subarray(0, 12), Buffer.from([0xc0, 12, 0, 1, 0, 1])])],
        ['forward pointer', Buffer.concat([base.subarray(0, 12), Buffer.from([0xc0, 20, 0, 1, 0, 1, 0, 0])])],
        [
          'label too long',
          Buffer.concat([
            base.subarray(0, 12),
            Buffer.from([64]),
            Buffer.alloc(64, 0x61),
            Buffer.from([0, 0, 1, 0, 1]),
          ]),
        ],
        ['trailing garbage', Buffer.concat([base, Buffer.from([1, 2, 3])])],
        ['EDNS', withOpt(optRR(1232, 0, Buffer.alloc(0)))],
        ['EDNS small size 100', withOpt(optRR(100, 0, Buffer.alloc(0)))],
        ['EDNS version 1', withOpt(optRR(1232, 0x00010000, Buffer.alloc(0)))],
        ['EDNS DO', withOpt(optRR(1232, 0x8000, Buffer.alloc(0)))],
        ['EDNS Z flags', withOpt(optRR(1232, 0x4000, Buffer.alloc(0)))],
        ['EDNS NSID', withOpt(optRR(1232, 0, option(3, Buffer.alloc(0))))],
        ['EDNS cookie', withOpt(optRR(1232, 0, option(10, Buffer.from('0102030405060708', 'hex'))))],
        ['EDNS client subnet', withOpt(optRR(1232, 0, option(8, Buffer.from('00011800c00002', 'hex'))))],
        ['EDNS unknown option 65001', withOpt(optRR(1232, 0, option(65001, Buffer.from('abcd', 'hex'))))],
        ['EDNS padding', withOpt(optRR(1232, 0, option(12, Buffer.alloc(8))))],
        ['EDNS tcp-keepalive', withOpt(optRR(1232, 0, option(11, Buffer.alloc(0))))],
        ['EDNS expire', withOpt(optRR(1232, 0, option(9, Buffer.alloc(0))))],
        ['EDNS option cut', withOpt(optRR(1232, 0, Buffer.from([0, 10, 0, 8, 1, 2])))],
        [
          'two OPT records',
          (() => {
            const o = optRR(1232, 0, Buffer.alloc(0));
            const b = Buffer.concat([base, o, o]);
            b.writeUInt16BE(2, 10);
            return b;
          })(),
        ],
        ['OPT with owner name', withOpt(Buffer.concat([Buffer.from([1, 0x61]), optRR(1232, 0, Buffer.alloc(0))]))],
      ];
      const queries: QuerySpec[] = [];
      for (const proto of ['udp', 'tcp'] as const)
        for (const [label, raw] of raws)
          queries.push({ name: 'web.example.net', type: 'A', proto, id: 0x1234, raw, label });
      await runQueries(pair, result, queries.splice(0), ['hosts'], { timeoutMs: 1500, tags: ['malformed'] });
      // Unusual classes and types.
      for (const proto of ['udp', 'tcp'] as const) {
        for (const [klass, type] of [
          ['CH', 'TXT'],
          ['ANY', 'A'],
          ['IN', 'ANY'],
          ['IN', 'AXFR'],
          ['IN', 'IXFR'],
          ['IN', 'HINFO'],
          ['IN', 'NULL'],
          ['IN', 'OPT'],
        ] as const) {
          queries.push({ name: 'web.example.net', type, klass, proto, id: 0x2345 });
        }
        queries.push({ name: 'web.example.net', type: 'A', proto, id: 0x3456, rd: false });
        queries.push({ name: 'web.example.net', type: 'A', proto, id: 0x3457, cd: true, edns: 1232 });
        queries.push({ name: '.', type: 'NS', proto, id: 0x3458 });
        queries.push({ name: 'WEB.EXAMPLE.NET', type: 'A', proto, id: 0x3459 });
      }
      await runQueries(pair, result, queries, ['hosts'], { timeoutMs: 1500 });
      assertResult(result, queries.length);
    } finally {
      await pair.stop();
    }
  }, 120_000);
});
