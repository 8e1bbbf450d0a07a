/**
 * Differential: the kubernetes plugin against CoreDNS 1.15.0 on the fixture cluster
 * (examples/cluster.yaml): every record form, in several configurations.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  assertResult,
  generate,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type QuerySpec,
} from './harness.js';

const CLUSTER = ['examples/cluster.yaml'];
const Z = 'cluster.local';
const SVC = (s: string) => `${s}.svc.${Z}`;

/** Names covering every record form of the fixture. */
const SERVICE_NAMES = [
  SVC('kubernetes.default'),
  SVC('kube-dns.kube-system'),
  SVC('svc1.testns'),
  SVC('svc2.testns'),
  SVC('dual.testns'),
  SVC('v6only.testns'),
  SVC('noname.testns'),
  SVC('hl.testns'),
  SVC('hlnp.testns'),
  SVC('hlempty.testns'),
  SVC('skew.testns'),
  SVC('manual.testns'),
  SVC('ext.testns'),
  SVC('extint.testns'),
  SVC('extip.testns'),
  SVC('nosuch.testns'),
  SVC('svc1.nosuchns'),
  SVC('testns'),
  SVC('empty-ns'),
  SVC('nosuchns'),
  `svc.${Z}`,
  Z,
  `pod.${Z}`,
  `nosuch.${Z}`,
  `a.b.c.d.e.${Z}`,
  // endpoints of headless services
  SVC('web-0.hl.testns'),
  SVC('10-244-1-21.hl.testns'),
  SVC('10-244-1-22.hl.testns'),
  SVC('10-244-1-23.hl.testns'),
  SVC('fd00-10-244--21.hl.testns'),
  SVC('nosuch.hl.testns'),
  SVC('10-244-1-10.svc1.testns'),
  SVC('10-244-1-60.skew.testns'),
  SVC('10-244-1-30.hlnp.testns'),
  // SRV forms
  SVC('_http._tcp.svc1.testns'),
  SVC('_https._tcp.svc2.testns'),
  SVC('_http._tcp.svc2.testns'),
  SVC('_dns._udp.kube-dns.kube-system'),
  SVC('_dns-tcp._tcp.kube-dns.kube-system'),
  SVC('_http._tcp.hl.testns'),
  SVC('_http._udp.svc1.testns'),
  SVC('_nosuch._tcp.svc1.testns'),
  SVC('_http._tcp.dual.testns'),
  SVC('_http._tcp.skew.testns'),
  SVC('_pg._tcp.manual.testns'),
  SVC('_http._tcp.ext.testns'),
  SVC('_http.svc1.testns'),
  SVC('_tcp.svc1.testns'),
  // wildcards
  SVC('*.testns'),
  SVC('svc1.*'),
  SVC('*.*'),
  SVC('_*._tcp.svc1.testns'),
  SVC('_http._*.svc1.testns'),
  SVC('any.testns'),
  SVC('*.hl.testns'),
  // special names
  `dns-version.${Z}`,
  `ns.dns.${Z}`,
  `dns.${Z}`,
  `x.ns.dns.${Z}`,
  // pods
  `10-244-2-7.testns.pod.${Z}`,
  `10-244-2-8.default.pod.${Z}`,
  `10-244-2-8.testns.pod.${Z}`,
  `1-2-3-4.testns.pod.${Z}`,
  `fd00-10-244--7.testns.pod.${Z}`,
  `10.244.2.7.testns.pod.${Z}`,
  `bad.testns.pod.${Z}`,
  `10-244-2-7.nosuchns.pod.${Z}`,
  `testns.pod.${Z}`,
  `10-244-0-5.kube-system.pod.${Z}`,
  `010-244-002-007.testns.pod.${Z}`,
];

const REVERSE_NAMES = [
  '1.0.96.10.in-addr.arpa',
  '10.0.96.10.in-addr.arpa',
  '11.0.96.10.in-addr.arpa',
  '13.0.96.10.in-addr.arpa',
  '99.0.96.10.in-addr.arpa',
  '20.1.244.10.in-addr.arpa',
  '21.1.244.10.in-addr.arpa',
  '10.1.244.10.in-addr.arpa',
  '7.2.244.10.in-addr.arpa',
  '60.1.244.10.in-addr.arpa',
  '96.10.in-addr.arpa',
  '10.in-addr.arpa',
  'in-addr.arpa',
  '1.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.4.4.2.0.0.1.0.0.0.0.0.0.0.0.d.f.ip6.arpa',
  '4.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.0.0.0.0.d.f.ip6.arpa',
  '3.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.0.0.0.0.d.f.ip6.arpa',
  '9.9.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.0.0.0.0.d.f.ip6.arpa',
];

const TYPES = ['A', 'AAAA', 'SRV', 'TXT', 'PTR', 'NS', 'SOA', 'CNAME', 'MX', 'ANY'];

function corefile(options: string, zones = `${Z} in-addr.arpa ip6.arpa`, extra = ''): string {
  return `.:{{DNS}} {\n  kubernetes ${zones} {\n    endpoint {{API}}\n${options}  }\n${extra}}\n`;
}

const PROBE = { name: `kubernetes.default.svc.${Z}`, type: 'A' };

interface KCase {
  readonly id: string;
  readonly corefile: string;
  readonly queries: QuerySpec[];
  readonly plugins?: string[];
  readonly objects?: unknown[];
  readonly probe?: { name: string; type: string };
}

const CASES: KCase[] = [
  {
    id: 'kubernetes-default',
    corefile: corefile('    pods insecure\n'),
    queries: [
      ...generate(SERVICE_NAMES, TYPES, undefined, 11),
      ...generate(REVERSE_NAMES, ['PTR', 'A', 'SOA', 'NS'], undefined, 12),
    ],
  },
  {
    id: 'kubernetes-pods-verified',
    corefile: corefile('    pods verified\n    endpoint_pod_names\n    ttl 30\n'),
    queries: generate(
      [
        ...SERVICE_NAMES.filter((n) => /pod\.|hl\.|_tcp|svc1|ns\.dns|cluster\.local$/.test(n)),
        ...REVERSE_NAMES.slice(5, 10),
      ],
      ['A', 'AAAA', 'SRV', 'PTR', 'SOA'],
      [{ proto: 'udp' }, { proto: 'tcp', edns: 1232, mixed: true }],
      21,
    ),
  },
  {
    id: 'kubernetes-pods-disabled-fallthrough',
    corefile: corefile(
      '    pods disabled\n    fallthrough in-addr.arpa\n    ttl 0\n',
      `${Z} in-addr.arpa ip6.arpa`,
      '  whoami\n',
    ),
    plugins: ['kubernetes', 'whoami'],
    queries: generate(
      [...SERVICE_NAMES.filter((n) => /pod\.|svc1|hl\.|nosuch/.test(n)), ...REVERSE_NAMES],
      ['A', 'AAAA', 'PTR', 'SRV'],
      [
        { proto: 'udp', edns: 1232 },
        { proto: 'tcp', mixed: true },
      ],
      31,
    ),
  },
  {
    id: 'kubernetes-namespaces-ignore-empty',
    corefile: corefile('    pods insecure\n    namespaces testns kube-system\n    ignore empty_service\n'),
    probe: { name: SVC('svc1.testns'), type: 'A' },
    queries: generate(
      SERVICE_NAMES.filter((n) => /default|testns|kube-system|empty|nosuch|cluster\.local$|pod/.test(n)),
      ['A', 'AAAA', 'SRV', 'TXT'],
      [{ proto: 'udp' }, { proto: 'udp', edns: 4096, mixed: true }],
      41,
    ),
  },
  {
    id: 'kubernetes-multi-ip-pods',
    corefile: corefile('    pods verified\n'),
    objects: [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'multi', namespace: 'testns' },
        spec: { containers: [{ name: 'c', image: 'x' }] },
        status: {
          phase: 'Running',
          podIP: '10.244.3.1',
          podIPs: [{ ip: '10.244.3.1' }, { ip: '10.244.3.2' }, { ip: 'fd00:10:244::3:2' }],
        },
      },
    ],
    queries: generate(
      [
        '10-244-3-1.testns.pod.cluster.local',
        '10-244-3-2.testns.pod.cluster.local',
        'fd00-10-244--3-2.testns.pod.cluster.local',
        '10-244-3-3.testns.pod.cluster.local',
      ],
      ['A', 'AAAA'],
      undefined,
      51,
    ),
  },
];

describe('differential: kubernetes', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential kubernetes: ${t.compared} queries compared in ${t.cases} cases\n`);
  });
  for (const c of CASES) {
    it(c.id, async () => {
      expect(missing).toBeNull();
      const pair = await startPair({ corefile: c.corefile, cluster: CLUSTER, objects: c.objects }, c.probe ?? PROBE);
      try {
        const result = newResult(c.id);
        await runQueries(pair, result, c.queries, c.plugins ?? ['kubernetes']);
        assertResult(result, c.queries.length);
      } finally {
        await pair.stop();
      }
    }, 180_000);
  }
});
