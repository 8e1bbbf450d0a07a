/**
 * Shared vocabulary of the resolver suite: the scenarios over the fixture cluster
 * (examples/cluster.yaml, docs/records.md §2.1) with what each resolver must send and get,
 * and helpers to read the queries a server saw from its `log` plugin lines.
 */
import type { Outcome, ResolverKind, SentQuery } from './model.js';

export const ZONE_SUFFIX = 'svc.cluster.local.';

/** Expected result of one scenario for one resolver. */
export interface Expectation {
  /** The names tried, in order. */
  readonly steps: readonly string[];
  /** addresses (any order) | an error code | for SRV/dig: rcode and answer data. */
  readonly result: { addresses: readonly string[] } | { error: string } | { rcode: number; data: readonly string[] };
}

export interface Scenario {
  readonly title: string;
  /** Namespace of the client pod. */
  readonly ns: string;
  readonly name: string;
  /** getaddrinfo AF_UNSPEC unless given (SRV: res_search / dig -t SRV). */
  readonly types?: readonly string[];
  /** Names the server itself asks upstream besides the client's (ExternalName targets). */
  readonly alsoUpstream?: readonly string[];
  readonly expect: Partial<Record<ResolverKind, Expectation>>;
}

const d = (ns: string) => `${ns}.svc.cluster.local.`;

/** Search names of `name` for a pod in `ns` (the three kubelet search domains), without the name as is. */
export function searched(name: string, ns: string): string[] {
  return [`${name}.${d(ns)}`, `${name}.svc.cluster.local.`, `${name}.cluster.local.`];
}

const HL_A = ['10.244.1.20', '10.244.1.21', '10.244.1.23', 'fd00:10:244::21'];

/**
 * The scenarios. glibc and musl use getaddrinfo (A+AAAA); dig uses `dig +search NAME` (type A) —
 * so dig's expectations list A-only answers.
 */
export const SCENARIOS: readonly Scenario[] = [
  {
    title: 'short name of a service in the own namespace (kubernetes from default)',
    ns: 'default',
    name: 'kubernetes',
    expect: {
      glibc: { steps: ['kubernetes.default.svc.cluster.local.'], result: { addresses: ['10.96.0.1'] } },
      musl: { steps: ['kubernetes.default.svc.cluster.local.'], result: { addresses: ['10.96.0.1'] } },
      dig: { steps: ['kubernetes.default.svc.cluster.local.'], result: { rcode: 0, data: ['10.96.0.1'] } },
    },
  },
  {
    title: 'short name in the own namespace (svc1 from testns)',
    ns: 'testns',
    name: 'svc1',
    expect: {
      glibc: { steps: ['svc1.testns.svc.cluster.local.'], result: { addresses: ['10.96.0.11'] } },
      musl: { steps: ['svc1.testns.svc.cluster.local.'], result: { addresses: ['10.96.0.11'] } },
      dig: { steps: ['svc1.testns.svc.cluster.local.'], result: { rcode: 0, data: ['10.96.0.11'] } },
    },
  },
  {
    title: 'svc.ns from another namespace: one NXDOMAIN first',
    ns: 'default',
    name: 'svc1.testns',
    expect: {
      glibc: { steps: searched('svc1.testns', 'default').slice(0, 2), result: { addresses: ['10.96.0.11'] } },
      musl: { steps: searched('svc1.testns', 'default').slice(0, 2), result: { addresses: ['10.96.0.11'] } },
      dig: { steps: searched('svc1.testns', 'default').slice(0, 2), result: { rcode: 0, data: ['10.96.0.11'] } },
    },
  },
  {
    title: 'svc.ns.svc: two NXDOMAINs first',
    ns: 'default',
    name: 'svc1.testns.svc',
    expect: {
      glibc: { steps: searched('svc1.testns.svc', 'default'), result: { addresses: ['10.96.0.11'] } },
      musl: { steps: searched('svc1.testns.svc', 'default'), result: { addresses: ['10.96.0.11'] } },
      dig: { steps: searched('svc1.testns.svc', 'default'), result: { rcode: 0, data: ['10.96.0.11'] } },
    },
  },
  {
    title: 'full name without trailing dot (4 dots < ndots 5): three NXDOMAINs, then as is',
    ns: 'default',
    name: 'svc1.testns.svc.cluster.local',
    expect: {
      glibc: {
        steps: [...searched('svc1.testns.svc.cluster.local', 'default'), 'svc1.testns.svc.cluster.local.'],
        result: { addresses: ['10.96.0.11'] },
      },
      musl: {
        steps: [...searched('svc1.testns.svc.cluster.local', 'default'), 'svc1.testns.svc.cluster.local.'],
        result: { addresses: ['10.96.0.11'] },
      },
      dig: {
        steps: [...searched('svc1.testns.svc.cluster.local', 'default'), 'svc1.testns.svc.cluster.local.'],
        result: { rcode: 0, data: ['10.96.0.11'] },
      },
    },
  },
  {
    title: 'full name with trailing dot: one query, no search',
    ns: 'default',
    name: 'svc1.testns.svc.cluster.local.',
    expect: {
      glibc: { steps: ['svc1.testns.svc.cluster.local.'], result: { addresses: ['10.96.0.11'] } },
      musl: { steps: ['svc1.testns.svc.cluster.local.'], result: { addresses: ['10.96.0.11'] } },
      dig: { steps: ['svc1.testns.svc.cluster.local.'], result: { rcode: 0, data: ['10.96.0.11'] } },
    },
  },
  {
    title:
      'a name with ndots dots that does not exist: glibc tries it as is first, then the search list; musl and dig only as is',
    ns: 'default',
    name: 'a.b.c.d.e.f',
    expect: {
      glibc: { steps: ['a.b.c.d.e.f.', ...searched('a.b.c.d.e.f', 'default')], result: { error: 'EAI_NONAME' } },
      musl: { steps: ['a.b.c.d.e.f.'], result: { error: 'EAI_NONAME' } },
      dig: { steps: ['a.b.c.d.e.f.'], result: { rcode: 3, data: [] } },
    },
  },
  {
    title: 'headless service (hl.testns from testns): every ready endpoint, both families',
    ns: 'testns',
    name: 'hl.testns',
    expect: {
      glibc: { steps: searched('hl.testns', 'testns').slice(0, 2), result: { addresses: HL_A } },
      musl: { steps: searched('hl.testns', 'testns').slice(0, 2), result: { addresses: HL_A } },
      dig: { steps: searched('hl.testns', 'testns').slice(0, 2), result: { rcode: 0, data: HL_A.slice(0, 3) } },
    },
  },
  {
    title: 'per-endpoint name (web-0.hl.testns)',
    ns: 'testns',
    name: 'web-0.hl.testns',
    expect: {
      glibc: { steps: searched('web-0.hl.testns', 'testns').slice(0, 2), result: { addresses: ['10.244.1.20'] } },
      musl: { steps: searched('web-0.hl.testns', 'testns').slice(0, 2), result: { addresses: ['10.244.1.20'] } },
      dig: { steps: searched('web-0.hl.testns', 'testns').slice(0, 2), result: { rcode: 0, data: ['10.244.1.20'] } },
    },
  },
  {
    title: 'pod name (10-244-2-7.testns.pod, pods insecure)',
    ns: 'testns',
    name: '10-244-2-7.testns.pod',
    expect: {
      glibc: { steps: searched('10-244-2-7.testns.pod', 'testns'), result: { addresses: ['10.244.2.7'] } },
      musl: { steps: searched('10-244-2-7.testns.pod', 'testns'), result: { addresses: ['10.244.2.7'] } },
      dig: { steps: searched('10-244-2-7.testns.pod', 'testns'), result: { rcode: 0, data: ['10.244.2.7'] } },
    },
  },
  {
    title: "ExternalName service (ext → www.example.com): the CNAME and the upstream's addresses",
    ns: 'testns',
    name: 'ext',
    alsoUpstream: ['www.example.com.'],
    expect: {
      glibc: { steps: ['ext.testns.svc.cluster.local.'], result: { addresses: ['192.0.2.1', '2001:db8::1'] } },
      musl: { steps: ['ext.testns.svc.cluster.local.'], result: { addresses: ['192.0.2.1', '2001:db8::1'] } },
      dig: { steps: ['ext.testns.svc.cluster.local.'], result: { rcode: 0, data: ['192.0.2.1'] } },
    },
  },
  {
    title: 'ExternalName service inside the zone (extint → svc1.testns)',
    ns: 'testns',
    name: 'extint',
    expect: {
      glibc: { steps: ['extint.testns.svc.cluster.local.'], result: { addresses: ['10.96.0.11'] } },
      musl: { steps: ['extint.testns.svc.cluster.local.'], result: { addresses: ['10.96.0.11'] } },
      dig: { steps: ['extint.testns.svc.cluster.local.'], result: { rcode: 0, data: ['10.96.0.11'] } },
    },
  },
  {
    title: 'SRV _http._tcp.svc1.testns (glibc res_search walks the search list; musl res_search does not)',
    ns: 'testns',
    name: '_http._tcp.svc1.testns',
    types: ['SRV'],
    expect: {
      glibc: {
        steps: searched('_http._tcp.svc1.testns', 'testns').slice(0, 2),
        result: { rcode: 0, data: ['0 100 80 svc1.testns.svc.cluster.local.'] },
      },
      musl: { steps: ['_http._tcp.svc1.testns.'], result: { error: 'HOST_NOT_FOUND' } },
      dig: {
        steps: searched('_http._tcp.svc1.testns', 'testns').slice(0, 2),
        result: { rcode: 0, data: ['0 100 80 svc1.testns.svc.cluster.local.'] },
      },
    },
  },
  {
    title: 'external name (example.com): three NXDOMAINs inside the cluster zone, then the upstream answer',
    ns: 'default',
    name: 'example.com',
    expect: {
      glibc: {
        steps: [...searched('example.com', 'default'), 'example.com.'],
        result: { addresses: ['192.0.2.1', '2001:db8::1'] },
      },
      musl: {
        steps: [...searched('example.com', 'default'), 'example.com.'],
        result: { addresses: ['192.0.2.1', '2001:db8::1'] },
      },
      dig: {
        steps: [...searched('example.com', 'default'), 'example.com.'],
        result: { rcode: 0, data: ['192.0.2.1'] },
      },
    },
  },
  {
    title: 'a name that does not exist anywhere',
    ns: 'default',
    name: 'nope',
    expect: {
      glibc: { steps: [...searched('nope', 'default'), 'nope.'], result: { error: 'EAI_NONAME' } },
      musl: { steps: [...searched('nope', 'default'), 'nope.'], result: { error: 'EAI_NONAME' } },
      dig: { steps: [...searched('nope', 'default'), 'nope.'], result: { rcode: 3, data: [] } },
    },
  },
  {
    title: 'a namespace name as a short name (NODATA on a search name: glibc goes on, musl and dig stop)',
    ns: 'default',
    name: 'testns',
    expect: {
      glibc: { steps: [...searched('testns', 'default'), 'testns.'], result: { error: 'EAI_NODATA' } },
      musl: { steps: searched('testns', 'default').slice(0, 2), result: { error: 'EAI_NODATA' } },
      dig: { steps: searched('testns', 'default').slice(0, 2), result: { rcode: 0, data: [] } },
    },
  },
];

/** The types each step of a scenario sends for a resolver. */
export function typesFor(s: Scenario, r: ResolverKind): readonly string[] {
  if (s.types) return s.types;
  return r === 'dig' ? ['A'] : ['A', 'AAAA'];
}

/** Expected queries of an expectation: every step with every type. */
export function expectedQueries(e: Expectation, types: readonly string[]): SentQuery[] {
  return e.steps.flatMap((name) => types.map((type) => ({ name, type })));
}

/**
 * The queries a server saw, from `log` plugin lines in the default (`{common}`) format:
 * `[INFO] 10.244.2.8:40000 - 1234 "A IN svc1.testns.svc.cluster.local. udp 47 false 512" NOERROR …`.
 */
export function queriesFromLog(lines: readonly string[]): SentQuery[] {
  const out: SentQuery[] = [];
  for (const l of lines) {
    const m = /"(\S+) IN (\S+) (?:udp|tcp) /.exec(l);
    if (m) out.push({ type: m[1]!, name: m[2]!.toLowerCase() });
  }
  return out;
}

/**
 * Queries in a canonical order for comparison: steps stay in order, the types of one step (sent
 * in parallel, so seen in either order) are sorted. Consecutive queries for one name form a step.
 */
export function canonical(qs: readonly SentQuery[]): string[] {
  const groups: SentQuery[][] = [];
  for (const q of qs) {
    const g = groups.at(-1);
    if (g && g[0]!.name === q.name) g.push(q);
    else groups.push([q]);
  }
  return groups.flatMap((g) => g.map((q) => `${q.name} ${q.type}`).sort());
}

/**
 * The queries of the client among those a server logged: the server's own internal lookups
 * (ExternalName targets re-enter the server and are logged too) are left out.
 */
export function clientQueries(seen: readonly SentQuery[], s: Scenario): SentQuery[] {
  const internal = new Set(s.alsoUpstream ?? []);
  return seen.filter((q) => !internal.has(q.name));
}

/** Comparable form of an outcome against an expectation's `result`. */
export function resultOf(o: Outcome): Expectation['result'] {
  if (o.kind === 'addresses') return { addresses: [...o.addresses].sort() };
  if (o.kind === 'error') return { error: o.error };
  return {
    rcode: o.rcode,
    data: o.answers
      .filter((a) => a.type !== 'CNAME')
      .map((a) => a.data)
      .sort(),
  };
}

export function sortedResult(r: Expectation['result']): Expectation['result'] {
  if ('addresses' in r) return { addresses: [...r.addresses].sort() };
  if ('data' in r) return { rcode: r.rcode, data: [...r.data].sort() };
  return r;
}
