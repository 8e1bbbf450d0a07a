/**
 * Differential: Corefiles with the small operational plugins — debug, cancel, timeouts, metadata,
 * pprof — against CoreDNS 1.15.0: both start, answer the same, and with `debug` write the same
 * `[DEBUG]` line for the hosts file.
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
  type Proc,
  type QuerySpec,
} from './harness.js';

const HOSTS = '192.0.2.1 a.example\n192.0.2.2 b.example c.example\n2001:db8::1 a.example\n';
const NAMES = [
  'a.example',
  'b.example',
  'c.example',
  'nosuch.example',
  'kubernetes.default.svc.cluster.local',
  'svc1.testns.svc.cluster.local',
  'nosuch.testns.svc.cluster.local',
  '1.2.0.192.in-addr.arpa',
];

interface Case {
  readonly id: string;
  readonly corefile: string;
  readonly queries: QuerySpec[];
  readonly debugLines: boolean;
}

const K8S = '  kubernetes cluster.local in-addr.arpa {\n    endpoint {{API}}\n    fallthrough in-addr.arpa\n  }\n';
const CASES: Case[] = [
  {
    id: 'ops-debug-hosts-kubernetes',
    corefile: `.:{{DNS}} {\n  debug\n  hosts {{DIR}}/hosts {\n    fallthrough\n  }\n${K8S}}\n`,
    queries: generate(NAMES, ['A', 'AAAA', 'PTR'], [{ proto: 'udp' }, { proto: 'tcp', edns: 1232, mixed: true }], 121),
    debugLines: true,
  },
  {
    id: 'ops-cancel-timeouts-metadata-pprof',
    corefile: `.:{{DNS}} {\n  metadata\n  cancel 2s\n  timeouts {\n    read 5s\n    idle 30s\n    write 5s\n    maxtcpqueries 100\n  }\n  pprof 127.0.0.1:{{METRICS}} {\n    block\n  }\n  hosts {{DIR}}/hosts {\n    fallthrough\n  }\n${K8S}}\n`,
    queries: generate(
      NAMES,
      ['A', 'SRV', 'MX'],
      [{ proto: 'udp' }, { proto: 'tcp' }, { proto: 'udp', edns: 4096, mixed: true }],
      122,
    ),
    debugLines: false,
  },
];

function debugLines(p: Proc): string[] {
  return p.output.filter((l) => l.startsWith('[DEBUG] plugin/hosts:')).sort();
}

describe('differential: debug, cancel, timeouts, metadata, pprof', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential ops plugins: ${t.compared} queries compared in ${t.cases} cases\n`);
  });
  for (const c of CASES) {
    it(c.id, async () => {
      expect(missing).toBeNull();
      const pair = await startPair(
        { corefile: c.corefile, cluster: ['examples/cluster.yaml'], files: { hosts: HOSTS } },
        { name: 'a.example', type: 'A' },
      );
      try {
        const result = newResult(c.id);
        await runQueries(pair, result, c.queries, ['hosts', 'kubernetes']);
        assertResult(result, c.queries.length);
        const ref = debugLines(pair.ref);
        expect(debugLines(pair.cand)).toEqual(ref);
        expect(ref.length > 0).toBe(c.debugLines);
      } finally {
        await pair.stop();
      }
    }, 180_000);
  }
});
