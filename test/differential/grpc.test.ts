/**
 * Differential: DNS over gRPC against CoreDNS 1.15.0. Each server runs a grpc:// block (its own
 * {{GRPC}} port) in front of the same template answers, and a plain block whose `grpc` plugin
 * forwards to a grpc:// server: its own (both sides end to end), or the other side's — CoreDNS's
 * grpc plugin queries clusterdns's grpc:// server and clusterdns's grpc plugin queries CoreDNS's.
 * Replies, the grpc plugin's metrics after the same traffic and the setup errors of bad
 * Corefiles are compared.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
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
  type CaseSetup,
  type QuerySpec,
} from './harness.js';

/** The answers behind the grpc:// listener, the same on both sides. */
const GRPC_BLOCK = `grpc://.:{{GRPC}} {
  prometheus 127.0.0.1:{{METRICS}}
  template IN ANY nx.test {
    rcode NXDOMAIN
    authority "nx.test. 60 IN SOA ns.nx.test. hostmaster.nx.test. (1 60 60 60 60)"
  }
  template IN A example.org {
    answer "{{ .Name }} 60 IN A 10.0.0.1"
    answer "{{ .Name }} 60 IN A 10.0.0.2"
  }
  template IN TXT example.org {
    answer "{{ .Name }} 60 IN TXT \\"over grpc\\""
  }
}
`;

function front(to: string, options = ''): string {
  return `.:{{DNS}} {
  prometheus 127.0.0.1:{{METRICS}}
  grpc . ${to}${options ? ` {\n${options}\n  }` : ''}
}
${GRPC_BLOCK}`;
}

const NAMES = ['example.org', 'www.example.org', 'nx.test', 'a.nx.test', 'skip.example.org', 'other.test'];
const TYPES = ['A', 'AAAA', 'TXT'];

interface Case {
  readonly id: string;
  readonly setup: CaseSetup;
  readonly queries: readonly QuerySpec[];
  /** Compare the coredns_grpc_* series after the queries. */
  readonly metrics?: boolean;
}

const CASES: Case[] = [
  {
    id: 'grpc plugin to its own grpc:// server',
    setup: { corefile: front('127.0.0.1:{{GRPC}}'), oneThread: true },
    queries: generate(NAMES, TYPES, undefined, 2801),
    metrics: true,
  },
  {
    id: "grpc plugin to the other server's grpc:// server",
    setup: { corefile: front('127.0.0.1:{{PEER_GRPC}}'), oneThread: true },
    queries: generate(NAMES, TYPES, undefined, 2802),
    metrics: true,
  },
  {
    id: 'except, fallthrough without a next plugin, round_robin over both servers',
    setup: {
      corefile: front(
        '127.0.0.1:{{GRPC}} 127.0.0.1:{{PEER_GRPC}}',
        '    except skip.example.org\n    fallthrough nx.test\n    policy round_robin',
      ),
    },
    queries: generate(NAMES, TYPES, undefined, 2803),
  },
  {
    id: 'an upstream that is down, then one that answers (sequential)',
    setup: { corefile: front('{{DEAD}} 127.0.0.1:{{GRPC}}', '    policy sequential'), oneThread: true },
    queries: generate(['example.org', 'nx.test'], ['A'], undefined, 2804),
  },
  {
    id: 'only an upstream that is down',
    setup: { corefile: front('{{DEAD}}') },
    queries: generate(['example.org'], ['A'], undefined, 2805),
  },
];

function get(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

/**
 * The coredns_grpc_* counters and histogram counts, labels sorted, ports dropped (the `to` port
 * and the `server` port differ between the sides); durations' buckets are left out (timing).
 */
async function grpcSeries(port: number): Promise<string[]> {
  const body = await get(port, '/metrics');
  return body
    .split('\n')
    .filter(
      (l) =>
        (l.startsWith('coredns_grpc_') && !l.includes('_bucket') && !l.includes('_sum')) ||
        (l.startsWith('coredns_dns_requests_total') && l.includes('grpc://')),
    )
    .map((l) => {
      const m = /^(\w+)\{(.*)\} (.*)$/.exec(l)!;
      const labels = [...m[2]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)]
        .map(([, k, v]) => `${k}=${k === 'server' || k === 'to' ? v!.replace(/:\d+$/, ':PORT') : v}`)
        .sort();
      return `${m[1]}{${labels.join(',')}} ${m[3]}`;
    })
    .sort();
}

describe('differential: grpc', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential grpc: ${t.compared} queries compared in ${t.cases} cases\n`);
  });
  for (const c of CASES) {
    it(c.id, async () => {
      expect(missing).toBeNull();
      const pair = await startPair(c.setup);
      try {
        const result = newResult(c.id);
        await runQueries(pair, result, c.queries, ['grpc', 'template']);
        assertResult(result, c.queries.length);
        if (c.metrics) {
          const [ref, cand] = await Promise.all([grpcSeries(pair.ref.metrics), grpcSeries(pair.cand.metrics)]);
          expect(ref.some((l) => l.startsWith('coredns_grpc_requests_total'))).toBe(true);
          expect(cand).toEqual(ref);
        }
      } finally {
        await pair.stop();
      }
    }, 180_000);
  }

  // Setup errors: the same first line from both (file:line and CoreDNS's wording).
  const BAD: string[] = [
    'grpc',
    'grpc .',
    'grpc . 127.0.0.1:9005 {\n  policy bogus\n}',
    'grpc . 127.0.0.1:9005 {\n  policy\n}',
    'grpc . 127.0.0.1:9005 {\n  tls a b c d\n}',
    'grpc . 127.0.0.1:9005 {\n  tls_servername\n}',
    'grpc . 127.0.0.1:9005 {\n  except\n}',
    'grpc . 127.0.0.1:9005 {\n  nope\n}',
    'grpc . /nonexistent/resolv.conf',
    'grpc . 127.0.0.1\n  grpc . 127.0.0.2',
    `grpc . ${Array.from({ length: 16 }, (_, i) => `10.0.0.${i + 1}`).join(' ')}`,
    'grpc_server extra',
    'grpc_server {\n  max_streams x\n}',
    'grpc_server {\n  max_streams -1\n}',
    'grpc_server {\n  max_connections 1 2\n}',
    'grpc_server {\n  max_connections\n}',
    'grpc_server {\n  max_streams 1\n  max_streams 2\n}',
    'grpc_server {\n  bogus 1\n}',
  ];
  // Each line starts both binaries once: on a loaded machine clusterdns's start is the slow part.
  it('rejects bad Corefiles as CoreDNS does', () => {
    expect(missing).toBeNull();
    const dir = mkdtempSync(join(tmpdir(), 'grpc-bad-'));
    const firstError = (bin: 'coredns' | 'clusterdns', file: string): string => {
      const r =
        bin === 'coredns'
          ? spawnSync(COREDNS_BIN, ['-conf', file, '-dns.port', '0'], { encoding: 'utf8', timeout: 20000 })
          : spawnSync(process.execPath, [CLUSTERDNS_BIN, '-conf', file, '-dns.port', '0'], {
              encoding: 'utf8',
              timeout: 20000,
            });
      expect(r.status).not.toBe(0);
      return (
        `${r.stdout}${r.stderr}`.split('\n').find((l) => l.includes('plugin/grpc')) ??
        `(no plugin/grpc line in: ${r.stdout}${r.stderr})`
      );
    };
    const diffs: string[] = [];
    BAD.forEach((body, i) => {
      const file = join(dir, `bad${i}.conf`);
      writeFileSync(file, `grpc://.:0 {\n  ${body}\n}\n`);
      const ref = firstError('coredns', file);
      const cand = firstError('clusterdns', file);
      if (ref !== cand) diffs.push(`${JSON.stringify(body)}\n  CoreDNS:    ${ref}\n  clusterdns: ${cand}`);
    });
    expect(diffs).toEqual([]);
  }, 300_000);
});
