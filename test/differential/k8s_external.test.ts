/**
 * Differential: k8s_external against CoreDNS 1.15.0 on the fixture cluster (examples/cluster.yaml)
 * plus LoadBalancer Services with ingress IPs and hostnames, externalIPs, and headless Services:
 * every name form, the apex and its `dns` subdomain, PTR, several option sets.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { networkInterfaces } from 'node:os';
import * as dnsPacket from 'dns-packet';
import type { Sandbox } from '../../sandbox/server.js';
import {
  assertResult,
  encode,
  exchange,
  generate,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type Pair,
  type QuerySpec,
} from './harness.js';
import { waitFor } from '../helpers/wait.js';

const CLUSTER = ['examples/cluster.yaml'];
const Z = 'example.org';
const N = (s: string) => `${s}.${Z}`;

const svc = (name: string, spec: Record<string, unknown>, ingress?: unknown[]) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'testns' },
  spec,
  status: { loadBalancer: ingress ? { ingress } : {} },
});
const PORTS = [
  { name: 'http', port: 80, protocol: 'TCP' },
  { name: 'dns', port: 53, protocol: 'UDP' },
];

/** Services with external addresses, added to the fixture. */
const OBJECTS: unknown[] = [
  svc(
    'lb',
    {
      type: 'LoadBalancer',
      clusterIP: '10.96.5.1',
      clusterIPs: ['10.96.5.1'],
      ports: PORTS,
      externalIPs: ['192.0.2.10'],
    },
    [{ ip: '198.51.100.1' }, { ip: '2001:db8::1' }, { ip: '198.51.100.1' }],
  ),
  svc(
    'lbhost',
    {
      type: 'LoadBalancer',
      clusterIP: '10.96.5.2',
      clusterIPs: ['10.96.5.2'],
      ports: [{ name: 'https', port: 443, protocol: 'TCP' }],
    },
    [{ hostname: 'lb.example.net' }, { ip: '198.51.100.7' }],
  ),
  svc(
    'lbnohost',
    {
      type: 'LoadBalancer',
      clusterIP: '10.96.5.3',
      clusterIPs: ['10.96.5.3'],
      ports: [{ name: 'https', port: 443, protocol: 'TCP' }],
    },
    [{ hostname: 'nowhere.example.net' }],
  ),
  svc('extips', {
    type: 'ClusterIP',
    clusterIP: '10.96.5.4',
    clusterIPs: ['10.96.5.4'],
    externalIPs: ['198.51.100.20', '198.51.100.21'],
    ports: [{ port: 8080, protocol: 'TCP' }],
  }),
  svc('noports', {
    type: 'ClusterIP',
    clusterIP: '10.96.5.5',
    clusterIPs: ['10.96.5.5'],
    externalIPs: ['198.51.100.30'],
  }),
  svc('hlext', {
    type: 'ClusterIP',
    clusterIP: 'None',
    clusterIPs: ['None'],
    externalIPs: ['198.51.100.40'],
    ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
  }),
  svc('pending', { type: 'LoadBalancer', clusterIP: '10.96.5.6', clusterIPs: ['10.96.5.6'], ports: PORTS }),
];

/**
 * The DNS server "in the cluster": an EndpointSlice of a Service with external IPs carries this
 * host's own addresses (data only; no traffic goes to them), so both servers find themselves as
 * its endpoints and answer `ns1.dns` with the Service's external IPs (headless: the endpoints).
 */
const OWN = Object.values(networkInterfaces())
  .flatMap((l) => l ?? [])
  .filter((a) => !a.internal && a.family === 'IPv4')
  .map((a) => a.address);
const DNS_SERVICE: unknown[] =
  OWN.length === 0
    ? []
    : [
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 'dns-ext', namespace: 'kube-system' },
          spec: {
            type: 'LoadBalancer',
            clusterIP: '10.96.5.53',
            clusterIPs: ['10.96.5.53'],
            externalIPs: ['203.0.113.53'],
            ports: [{ name: 'dns', port: 53, protocol: 'UDP' }],
          },
          status: { loadBalancer: { ingress: [{ ip: '203.0.113.54' }, { ip: '2001:db8::53' }] } },
        },
        {
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          metadata: {
            name: 'dns-ext-1',
            namespace: 'kube-system',
            labels: { 'kubernetes.io/service-name': 'dns-ext' },
          },
          addressType: 'IPv4',
          ports: [{ name: 'dns', port: 53, protocol: 'UDP' }],
          endpoints: [{ addresses: [OWN[0]], conditions: { ready: true } }],
        },
      ];

const NAMES = [
  Z,
  N('dns'),
  N('ns1.dns'),
  N('ns2.dns'),
  N('x.ns1.dns'),
  N('testns'),
  N('nosuchns'),
  N('default'),
  N('lb.testns'),
  N('lbhost.testns'),
  N('lbnohost.testns'),
  N('extips.testns'),
  N('noports.testns'),
  N('hlext.testns'),
  N('pending.testns'),
  N('svc1.testns'),
  N('hl.testns'),
  N('ext.testns'),
  N('nosuch.testns'),
  N('lb.nosuchns'),
  N('lb.empty-ns'),
  N('_http._tcp.lb.testns'),
  N('_dns._udp.lb.testns'),
  N('_http._udp.lb.testns'),
  N('_https._tcp.lbhost.testns'),
  N('_http._tcp.hl.testns'),
  N('x.lb.testns'),
  N('web-0.hl.testns'),
  N('10-244-1-21.hl.testns'),
  N('nosuch.hl.testns'),
  N('a.b.c.lb.testns'),
  N('_http.lb.testns'),
];
const REVERSE = [
  '1.100.51.198.in-addr.arpa',
  '20.100.51.198.in-addr.arpa',
  '99.100.51.198.in-addr.arpa',
  '100.51.198.in-addr.arpa',
  'x.100.51.198.in-addr.arpa',
];
const TYPES = ['A', 'AAAA', 'SRV', 'PTR', 'SOA', 'NS', 'TXT', 'CNAME', 'MX'];

/** `lb.example.net` resolves through the server again (the hosts plugin of the same block). */
const HOSTS = '  hosts {\n    203.0.113.9 lb.example.net\n    2001:db8::9 lb.example.net\n    fallthrough\n  }\n';

function corefile(k8s: string, ext: string, extra = ''): string {
  return `.:{{DNS}} {\n${HOSTS}  kubernetes cluster.local {\n    endpoint {{API}}\n${k8s}  }\n  ${ext}\n${extra}}\n`;
}

const PROBE = { name: N('lb.testns'), type: 'A' };

interface Case {
  readonly id: string;
  readonly corefile: string;
  readonly queries: QuerySpec[];
  /** The block's plugins (the tolerance rules of `kubernetes` apply: index order, serial clock). */
  readonly plugins?: string[];
  /** Change the cluster after both servers answer, and wait until both saw it. */
  readonly change?: (sb: Sandbox, pair: Pair) => Promise<void>;
  readonly objects?: unknown[];
}

/** Wait until both servers answer `name A` with `ip` among the answers. */
async function bothAnswer(pair: Pair, name: string, ip: string): Promise<void> {
  for (const p of [pair.ref, pair.cand]) {
    await waitFor(
      `${p.name} to answer ${name} A ${ip}`,
      async () => {
        const r = await exchange(p.dns, encode({ name, type: 'A', proto: 'udp', id: 7 }), 'udp', 1000);
        return r !== null && dnsPacket.decode(r).answers?.some((a) => a.type === 'A' && a.data === ip) === true;
      },
      { everyMs: 50 },
    );
  }
}

const CASES: Case[] = [
  {
    id: 'k8s-external-default',
    corefile: corefile('', `k8s_external ${Z} 100.51.198.in-addr.arpa`),
    queries: [...generate(NAMES, TYPES, undefined, 61), ...generate(REVERSE, ['PTR', 'A', 'SOA'], undefined, 62)],
  },
  {
    id: 'k8s-external-headless-apex-ttl',
    corefile: corefile(
      '    ttl 10\n',
      `k8s_external ${Z} 100.51.198.in-addr.arpa {\n    headless\n    apex ext\n    ttl 30\n  }`,
    ),
    queries: [
      ...generate(
        [...NAMES, N('ext'), N('ns1.ext'), N('x.ext')],
        ['A', 'AAAA', 'SRV', 'SOA', 'NS', 'TXT'],
        [{ proto: 'udp' }, { proto: 'tcp', edns: 1232, mixed: true }],
        71,
      ),
      ...generate(REVERSE, ['PTR'], [{ proto: 'udp' }], 72),
    ],
  },
  {
    id: 'k8s-external-fallthrough',
    corefile: corefile('', `k8s_external ${Z} other.test {\n    fallthrough ${Z}\n  }`, '  whoami\n'),
    plugins: ['hosts', 'kubernetes', 'k8s_external', 'whoami'],
    queries: generate(
      [...NAMES, 'other.test', 'lb.testns.other.test', 'nosuch.testns.other.test'],
      ['A', 'AAAA', 'SRV'],
      [
        { proto: 'udp', edns: 1232 },
        { proto: 'tcp', mixed: true },
      ],
      81,
    ),
  },
  {
    id: 'k8s-external-own-block',
    corefile: `${Z}:{{DNS}} {\n  kubernetes cluster.local {\n    endpoint {{API}}\n    namespaces testns\n  }\n  k8s_external\n}\n.:{{DNS}} {\n${HOSTS}}\n`,
    queries: generate(
      [...NAMES, N('kubernetes.default'), N('kube-dns.kube-system')],
      ['A', 'AAAA', 'SRV', 'NS', 'SOA'],
      [{ proto: 'udp' }, { proto: 'udp', edns: 4096, mixed: true }],
      91,
    ),
  },
  {
    id: 'k8s-external-dns-service-in-cluster',
    corefile: corefile('', `k8s_external ${Z}`),
    objects: DNS_SERVICE,
    queries: generate(
      [Z, N('ns1.dns'), N('dns-ext.kube-system')],
      ['NS', 'A', 'AAAA', 'SOA'],
      [{ proto: 'udp' }, { proto: 'tcp', mixed: true }],
      131,
    ),
  },
  {
    id: 'k8s-external-dns-service-in-cluster-headless',
    corefile: corefile('', `k8s_external ${Z} {\n    headless\n  }`),
    objects: DNS_SERVICE.map((o) =>
      (o as { kind: string }).kind === 'Service'
        ? {
            ...(o as object),
            spec: {
              ...(o as { spec: object }).spec,
              clusterIP: 'None',
              clusterIPs: ['None'],
              externalIPs: [],
              type: 'ClusterIP',
            },
            status: {},
          }
        : o,
    ),
    queries: generate([Z, N('ns1.dns')], ['NS', 'A', 'AAAA'], [{ proto: 'udp' }], 132),
  },
  {
    // An update of a Service's load-balancer status moves the external zone's serial (0 before).
    id: 'k8s-external-serial-after-update',
    corefile: corefile('', `k8s_external ${Z}`),
    change: async (sb, pair) => {
      sb.apply(
        svc('lb', { type: 'LoadBalancer', clusterIP: '10.96.5.1', clusterIPs: ['10.96.5.1'], ports: PORTS }, [
          { ip: '198.51.100.99' },
        ]),
      );
      await bothAnswer(pair, N('lb.testns'), '198.51.100.99');
    },
    queries: generate(
      [Z, N('lb.testns'), N('dns'), N('nosuch.testns')],
      ['SOA', 'A', 'AAAA', 'SRV'],
      [{ proto: 'udp' }, { proto: 'tcp' }],
      101,
    ),
  },
];

describe('differential: k8s_external', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential k8s_external: ${t.compared} queries compared in ${t.cases} cases\n`);
  });
  for (const c of CASES) {
    it(c.id, async () => {
      expect(missing).toBeNull();
      if (c.objects) expect(c.objects.length, 'this host has a non-loopback IPv4 address').toBeGreaterThan(0);
      const pair = await startPair(
        { corefile: c.corefile, cluster: CLUSTER, objects: [...OBJECTS, ...(c.objects ?? [])] },
        PROBE,
      );
      try {
        if (c.change) await c.change(pair.sandbox!, pair);
        const result = newResult(c.id);
        await runQueries(pair, result, c.queries, c.plugins ?? ['hosts', 'kubernetes', 'k8s_external']);
        assertResult(result, c.queries.length);
      } finally {
        await pair.stop();
      }
    }, 180_000);
  }
});
