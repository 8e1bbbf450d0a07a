/**
 * Differential: the kubernetes plugin's watch-shaping options against CoreDNS 1.15.0 — `labels`
 * (the label selector of Services, EndpointSlices and Pods), `namespace_labels`, `noendpoints` —
 * and the API server reached through a `kubeconfig` instead of `endpoint`. The cluster
 * (fixtures/kubernetes-options.yaml) holds objects on both sides of every selector: a selected
 * Service whose slice is not selected and the reverse, a dual-stack Service with one selected
 * slice, labelled and unlabelled Pods, namespaces in and out of `namespace_labels`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { reverseName } from '../../src/dns/name.js';
import { freePort } from '../helpers/net.js';
import {
  assertResult,
  CLUSTERDNS_BIN,
  COREDNS_BIN,
  generate,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type QuerySpec,
  type Variant,
} from './harness.js';

const OPTIONS_CLUSTER = ['test/differential/fixtures/kubernetes-options.yaml'];
const FIXTURE_CLUSTER = ['examples/cluster.yaml'];
const Z = 'cluster.local';
const SVC = (s: string): string => `${s}.svc.${Z}`;
const POD = (s: string): string => `${s}.pod.${Z}`;

/** The namespaces of the options cluster with their index in the 10.96.I.x / 10.244.I.x plan. */
const NAMESPACES: readonly [string, number][] = [
  ['alpha', 10],
  ['beta', 11],
  ['gamma', 12],
  ['delta', 13],
];

/** Every record form of the options cluster, in every namespace, plus names that do not exist. */
const OPTION_NAMES: readonly string[] = [
  ...NAMESPACES.flatMap(([ns, i]) => [
    SVC(`web.${ns}`),
    SVC(`_http._tcp.web.${ns}`),
    SVC(`10-244-${i}-1.web.${ns}`),
    SVC(`db.${ns}`),
    SVC(`db-0.db.${ns}`),
    SVC(`_pg._tcp.db.${ns}`),
    SVC(`_pg._tcp.db-0.db.${ns}`),
    SVC(ns),
    SVC(`nosuch.${ns}`),
    SVC(`*.${ns}`),
    POD(`10-244-${i}-1.${ns}`),
    POD(ns),
  ]),
  // alpha: the Services on either side of `labels`
  SVC('api.alpha'),
  SVC('_http._tcp.api.alpha'),
  SVC('cache.alpha'),
  SVC('cache-0.cache.alpha'),
  SVC('_http._tcp.cache.alpha'),
  SVC('plain.alpha'),
  SVC('_http._tcp.plain.alpha'),
  SVC('legacy.alpha'),
  SVC('10-244-10-7.legacy.alpha'),
  SVC('_http._tcp.legacy.alpha'),
  SVC('dual.alpha'),
  SVC('_http._tcp.dual.alpha'),
  SVC('10-244-10-8.dual.alpha'),
  SVC('fd00-10-244--10-8.dual.alpha'),
  SVC('blank.alpha'),
  SVC('_http._tcp.blank.alpha'),
  SVC('10-244-10-10.blank.alpha'),
  SVC('db-1.db.alpha'),
  SVC('_*._tcp.db.alpha'),
  SVC('ext.alpha'),
  SVC('_http._tcp.ext.alpha'),
  SVC('extplain.alpha'),
  POD('10-244-10-2.alpha'),
  POD('10-244-10-3.alpha'),
  POD('10-244-10-6.alpha'),
  POD('10-244-10-9.alpha'),
  POD('10-244-11-1.alpha'),
  // across namespaces, kube-system, the zone's own names
  SVC('web.*'),
  SVC('*.*'),
  SVC('web.nosuchns'),
  SVC('nosuchns'),
  SVC('kube-dns.kube-system'),
  SVC('_dns._udp.kube-dns.kube-system'),
  SVC('kube-system'),
  `svc.${Z}`,
  Z,
  `ns.dns.${Z}`,
  `dns-version.${Z}`,
  `nosuch.${Z}`,
];

/** PTR names of every Service and endpoint address of the options cluster (and one unused). */
const OPTION_REVERSE: readonly string[] = [
  '10.96.10.1',
  '10.96.10.2',
  '10.96.10.6',
  '10.96.10.7',
  '10.96.10.8',
  '10.96.10.9',
  '10.96.10.10',
  'fd00:96::10:8',
  '10.96.0.10',
  ...NAMESPACES.slice(1).map(([, i]) => `10.96.${i}.1`),
  ...[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((h) => `10.244.10.${h}`),
  'fd00:10:244::10:8',
  ...NAMESPACES.slice(1).flatMap(([, i]) => [`10.244.${i}.1`, `10.244.${i}.3`]),
  '10.244.0.5',
].map((ip) => reverseName(ip)!.slice(0, -1));

/** The record forms of examples/cluster.yaml that EndpointSlices decide (for `noendpoints`). */
const FIXTURE_NAMES: readonly string[] = [
  SVC('kubernetes.default'),
  SVC('svc1.testns'),
  SVC('svc2.testns'),
  SVC('dual.testns'),
  SVC('hl.testns'),
  SVC('hlnp.testns'),
  SVC('hlempty.testns'),
  SVC('skew.testns'),
  SVC('manual.testns'),
  SVC('ext.testns'),
  SVC('nosuch.testns'),
  SVC('testns'),
  SVC('web-0.hl.testns'),
  SVC('10-244-1-21.hl.testns'),
  SVC('fd00-10-244--21.hl.testns'),
  SVC('10-244-1-10.svc1.testns'),
  SVC('10-244-1-30.hlnp.testns'),
  SVC('10-244-1-60.skew.testns'),
  SVC('_http._tcp.svc1.testns'),
  SVC('_https._tcp.svc2.testns'),
  SVC('_http._tcp.hl.testns'),
  SVC('_http._tcp.skew.testns'),
  SVC('_pg._tcp.manual.testns'),
  SVC('_dns._udp.kube-dns.kube-system'),
  SVC('*.testns'),
  SVC('*.hl.testns'),
  `ns.dns.${Z}`,
  Z,
  POD('10-244-2-7.testns'),
  POD('10-244-1-20.testns'),
];
const FIXTURE_REVERSE: readonly string[] = [
  '10.96.0.1',
  '10.96.0.10',
  '10.96.0.11',
  '10.244.1.10',
  '10.244.1.20',
  '10.244.1.21',
  '10.244.1.60',
  '10.244.2.7',
  'fd00:10:244::21',
].map((ip) => reverseName(ip)!.slice(0, -1));

const TYPES = ['A', 'AAAA', 'SRV', 'TXT', 'CNAME'];
const VARIANTS: readonly Variant[] = [
  { proto: 'udp' },
  { proto: 'udp', edns: 1232, mixed: true },
  { proto: 'tcp', edns: 4096 },
];

/** What `--kubeconfig` of the sandbox CLI writes (sandbox/main.ts), aimed at this case's sandbox. */
const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: sandbox
  cluster:
    server: {{API}}
    insecure-skip-tls-verify: true
users:
- name: anonymous
  user: {}
contexts:
- name: other
  context:
    cluster: nowhere
    user: anonymous
- name: sandbox
  context:
    cluster: sandbox
    user: anonymous
current-context: other
`;

function corefile(options: string, source = '    endpoint {{API}}\n', extra = ''): string {
  return `.:{{DNS}} {\n  kubernetes ${Z} in-addr.arpa ip6.arpa {\n${source}${options}  }\n${extra}}\n`;
}

interface OCase {
  readonly id: string;
  readonly corefile: string;
  readonly cluster: readonly string[];
  readonly files?: Readonly<Record<string, string>>;
  /** A name each server answers only once its caches are in sync. */
  readonly probe: { name: string; type: string };
  readonly queries: QuerySpec[];
}

function optionQueries(seed: number): QuerySpec[] {
  return [...generate(OPTION_NAMES, TYPES, VARIANTS, seed), ...generate(OPTION_REVERSE, ['PTR'], VARIANTS, seed + 1)];
}

const CASES: OCase[] = [
  {
    // Services, EndpointSlices and Pods are each filtered on their own labels.
    id: 'kubernetes-labels',
    corefile: corefile('    pods verified\n    labels dns in (public, internal),!hidden\n'),
    cluster: OPTIONS_CLUSTER,
    probe: { name: SVC('web.delta'), type: 'A' },
    queries: optionQueries(101),
  },
  {
    // Exposes alpha, beta, gamma (no `dns` label: notin matches); not delta, kube-system (no `team`).
    id: 'kubernetes-namespace-labels',
    corefile: corefile('    pods insecure\n    namespace_labels team in (a, b, c),dns notin (disabled)\n'),
    cluster: OPTIONS_CLUSTER,
    probe: { name: SVC('web.gamma'), type: 'A' },
    queries: optionQueries(111),
  },
  {
    id: 'kubernetes-noendpoints',
    corefile: corefile('    pods verified\n    noendpoints\n'),
    cluster: OPTIONS_CLUSTER,
    probe: { name: SVC('web.alpha'), type: 'A' },
    queries: optionQueries(121),
  },
  {
    // Headless, skewed, manual and dual-stack endpoints of the main fixture, none watched; with
    // `ignore empty_service` every ClusterIP Service then counts as empty.
    id: 'kubernetes-noendpoints-fixture',
    corefile: corefile('    pods insecure\n    noendpoints\n    ignore empty_service\n    endpoint_pod_names\n'),
    cluster: FIXTURE_CLUSTER,
    probe: { name: SVC('ext.testns'), type: 'CNAME' },
    queries: [...generate(FIXTURE_NAMES, TYPES, VARIANTS, 131), ...generate(FIXTURE_REVERSE, ['PTR'], VARIANTS, 132)],
  },
  {
    // The API server through a kubeconfig (and a context that is not the current one), with both
    // selectors at once; `()` is the set of the empty value (alpha/blank has `tier: ""`).
    id: 'kubernetes-kubeconfig-selectors',
    corefile: corefile(
      '    pods verified\n    labels dns=public,tier notin ()\n    namespace_labels dns=enabled\n',
      '    kubeconfig {{DIR}}/kubeconfig sandbox\n',
    ),
    files: { kubeconfig: KUBECONFIG },
    cluster: OPTIONS_CLUSTER,
    probe: { name: SVC('web.beta'), type: 'A' },
    queries: optionQueries(141),
  },
];

describe('differential: kubernetes options', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential kubernetes options: ${t.compared} queries compared in ${t.cases} cases\n`);
  });
  /**
   * Selectors a metav1.LabelSelector cannot hold: CoreDNS refuses to start, and so must clusterdns
   * (with the same reason; clusterdns adds the Corefile's file:line, as every setup error).
   */
  it('kubernetes-selector-rejected', async () => {
    expect(missing).toBeNull();
    const dir = mkdtempSync(join(tmpdir(), 'diff-selectors-'));
    try {
      for (const [option, value] of [
        ['labels', 'app=web,tier!=cache'],
        ['namespace_labels', 'team!=b'],
        ['labels', 'replicas<3'],
        ['namespace_labels', 'size>2'],
      ] as const) {
        const conf = join(dir, 'Corefile');
        const port = String(await freePort());
        writeFileSync(
          conf,
          corefile(`    ${option} ${value}\n`).replace('{{DNS}}', port).replace('{{API}}', 'http://127.0.0.1:1'),
        );
        const run = (cmd: string, args: string[]) =>
          spawnSync(cmd, [...args, '-conf', conf, '-dns.port', port], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
        const ref = run(COREDNS_BIN, []);
        const cand = run(process.execPath, [CLUSTERDNS_BIN]);
        const reason = (out: string) => /unable to parse (\S+) selector value: '([^']*)': (.*)$/m.exec(out)?.slice(1);
        expect(ref.status, `${option} ${value}: CoreDNS exit`).toBe(1);
        expect(cand.status, `${option} ${value}: clusterdns exit`).toBe(1);
        expect(
          reason(ref.stdout + ref.stderr),
          `${option} ${value}: CoreDNS said ${ref.stdout}${ref.stderr}`,
        ).toBeDefined();
        expect(reason(cand.stdout + cand.stderr), `${option} ${value}`).toEqual(reason(ref.stdout + ref.stderr));
        expect(cand.stdout + cand.stderr).toMatch(/Corefile:4\b/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
  for (const c of CASES) {
    it(c.id, async () => {
      expect(missing).toBeNull();
      const pair = await startPair({ corefile: c.corefile, cluster: c.cluster, files: c.files }, c.probe);
      try {
        const result = newResult(c.id);
        await runQueries(pair, result, c.queries, ['kubernetes']);
        assertResult(result, c.queries.length);
      } finally {
        await pair.stop();
      }
    }, 180_000);
  }
});
