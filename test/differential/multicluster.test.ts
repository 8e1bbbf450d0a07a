/**
 * Differential: the kubernetes plugin's `multicluster` option (docs/records.md §8.4) against CoreDNS
 * 1.15.0 — ServiceImports of `multicluster.x-k8s.io/v1alpha1` and the EndpointSlices labelled
 * `multicluster.kubernetes.io/service-name` (fixtures/multicluster.yaml, beside examples/cluster.yaml)
 * served by the sandbox to both servers: ClusterSetIP A/AAAA, headless imports and their
 * per-endpoint names `<host>.<cluster>.<svc>.<ns>.svc.clusterset.local`, SRV, NXDOMAIN and NODATA,
 * the zone's SOA and NS, the cluster zone beside it unchanged; the options that shape the answers
 * (`ignore empty_service`, `endpoint_pod_names`, `namespaces`, `ttl`); an AXFR of the multicluster
 * zone; the start without the CRD; and the Corefile errors.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { recordText, type WireMessage } from '../../src/dnscompare/index.js';
import { startSandbox } from '../../sandbox/server.js';
import { freePort } from '../helpers/net.js';
import { waitFor } from '../helpers/wait.js';
import { axfrQuery, transferMessages } from './transfer-client.js';
import {
  assertResult,
  CLUSTERDNS_BIN,
  COREDNS_BIN,
  encode,
  exchange,
  generate,
  judge,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type Variant,
} from './harness.js';

const CLUSTER = ['examples/cluster.yaml', 'test/differential/fixtures/multicluster.yaml'];
const MC = 'clusterset.local';
const IMP = (s: string): string => `${s}.svc.${MC}`;

/** Every name shape of the multicluster zone, with names that do not exist. */
const MC_NAMES: readonly string[] = [
  // ClusterSetIP import: its IPs, its ports, endpoint names under it
  IMP('web.testns'),
  IMP('_http._tcp.web.testns'),
  IMP('_dns._udp.web.testns'),
  IMP('_raw._tcp.web.testns'),
  IMP('_http._udp.web.testns'),
  IMP('web-0.c1.web.testns'),
  IMP('10-1-0-6.c1.web.testns'),
  IMP('web-0.c2.web.testns'),
  IMP('web-0.web.testns'),
  // headless import: every ready endpoint of every cluster, and each by name
  IMP('db.testns'),
  IMP('_pg._tcp.db.testns'),
  IMP('_metrics._tcp.db.testns'),
  IMP('_pg._udp.db.testns'),
  IMP('db-0.c1.db.testns'),
  IMP('DB-0.C1.db.testns'),
  IMP('10-1-0-21.c1.db.testns'),
  IMP('db-2.c1.db.testns'),
  IMP('db-0.c2.db.testns'),
  IMP('fd00-2--20.c2.db.testns'),
  IMP('db-0.c3.db.testns'),
  IMP('db-0.c4.db.testns'),
  IMP('db-0.db.testns'),
  IMP('_pg.c1.db.testns'),
  IMP('x.db-0.c1.db.testns'),
  // imports without IPs, without ports, in kube-system and in a namespace that does not exist
  IMP('noips.testns'),
  IMP('_http._tcp.noips.testns'),
  IMP('noports.testns'),
  IMP('kube-dns.kube-system'),
  IMP('lost.ghostns'),
  // Services of cluster.local are not imports
  IMP('svc1.testns'),
  IMP('hl.testns'),
  IMP('nosuch.testns'),
  IMP('testns'),
  IMP('nosuch'),
  `svc.${MC}`,
  `pod.${MC}`,
  `10-244-1-10.testns.pod.${MC}`,
  MC,
  `ns.dns.${MC}`,
  `dns-version.${MC}`,
  `nosuch.${MC}`,
  // the cluster zone beside it, unchanged
  'svc1.testns.svc.cluster.local',
  'hl.testns.svc.cluster.local',
  'web.testns.svc.cluster.local',
  'db.testns.svc.cluster.local',
  'cluster.local',
];

const TYPES = ['A', 'AAAA', 'SRV', 'TXT', 'CNAME', 'SOA', 'NS', 'MX'];
const VARIANTS: readonly Variant[] = [
  { proto: 'udp' },
  { proto: 'udp', edns: 1232, mixed: true },
  { proto: 'tcp', edns: 4096 },
];

function corefile(options: string, zones = `cluster.local ${MC} in-addr.arpa`): string {
  return `.:{{DNS}} {\n  kubernetes ${zones} {\n    endpoint {{API}}\n${options}  }\n  transfer {\n    to *\n  }\n}\n`;
}

interface McCase {
  readonly id: string;
  readonly corefile: string;
  readonly probe: { name: string; type: string };
  readonly seed: number;
}

const CASES: McCase[] = [
  {
    id: 'multicluster',
    corefile: corefile(`    multicluster ${MC}\n`),
    probe: { name: IMP('web.testns'), type: 'A' },
    seed: 201,
  },
  {
    // Empty ClusterSetIP imports become NXDOMAIN; endpoints are named by their pods; one namespace.
    id: 'multicluster-options',
    corefile: corefile(
      `    multicluster ${MC}\n    ignore empty_service\n    endpoint_pod_names\n    namespaces testns\n    ttl 17\n    pods insecure\n`,
    ),
    probe: { name: IMP('web.testns'), type: 'A' },
    seed: 211,
  },
];

/** The records of a transfer in presentation form, sorted, the SOA serial set aside (it follows the clock). */
function recordSet(msgs: readonly WireMessage[]): string[] {
  const out: string[] = [];
  for (const m of msgs)
    for (const r of m.answer) out.push(recordText(r).replace(/^(.*\tSOA\t\S+ \S+ )\d+/, '$1SERIAL'));
  return out.sort();
}

describe('differential: kubernetes multicluster', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential kubernetes multicluster: ${t.compared} queries compared in ${t.cases} cases\n`);
  });

  for (const c of CASES) {
    it(c.id, async () => {
      expect(missing).toBeNull();
      const pair = await startPair({ corefile: c.corefile, cluster: CLUSTER }, c.probe);
      try {
        const queries = generate(MC_NAMES, TYPES, VARIANTS, c.seed);
        const result = newResult(c.id);
        await runQueries(pair, result, queries, ['kubernetes']);
        assertResult(result, queries.length);
        // The transfer of the multicluster zone: the same records (CoreDNS names endpoints
        // without their cluster there, and puts the cluster zone's serial in the SOA).
        const [ref, cand] = await Promise.all([
          transferMessages(pair.ref.dns, axfrQuery(`${MC}.`, 'AXFR')),
          transferMessages(pair.cand.dns, axfrQuery(`${MC}.`, 'AXFR')),
        ]);
        expect(recordSet(cand)).toEqual(recordSet(ref));
        expect(recordSet(ref).length).toBeGreaterThan(4);
      } finally {
        await pair.stop();
      }
    }, 180_000);
  }

  it('multicluster-updates: answers and the multicluster SOA serial follow changes', async () => {
    expect(missing).toBeNull();
    const pair = await startPair(
      { corefile: corefile(`    multicluster ${MC}\n`), cluster: CLUSTER },
      { name: IMP('web.testns'), type: 'A' },
    );
    try {
      const sb = pair.sandbox!;
      // An update of an import's ports and of a slice's endpoints (the multicluster serial moves),
      // a new import with its slice and a deleted one (the cluster zone's serial moves).
      sb.apply({
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ServiceImport',
        metadata: { name: 'web', namespace: 'testns' },
        spec: { type: 'ClusterSetIP', ips: ['10.42.0.20'], ports: [{ name: 'https', protocol: 'TCP', port: 443 }] },
      });
      sb.apply({
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ServiceImport',
        metadata: { name: 'cache', namespace: 'testns' },
        spec: { type: 'Headless', ports: [{ name: 'redis', protocol: 'TCP', port: 6379 }] },
      });
      sb.apply({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          name: 'imported-cache-c2',
          namespace: 'testns',
          labels: {
            'multicluster.kubernetes.io/service-name': 'cache',
            'multicluster.kubernetes.io/source-cluster': 'c2',
          },
        },
        addressType: 'IPv4',
        ports: [{ name: 'redis', protocol: 'TCP', port: 6379 }],
        endpoints: [{ addresses: ['10.2.0.40'], hostname: 'cache-0' }],
      });
      sb.remove('ServiceImport', 'testns', 'noips');
      const probe = encode({ name: IMP('_redis._tcp.cache.testns'), type: 'SRV', proto: 'udp', id: 7 });
      for (const port of [pair.ref.dns, pair.cand.dns])
        await waitFor(
          () => `port ${port} to answer the new import`,
          async () => {
            const r = await exchange(port, probe, 'udp', 1000);
            return r !== null && (r.readUInt16BE(2) & 0xf) === 0 && r.readUInt16BE(6) > 0;
          },
        );
      const queries = generate(
        [...MC_NAMES, IMP('cache.testns'), IMP('cache-0.c2.cache.testns'), IMP('_https._tcp.web.testns')],
        ['A', 'SRV', 'SOA'],
        [{ proto: 'udp' }],
        221,
      );
      const result = newResult('multicluster-updates');
      await runQueries(pair, result, queries, ['kubernetes']);
      assertResult(result, queries.length);
    } finally {
      await pair.stop();
    }
  }, 180_000);

  /**
   * Without the ServiceImport CRD the import watch never lists: neither server becomes ready, both
   * start after `startup_timeout` and answer NXDOMAIN as SERVFAIL (docs/records.md §6.4).
   */
  it('multicluster-without-crd', async () => {
    expect(missing).toBeNull();
    const sandbox = await startSandbox({
      files: CLUSTER.map((f) => join(import.meta.dirname, '../..', f)),
      serviceImports: false,
      log: () => undefined,
    });
    const dir = mkdtempSync(join(tmpdir(), 'diff-mc-nocrd-'));
    try {
      const queries = generate(
        [IMP('web.testns'), 'svc1.testns.svc.cluster.local', 'nosuch.testns.svc.cluster.local', MC],
        ['A', 'SOA'],
        [{ proto: 'udp' }],
        231,
      );
      // One server at a time against the same sandbox, each with its own start-up wait.
      const answers: Record<string, (Buffer | null)[]> = {};
      for (const [name, cmd, args] of [
        ['coredns', COREDNS_BIN, []],
        ['clusterdns', process.execPath, [CLUSTERDNS_BIN]],
      ] as const) {
        const port = await freePort();
        const conf = join(dir, `Corefile.${name}`);
        writeFileSync(
          conf,
          `.:${port} {\n  kubernetes cluster.local ${MC} {\n    endpoint ${sandbox.url}\n    multicluster ${MC}\n    startup_timeout 1s\n  }\n}\n`,
        );
        const proc = spawn(cmd, [...args, '-conf', conf], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        proc.stdout.on('data', (b: Buffer) => (output += b.toString()));
        proc.stderr.on('data', (b: Buffer) => (output += b.toString()));
        try {
          await waitFor(
            () => `${name} to start; output:\n${output}`,
            () => /^(CoreDNS|clusterdns)-\d/m.test(output),
          );
          answers[name] = [];
          for (const q of queries) answers[name]!.push(await exchange(port, encode(q), q.proto));
        } finally {
          proc.kill('SIGTERM');
          await new Promise((r) => proc.once('exit', r));
        }
        expect(output, name).toMatch(/starting server with unsynced Kubernetes API/);
      }
      const rcodes = (name: string) => answers[name]!.map((b) => (b === null ? 'none' : b.readUInt16BE(2) & 0xf));
      expect(rcodes('clusterdns')).toEqual(rcodes('coredns'));
      const result = newResult('multicluster-without-crd');
      queries.forEach((q, i) => judge(result, q, answers['coredns']![i]!, answers['clusterdns']![i]!, ['kubernetes']));
      assertResult(result, queries.length);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await sandbox.close();
    }
  }, 180_000);

  /** A multicluster zone the plugin is not authoritative for stops both servers at load. */
  it('multicluster-not-authoritative', () => {
    expect(missing).toBeNull();
    const dir = mkdtempSync(join(tmpdir(), 'diff-mc-conf-'));
    try {
      const conf = join(dir, 'Corefile');
      writeFileSync(
        conf,
        `.:1053 {\n  kubernetes cluster.local {\n    endpoint http://127.0.0.1:1\n    multicluster ${MC}\n  }\n}\n`,
      );
      const run = (cmd: string, args: string[]) =>
        spawnSync(cmd, [...args, '-conf', conf], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
      const ref = run(COREDNS_BIN, []);
      const cand = run(process.execPath, [CLUSTERDNS_BIN]);
      const reason = (out: string) => /is not authoritative for the multicluster zone .*$/m.exec(out)?.[0];
      expect(ref.status).toBe(1);
      expect(cand.status).toBe(1);
      expect(reason(ref.stdout + ref.stderr), ref.stdout + ref.stderr).toBeDefined();
      expect(reason(cand.stdout + cand.stderr)).toEqual(reason(ref.stdout + ref.stderr));
      expect(cand.stdout + cand.stderr).toMatch(/Corefile:4\b/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
