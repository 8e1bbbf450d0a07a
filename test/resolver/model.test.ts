/**
 * The resolver model: first its rules against answer tables (where glibc, musl and dig differ),
 * then the fixture scenarios driven over UDP against a real in-process clusterdns (kubernetes
 * plugin fed by the sandbox API server, forward to a local upstream that knows example.com),
 * checking what the application gets and the exact queries the server's `log` plugin saw.
 * Last, autopath: an external name from a pod costs one round trip instead of one per search name.
 */
import { resolve as resolvePath } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../../src/metrics/registry.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { startServer, type TestServer } from '../helpers/server.js';
import {
  muslNodataError,
  podResolvConf,
  resolve,
  searchPlan,
  tableExchange,
  udpExchange,
  type ModelReply,
  type ModelRecord,
  type ResolvConf,
  type ResolverKind,
} from './model.js';
import {
  canonical,
  clientQueries,
  expectedQueries,
  queriesFromLog,
  resultOf,
  SCENARIOS,
  searched,
  sortedResult,
  typesFor,
} from './fixture.js';
import { ZoneUpstream } from './zone-upstream.js';

const FIXTURE = resolvePath(import.meta.dirname, '../../examples/cluster.yaml');

const nx: ModelReply = { kind: 'reply', rcode: 3, answers: [] };
const nodata: ModelReply = { kind: 'reply', rcode: 0, answers: [] };
const servfail: ModelReply = { kind: 'reply', rcode: 2, answers: [] };
const refused: ModelReply = { kind: 'reply', rcode: 5, answers: [] };
const timeout: ModelReply = { kind: 'timeout' };
const rec = (name: string, type: string, data: string): ModelRecord => ({ name, type, ttl: 5, data });
const answer = (...answers: ModelRecord[]): ModelReply => ({ kind: 'reply', rcode: 0, answers });
const conf = podResolvConf('default');
const names = (r: { steps: readonly string[] }) => r.steps;

describe('search rules (answer tables)', () => {
  it('plans: dots < ndots searches first then tries the name; dots >= ndots: glibc as is first then search, musl and dig as is only', () => {
    const c: ResolvConf = { nameservers: ['10.96.0.10'], search: ['a.local', 'b.local'], ndots: 2 };
    expect(searchPlan('glibc', c, 'x.y')).toEqual(['x.y.a.local.', 'x.y.b.local.', 'x.y.']);
    expect(searchPlan('musl', c, 'x.y')).toEqual(['x.y.a.local.', 'x.y.b.local.', 'x.y.']);
    expect(searchPlan('dig', c, 'x.y')).toEqual(['x.y.a.local.', 'x.y.b.local.', 'x.y.']);
    expect(searchPlan('glibc', c, 'x.y.z')).toEqual(['x.y.z.', 'x.y.z.a.local.', 'x.y.z.b.local.']);
    expect(searchPlan('musl', c, 'x.y.z')).toEqual(['x.y.z.']);
    expect(searchPlan('dig', c, 'x.y.z')).toEqual(['x.y.z.']);
    for (const r of ['glibc', 'musl', 'dig'] as const) expect(searchPlan(r, c, 'x.')).toEqual(['x.']);
    // musl's res_search is res_query: no search list for SRV and other non-address types.
    expect(searchPlan('musl', c, '_a._tcp.x', ['SRV'])).toEqual(['_a._tcp.x.']);
    expect(searchPlan('glibc', c, '_a._tcp.x', ['SRV'])).toEqual([
      '_a._tcp.x.',
      '_a._tcp.x.a.local.',
      '_a._tcp.x.b.local.',
    ]);
  });

  it('glibc with dots >= ndots: the as-is NXDOMAIN does not end it, the search list is walked', async () => {
    const c: ResolvConf = { nameservers: [], search: ['svc.cluster.local'], ndots: 1 };
    const ex = tableExchange({
      'web.ns.svc.cluster.local. A': answer(rec('web.ns.svc.cluster.local.', 'A', '10.0.0.1')),
    });
    const g = await resolve({ resolver: 'glibc', conf: c, name: 'web.ns', types: ['A'], exchange: ex });
    expect(names(g)).toEqual(['web.ns.', 'web.ns.svc.cluster.local.']);
    expect(g.outcome).toEqual({
      kind: 'addresses',
      name: 'web.ns.svc.cluster.local.',
      addresses: ['10.0.0.1'],
      canonical: 'web.ns.svc.cluster.local',
    });
    const m = await resolve({ resolver: 'musl', conf: c, name: 'web.ns', types: ['A'], exchange: ex });
    expect(names(m)).toEqual(['web.ns.']);
    expect(m.outcome).toEqual({ kind: 'error', error: 'EAI_NONAME' });
  });

  it('NODATA on a search name: glibc continues (and reports EAI_NODATA at the end), musl and dig stop', async () => {
    const ex = tableExchange({
      'x.svc.cluster.local. A': nodata,
      'x.svc.cluster.local. AAAA': nodata,
      'x. A': answer(rec('x.', 'A', '192.0.2.9')),
    });
    const g = await resolve({ resolver: 'glibc', conf, name: 'x', types: ['A', 'AAAA'], exchange: ex });
    expect(names(g)).toEqual([...searched('x', 'default'), 'x.']);
    expect(g.outcome).toMatchObject({ kind: 'addresses', addresses: ['192.0.2.9'] });
    const m = await resolve({ resolver: 'musl', conf, name: 'x', types: ['A', 'AAAA'], exchange: ex });
    expect(names(m)).toEqual(searched('x', 'default').slice(0, 2));
    expect(m.outcome).toEqual({ kind: 'error', error: 'EAI_NODATA' });
    const dg = await resolve({ resolver: 'dig', conf, name: 'x', types: ['A'], exchange: ex });
    expect(names(dg)).toEqual(searched('x', 'default').slice(0, 2));
    expect(dg.outcome).toEqual({ kind: 'reply', name: 'x.svc.cluster.local.', rcode: 0, answers: [] });
    const gn = await resolve({
      resolver: 'glibc',
      conf,
      name: 'x',
      types: ['A', 'AAAA'],
      exchange: tableExchange({ 'x.svc.cluster.local. A': nodata, 'x.svc.cluster.local. AAAA': nodata }),
    });
    expect(gn.outcome).toEqual({ kind: 'error', error: 'EAI_NODATA' });
    // musl before 1.2.4 reports the same stop as EAI_NONAME.
    const old = await resolve({
      resolver: 'musl',
      conf,
      name: 'x',
      types: ['A', 'AAAA'],
      exchange: ex,
      muslNodata: muslNodataError('1.2.3'),
    });
    expect(names(old)).toEqual(names(m));
    expect(old.outcome).toEqual({ kind: 'error', error: 'EAI_NONAME' });
    expect(['1.2.4', '1.2.5', '1.3.0'].map(muslNodataError)).toEqual(['EAI_NODATA', 'EAI_NODATA', 'EAI_NODATA']);
    expect(['1.1.24', '1.2.3'].map(muslNodataError)).toEqual(['EAI_NONAME', 'EAI_NONAME']);
  });

  it('an answer for either type ends a glibc step; for musl an NXDOMAIN on A ends the step as NXDOMAIN', async () => {
    const ex = tableExchange({
      'y.default.svc.cluster.local. A': nx,
      'y.default.svc.cluster.local. AAAA': answer(rec('y.default.svc.cluster.local.', 'AAAA', 'fd00::9')),
      'y.svc.cluster.local. A': answer(rec('y.svc.cluster.local.', 'A', '10.0.0.9')),
      'y.svc.cluster.local. AAAA': nodata,
    });
    const g = await resolve({ resolver: 'glibc', conf, name: 'y', types: ['A', 'AAAA'], exchange: ex });
    expect(names(g)).toEqual(['y.default.svc.cluster.local.']);
    expect(g.outcome).toMatchObject({ addresses: ['fd00::9'] });
    const m = await resolve({ resolver: 'musl', conf, name: 'y', types: ['A', 'AAAA'], exchange: ex });
    expect(names(m)).toEqual(['y.default.svc.cluster.local.', 'y.svc.cluster.local.']);
    expect(m.outcome).toMatchObject({ addresses: ['10.0.0.9'] });
  });

  it('SERVFAIL on a search name: glibc tries the next one, musl fails with EAI_AGAIN, dig stops', async () => {
    const ex = tableExchange({
      'z.default.svc.cluster.local. A': servfail,
      'z.default.svc.cluster.local. AAAA': servfail,
      'z.svc.cluster.local. A': answer(rec('z.svc.cluster.local.', 'A', '10.0.0.3')),
      'z.svc.cluster.local. AAAA': nodata,
    });
    const g = await resolve({ resolver: 'glibc', conf, name: 'z', types: ['A', 'AAAA'], exchange: ex });
    expect(names(g)).toEqual(['z.default.svc.cluster.local.', 'z.svc.cluster.local.']);
    expect(g.outcome).toMatchObject({ addresses: ['10.0.0.3'] });
    const m = await resolve({ resolver: 'musl', conf, name: 'z', types: ['A', 'AAAA'], exchange: ex });
    expect(names(m)).toEqual(['z.default.svc.cluster.local.']);
    expect(m.outcome).toEqual({ kind: 'error', error: 'EAI_AGAIN' });
    const dg = await resolve({ resolver: 'dig', conf, name: 'z', types: ['A'], exchange: ex });
    expect(names(dg)).toEqual(['z.default.svc.cluster.local.']);
    expect(dg.outcome).toMatchObject({ rcode: 2 });
    // Every name SERVFAIL: glibc reports TRY_AGAIN (EAI_AGAIN).
    const all = await resolve({
      resolver: 'glibc',
      conf,
      name: 'z',
      types: ['A', 'AAAA'],
      exchange: tableExchange({}, servfail),
    });
    expect(names(all)).toEqual([...searched('z', 'default'), 'z.']);
    expect(all.outcome).toEqual({ kind: 'error', error: 'EAI_AGAIN' });
  });

  it("a timeout or REFUSED on a search name ends glibc's search list, but the name as is is still tried", async () => {
    for (const bad of [timeout, refused]) {
      const ex = tableExchange({
        'w.default.svc.cluster.local. A': bad,
        'w.default.svc.cluster.local. AAAA': bad,
        'w. A': answer(rec('w.', 'A', '192.0.2.44')),
        'w. AAAA': nodata,
      });
      const g = await resolve({ resolver: 'glibc', conf, name: 'w', types: ['A', 'AAAA'], exchange: ex });
      expect(names(g)).toEqual(['w.default.svc.cluster.local.', 'w.']);
      expect(g.outcome).toMatchObject({ addresses: ['192.0.2.44'] });
      const m = await resolve({ resolver: 'musl', conf, name: 'w', types: ['A', 'AAAA'], exchange: ex });
      expect(names(m)).toEqual(['w.default.svc.cluster.local.']);
      expect(m.outcome).toEqual({ kind: 'error', error: bad.kind === 'timeout' ? 'EAI_AGAIN' : 'EAI_FAIL' });
    }
  });

  it("CNAME chains are followed to the addresses; the canonical name is the chain's end", async () => {
    const ex = tableExchange({
      'www.example.com. A': answer(
        rec('www.example.com.', 'CNAME', 'example.com.'),
        rec('example.com.', 'A', '192.0.2.1'),
      ),
      'www.example.com. AAAA': answer(rec('www.example.com.', 'CNAME', 'example.com.')),
    });
    const g = await resolve({ resolver: 'glibc', conf, name: 'www.example.com.', types: ['A', 'AAAA'], exchange: ex });
    expect(g.outcome).toEqual({
      kind: 'addresses',
      name: 'www.example.com.',
      addresses: ['192.0.2.1'],
      canonical: 'example.com',
    });
    expect(g.queries).toEqual([
      { name: 'www.example.com.', type: 'A' },
      { name: 'www.example.com.', type: 'AAAA' },
    ]);
  });
});

describe('the fixture through a real clusterdns', () => {
  let sb: Sandbox;
  let up: ZoneUpstream;
  let srv: TestServer;

  beforeAll(async () => {
    sb = await startSandbox({ files: [FIXTURE], log: () => undefined });
    up = await ZoneUpstream.start();
    srv = await startServer(`. {
    log
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        endpoint ${sb.url}
        pods insecure
    }
    forward . ${up.addr}
}
`);
  });
  afterAll(async () => {
    await srv?.stop();
    await up?.stop();
    await sb?.close();
  });

  const cases = SCENARIOS.flatMap((s) =>
    (['glibc', 'musl', 'dig'] as const).map((r) => [`${r}: ${s.title}`, s, r] as const),
  );
  it.each(cases)('%s', async (_title, s, r: ResolverKind) => {
    const e = s.expect[r]!;
    const types = typesFor(s, r);
    const from = srv.logs.length;
    const upFrom = up.received.length;
    const res = await resolve({
      resolver: r,
      conf: podResolvConf(s.ns),
      name: s.name,
      types,
      exchange: udpExchange({ server: '127.0.0.1', port: srv.port }),
    });
    expect(res.steps).toEqual(e.steps);
    expect(sortedResult(resultOf(res.outcome))).toEqual(sortedResult(e.result));
    // What the server saw is exactly what the model sent: each step, each type, once.
    expect(canonical(clientQueries(queriesFromLog(srv.logs.slice(from)), s))).toEqual(
      canonical(expectedQueries(e, types)),
    );
    // Only names outside cluster.local reached the upstream.
    const upstreamNames = up.received.slice(upFrom).map((q) => q.name);
    expect(upstreamNames.every((n) => !n.endsWith('.cluster.local.'))).toBe(true);
    expect(new Set(upstreamNames)).toEqual(
      new Set([...e.steps.filter((n) => !n.endsWith('.cluster.local.')), ...(s.alsoUpstream ?? [])]),
    );
  });

  it('example.com costs 4 round trips per type with ndots:5 and three search domains (5 with a node search domain)', async () => {
    const withNode: ResolvConf = {
      ...podResolvConf('default'),
      search: [...podResolvConf('default').search, 'c.proj.internal'],
    };
    const from = srv.logs.length;
    const res = await resolve({
      resolver: 'glibc',
      conf: withNode,
      name: 'example.com',
      types: ['A', 'AAAA'],
      exchange: udpExchange({ server: '127.0.0.1', port: srv.port }),
    });
    expect(res.steps).toEqual([...searched('example.com', 'default'), 'example.com.c.proj.internal.', 'example.com.']);
    const seen = queriesFromLog(srv.logs.slice(from));
    expect(seen).toHaveLength(10);
    expect(seen.filter((q) => q.name !== 'example.com.').length).toBe(8);
    expect(res.outcome).toMatchObject({ kind: 'addresses', addresses: ['192.0.2.1', '2001:db8::1'] });
  });
});

describe('autopath @kubernetes: the search walk on the server', () => {
  let sb: Sandbox;
  let up: ZoneUpstream;
  let srv: TestServer;
  // A client "pod" in namespace default: loopback alias 127.0.0.2 registered as a pod IP.
  const POD_IP = '127.0.0.2';
  const podExchange = () => udpExchange({ server: '127.0.0.1', port: srv.port, localAddress: POD_IP });
  const hostExchange = () => udpExchange({ server: '127.0.0.1', port: srv.port });
  const successes = async (): Promise<number> => {
    const m = await registry.getSingleMetric('coredns_autopath_success_total')?.get();
    return (m?.values ?? []).reduce((a, v) => a + v.value, 0);
  };

  beforeAll(async () => {
    sb = await startSandbox({ files: [FIXTURE], log: () => undefined });
    sb.apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'loopback-client',
        namespace: 'default',
        uid: 'f4d1a3c2-0000-4000-8000-000000000002',
        resourceVersion: '1',
      },
      spec: { containers: [{ name: 'app', image: 'app' }], nodeName: 'node-1' },
      status: { phase: 'Running', podIP: POD_IP, podIPs: [{ ip: POD_IP }] },
    });
    up = await ZoneUpstream.start();
    srv = await startServer(`. {
    log
    autopath @kubernetes
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        endpoint ${sb.url}
        pods verified
    }
    forward . ${up.addr}
}
`);
  });
  afterAll(async () => {
    await srv?.stop();
    await up?.stop();
    await sb?.close();
  });

  it('example.com from a pod: one query per type reaches the server, answered with a CNAME to example.com and its address', async () => {
    for (const r of ['glibc', 'musl'] as const) {
      const from = srv.logs.length;
      const before = await successes();
      const res = await resolve({
        resolver: r,
        conf: podResolvConf('default'),
        name: 'example.com',
        types: ['A', 'AAAA'],
        exchange: podExchange(),
      });
      expect(res.steps).toEqual(['example.com.default.svc.cluster.local.']);
      expect(res.outcome).toEqual({
        kind: 'addresses',
        name: 'example.com.default.svc.cluster.local.',
        addresses: ['192.0.2.1', '2001:db8::1'],
        canonical: 'example.com',
      });
      expect(canonical(queriesFromLog(srv.logs.slice(from)))).toEqual([
        'example.com.default.svc.cluster.local. A',
        'example.com.default.svc.cluster.local. AAAA',
      ]);
      expect((await successes()) - before).toBe(2);
    }
  });

  it('the reply carries the synthesised CNAME first, with the TTL of the record it points at', async () => {
    const [reply] = await Promise.all([podExchange()({ name: 'example.com.default.svc.cluster.local.', type: 'A' })]);
    expect(reply).toEqual({
      kind: 'reply',
      rcode: 0,
      answers: [
        { name: 'example.com.default.svc.cluster.local.', type: 'CNAME', ttl: 60, data: 'example.com.' },
        { name: 'example.com.', type: 'A', ttl: 60, data: '192.0.2.1' },
      ],
    });
  });

  it('a cluster name in another namespace: one step instead of two', async () => {
    const res = await resolve({
      resolver: 'glibc',
      conf: podResolvConf('default'),
      name: 'svc1.testns',
      types: ['A', 'AAAA'],
      exchange: podExchange(),
    });
    expect(res.steps).toEqual(['svc1.testns.default.svc.cluster.local.']);
    expect(res.outcome).toMatchObject({
      kind: 'addresses',
      addresses: ['10.96.0.11'],
      canonical: 'svc1.testns.svc.cluster.local',
    });
  });

  it('a client that is not a known pod gets no autopath: the full client-side walk', async () => {
    const from = srv.logs.length;
    const res = await resolve({
      resolver: 'glibc',
      conf: podResolvConf('default'),
      name: 'example.com',
      types: ['A', 'AAAA'],
      exchange: hostExchange(),
    });
    expect(res.steps).toEqual([...searched('example.com', 'default'), 'example.com.']);
    expect(queriesFromLog(srv.logs.slice(from))).toHaveLength(8);
  });

  it('a name that exists nowhere: autopath returns the first NXDOMAIN and the client walks on by itself', async () => {
    const upFrom = up.received.length;
    const res = await resolve({
      resolver: 'glibc',
      conf: podResolvConf('default'),
      name: 'nope',
      types: ['A'],
      exchange: podExchange(),
    });
    expect(res.steps).toEqual([...searched('nope', 'default'), 'nope.']);
    expect(res.outcome).toEqual({ kind: 'error', error: 'EAI_NONAME' });
    // `nope.` went upstream twice: in the server's walk and in the client's own last step.
    expect(up.received.slice(upFrom).filter((q) => q.name === 'nope.')).toHaveLength(2);
  });

  it('NODATA on a search element stops the server walk (a namespace named like the short name)', async () => {
    const g = await resolve({
      resolver: 'glibc',
      conf: podResolvConf('default'),
      name: 'testns',
      types: ['A', 'AAAA'],
      exchange: podExchange(),
    });
    expect(g.steps).toEqual([...searched('testns', 'default'), 'testns.']);
    expect(g.outcome).toEqual({ kind: 'error', error: 'EAI_NODATA' });
    const m = await resolve({
      resolver: 'musl',
      conf: podResolvConf('default'),
      name: 'testns',
      types: ['A', 'AAAA'],
      exchange: podExchange(),
    });
    // musl stops at once: the server answered the first search name with the NODATA of testns.svc.cluster.local.
    expect(m.steps).toEqual(['testns.default.svc.cluster.local.']);
    expect(m.outcome).toEqual({ kind: 'error', error: 'EAI_NODATA' });
  });
});
