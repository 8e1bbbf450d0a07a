/**
 * Differential: metadata against CoreDNS 1.15.0 — the replies, and the log lines the labels of the
 * kubernetes plugin produce through `{/LABEL}` (client pod labels with `pods verified`: the
 * fixture gets a pod with the test client's address 127.0.0.1).
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
import { waitFor } from '../helpers/wait.js';

const CLUSTER = ['examples/cluster.yaml'];
const CLIENT_POD = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'dig-client', namespace: 'testns' },
  spec: { containers: [{ name: 'c', image: 'x' }] },
  status: { phase: 'Running', podIP: '127.0.0.1', podIPs: [{ ip: '127.0.0.1' }] },
};
const FORMAT =
  '"META {name} {type} {rcode} k={/kubernetes/kind} ns={/kubernetes/namespace} svc={/kubernetes/service} proto={/kubernetes/protocol} port={/kubernetes/port-name} ep={/kubernetes/endpoint} err={/kubernetes/parse-error} cns={/kubernetes/client-namespace} cpod={/kubernetes/client-pod-name} x={/none/such}"';

const NAMES = [
  'kubernetes.default.svc.cluster.local',
  'svc1.testns.svc.cluster.local',
  '_http._tcp.svc1.testns.svc.cluster.local',
  'web-0.hl.testns.svc.cluster.local',
  'a.b.c.d.e.svc.cluster.local',
  '10-244-2-7.testns.pod.cluster.local',
  'testns.svc.cluster.local',
  'svc.cluster.local',
  'cluster.local',
  'bad.zone.cluster.local',
  'example.org',
  'lb.testns.example.org',
];

function corefile(meta: string, k8s: string): string {
  return `.:{{DNS}} {\n${meta}  log . ${FORMAT}\n  kubernetes cluster.local {\n    endpoint {{API}}\n${k8s}  }\n  whoami\n}\n`;
}

interface Case {
  readonly id: string;
  readonly corefile: string;
  readonly queries: QuerySpec[];
}

/** template's `.Meta` reads the labels the metadata plugin collected (kubernetes' provider). */
const TEMPLATE_META = `.:{{DNS}} {
  metadata
  template IN TXT cluster.local {
    answer "{{ .Name }} 60 IN TXT \\"kind={{ .Meta \\"kubernetes/kind\\" }} ns={{ .Meta \\"kubernetes/namespace\\" }} svc={{ .Meta \\"kubernetes/service\\" }} none={{ .Meta \\"none/such\\" }}\\""
  }
  kubernetes cluster.local {
    endpoint {{API}}
  }
  whoami
}
`;

const CASES: Case[] = [
  {
    id: 'metadata-kubernetes-labels',
    corefile: corefile('  metadata\n', '    pods verified\n'),
    queries: generate(NAMES, ['A', 'SRV'], [{ proto: 'udp' }, { proto: 'tcp' }], 111),
  },
  {
    id: 'metadata-zones',
    corefile: corefile('  metadata svc.cluster.local example.org\n', '    pods insecure\n'),
    queries: generate(NAMES, ['A'], [{ proto: 'udp' }], 112),
  },
  { id: 'metadata-template-meta', corefile: TEMPLATE_META, queries: generate(NAMES, ['TXT'], [{ proto: 'udp' }], 114) },
  {
    id: 'metadata-absent',
    corefile: corefile('', '    pods verified\n'),
    queries: generate(NAMES, ['A'], [{ proto: 'udp' }], 113),
  },
];

/** The `META …` log lines of a server (the text after the level tag), sorted. */
async function metaLines(p: Proc, count: number): Promise<string[]> {
  const pick = (): string[] =>
    p.output
      .filter((l) => l.includes('META '))
      .map((l) => l.slice(l.indexOf('META ')))
      .sort();
  await waitFor(`${count} META lines from ${p.name}`, () => pick().length >= count);
  return pick();
}

describe('differential: metadata', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential metadata: ${t.compared} queries compared in ${t.cases} cases\n`);
  });
  for (const c of CASES) {
    it(c.id, async () => {
      expect(missing).toBeNull();
      const pair = await startPair(
        { corefile: c.corefile, cluster: CLUSTER, objects: [CLIENT_POD] },
        { name: 'kubernetes.default.svc.cluster.local', type: 'A' },
      );
      try {
        const result = newResult(c.id);
        // The probe's own log lines are left out of the comparison below.
        const skip = [await metaLines(pair.ref, 0), await metaLines(pair.cand, 0)];
        await runQueries(pair, result, c.queries, ['kubernetes', 'whoami', 'metadata', 'log']);
        assertResult(result, c.queries.length);
        if (!c.corefile.includes('  log ')) return; // a case without the log plugin compares replies only
        const ref = (await metaLines(pair.ref, skip[0]!.length + c.queries.length)).filter(
          (l) => !l.startsWith('META kubernetes.default.svc.cluster.local. A'),
        );
        const cand = (await metaLines(pair.cand, skip[1]!.length + c.queries.length)).filter(
          (l) => !l.startsWith('META kubernetes.default.svc.cluster.local. A'),
        );
        expect(cand).toEqual(ref);
        expect(ref.length).toBeGreaterThan(c.queries.length / 2);
      } finally {
        await pair.stop();
      }
    }, 180_000);
  }
});
