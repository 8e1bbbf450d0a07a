/**
 * Differential: the rewrite plugin against CoreDNS 1.15.0 — Corefiles as clusters customise them
 * (a company domain mapped onto services with `answer auto`, the explicit `stop { name … answer
 * name … }` form, exact and suffix aliases, EDNS0 options, TTL clamps, RCODE rewrites, CNAME target
 * rewrites through a scripted upstream), the same queries to both servers; and the setup errors
 * of bad rules, word for word.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { TestUpstream } from '../helpers/upstream.js';
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
} from './harness.js';

const CLUSTER = ['examples/cluster.yaml'];
const PROBE = { name: 'kubernetes.default.svc.cluster.local', type: 'A' };

/** kubeadm's Corefile (the parts that answer), with `rules` in front of kubernetes. */
function kubeadm(rules: string, extra = ''): string {
  return `.:{{DNS}} {
  errors
${rules}
  kubernetes cluster.local in-addr.arpa ip6.arpa {
    endpoint {{API}}
    pods insecure
    fallthrough in-addr.arpa ip6.arpa
    ttl 30
  }
  forward . {{UPSTREAM}}
${extra}  loop
}
`;
}

const VARIANTS = [
  { proto: 'udp' as const },
  { proto: 'udp' as const, edns: 1232 },
  { proto: 'tcp' as const, edns: 4096, mixed: true },
  { proto: 'udp' as const, mixed: true },
];

/** Names under example.com that map onto every record form of the fixture's testns namespace. */
const EXAMPLE = [
  'svc1',
  'svc2',
  'hl',
  'dual',
  'ext',
  'nosuch',
  '_http._tcp.svc1',
  '_http._tcp.hl',
  'web-0.hl',
  '10-244-1-21.hl',
].map((n) => `${n}.example.com`);
/** Names no rule matches: the plain kubernetes and forward paths. */
const UNTOUCHED = [
  'svc1.testns.svc.cluster.local',
  'kubernetes.default.svc.cluster.local',
  'nosuch.testns.svc.cluster.local',
  'www.example.org',
  '10.0.96.10.in-addr.arpa',
];

function upstream(u: TestUpstream): void {
  u.on('www.example.org', { answers: [{ name: 'www.example.org', type: 'A', ttl: 300, data: '192.0.2.80' }] });
  u.on('app.example.net', {
    answers: [
      { name: 'app.example.net', type: 'CNAME', ttl: 200, data: 'app.cdn.example.net' },
      { name: 'app.cdn.example.net', type: 'A', ttl: 300, data: '192.0.2.1' },
    ],
  });
  u.on('deep.example.net', {
    answers: [
      { name: 'deep.example.net', type: 'CNAME', ttl: 200, data: 'mid.example.net' },
      { name: 'mid.example.net', type: 'CNAME', ttl: 200, data: 'deep.cdn.example.net' },
      { name: 'deep.cdn.example.net', type: 'A', ttl: 300, data: '192.0.2.2' },
    ],
  });
  u.on('app.other.cdn.com', { answers: [{ name: 'app.other.cdn.com', type: 'A', ttl: 100, data: '198.51.100.1' }] });
  u.on('deep.other.cdn.com', { answers: [{ name: 'deep.other.cdn.com', type: 'A', ttl: 100, data: '198.51.100.2' }] });
  u.on('loop.example.net', {
    answers: [{ name: 'loop.example.net', type: 'CNAME', ttl: 60, data: 'loop.cdn.example.net' }],
  });
  u.on('loop.other.cdn.com', {
    answers: [{ name: 'loop.other.cdn.com', type: 'CNAME', ttl: 60, data: 'loop.cdn.example.net' }],
  });
  u.on('servfail.example.net', { rcode: 2 });
  u.on('svc.example.net', {
    answers: [
      { name: 'svc.example.net', type: 'CNAME', ttl: 120, data: 'target.cdn.example.net' },
      { name: 'target.cdn.example.net', type: 'A', ttl: 120, data: '192.0.2.9' },
    ],
  });
}

interface RCase {
  readonly id: string;
  readonly corefile: string;
  readonly queries: QuerySpec[];
  readonly plugins?: string[];
}

const CASES: RCase[] = [
  {
    id: 'rewrite-regex-answer-auto',
    corefile: kubeadm('  rewrite name regex (.*)\\.example\\.com {1}.testns.svc.cluster.local answer auto'),
    queries: [
      ...generate(EXAMPLE, ['A', 'AAAA', 'SRV', 'CNAME'], VARIANTS, 101),
      ...generate(UNTOUCHED, ['A', 'PTR'], VARIANTS.slice(0, 2), 102),
    ],
  },
  {
    // The cache sits below rewrite: it stores the rewritten name's reply, the client still gets its
    // own name back. (Lower-case queries only: CoreDNS's cache replays the letter case of the
    // query that filled it, which is the cache's behaviour, not rewrite's.)
    id: 'rewrite-before-cache',
    corefile: kubeadm(
      '  rewrite name regex (.*)\\.example\\.com {1}.testns.svc.cluster.local answer auto',
      '  cache 30\n',
    ),
    queries: [
      ...generate(
        ['svc1', 'hl', '_http._tcp.svc1', 'nosuch', 'web-0.hl'].map((n) => `${n}.example.com`),
        ['A', 'SRV'],
        [{ proto: 'udp' }, { proto: 'udp', edns: 1232 }, { proto: 'tcp' }],
        151,
      ),
    ],
    plugins: ['kubernetes', 'forward', 'cache', 'rewrite'],
  },
  {
    id: 'rewrite-stop-answer-name',
    corefile: kubeadm(`  rewrite stop {
    name regex (.*)\\.corp\\.internal {1}.testns.svc.cluster.local
    answer name (.*)\\.testns\\.svc\\.cluster\\.local {1}.corp.internal
    answer value (.*)\\.testns\\.svc\\.cluster\\.local {1}.corp.internal
  }`),
    queries: generate(
      ['svc1', 'hl', 'ext', 'nosuch', '_http._tcp.svc1', 'web-0.hl'].map((n) => `${n}.corp.internal`),
      ['A', 'SRV', 'TXT'],
      VARIANTS,
      201,
    ),
  },
  {
    id: 'rewrite-exact-suffix-prefix-substring',
    corefile: kubeadm(`  rewrite name exact a.example.com svc1.testns.svc.cluster.local
  rewrite name suffix .corp.example. .testns.svc.cluster.local. answer auto
  rewrite name prefix legacy- svc
  rewrite continue name substring .old-ns. .testns.
  rewrite name exact api.internal kubernetes.default.svc.cluster.local`),
    queries: generate(
      [
        'a.example.com',
        'svc2.corp.example',
        'hl.corp.example',
        '_http._tcp.svc1.corp.example',
        'legacy-1.testns.svc.cluster.local',
        'svc1.old-ns.svc.cluster.local',
        'api.internal',
        'b.example.com',
        ...UNTOUCHED.slice(0, 2),
      ],
      ['A', 'SRV', 'AAAA'],
      VARIANTS,
      301,
    ),
  },
  {
    // A rewrite that yields no valid name: SERVFAIL, the client's question kept.
    id: 'rewrite-invalid-name',
    corefile: kubeadm('  rewrite name regex (.*)\\.bad\\.example {1}{1}{1}{1}{1}.testns.svc.cluster.local'),
    queries: generate(['abcdefghijklmnop.bad.example', 'svc1.bad.example', 'x.y.bad.example'], ['A'], VARIANTS, 381),
  },
  {
    id: 'rewrite-edns0',
    corefile: kubeadm(`  rewrite continue {
    edns0 local set 0xffee hello
  }
  rewrite continue {
    edns0 local append 65501 0x61626364
  }
  rewrite continue {
    edns0 subnet set 24 56
  }
  rewrite continue {
    edns0 local set 0xfff0 {client_ip}
  }
  rewrite continue {
    edns0 local set 0xfff1 {qname}
  }
  rewrite continue {
    edns0 local append 0xfff2 {qtype}
  }
  rewrite continue {
    edns0 local set 0xfff3 {protocol}
  }
  rewrite edns0 nsid append`),
    queries: [
      ...generate(
        ['svc1.testns.svc.cluster.local', 'nosuch.testns.svc.cluster.local', 'www.example.org'],
        ['A', 'AAAA'],
        [...VARIANTS, { proto: 'udp', edns: 512, do: true }],
        401,
      ),
      {
        name: 'svc1.testns.svc.cluster.local',
        type: 'A',
        proto: 'udp',
        id: 4242,
        edns: 1232,
        options: [{ code: 0xffee, data: Buffer.from('client') }],
      },
      {
        name: 'svc1.testns.svc.cluster.local',
        type: 'A',
        proto: 'udp',
        id: 4243,
        edns: 1232,
        options: [{ code: 65501, data: Buffer.from('x') }],
      },
    ],
  },
  {
    // Only continue rules and no response rule: CoreDNS hands the reply on as it is (rewritten
    // question and all) and the server copies the rewritten query's OPT into it.
    id: 'rewrite-edns0-continue-only',
    corefile: kubeadm(`  rewrite continue {
    edns0 local set 0xffee hello
  }`),
    queries: generate(
      ['svc1.testns.svc.cluster.local', 'nosuch.testns.svc.cluster.local', 'www.example.org'],
      ['A'],
      VARIANTS,
      431,
    ),
  },
  {
    id: 'rewrite-edns0-revert',
    corefile: kubeadm(`  rewrite continue {
    edns0 local set 0xffee abcd
  }
  rewrite edns0 local replace 0xffee bcde revert`),
    queries: [
      ...generate(['svc1.testns.svc.cluster.local', 'www.example.org'], ['A'], VARIANTS, 451),
      {
        name: 'svc1.testns.svc.cluster.local',
        type: 'A',
        proto: 'udp',
        id: 4501,
        edns: 1232,
        options: [{ code: 0xffee, data: Buffer.from('mine') }],
      },
    ],
  },
  {
    id: 'rewrite-ttl',
    corefile: kubeadm(`  rewrite continue {
    ttl regex (.*)\\.testns\\.svc\\.cluster\\.local 10-20
  }
  rewrite ttl exact www.example.org. 3600
  rewrite ttl suffix .default.svc.cluster.local 5-
  rewrite ttl svc1.testns.svc.cluster.local -15`),
    queries: generate(
      [
        'svc1.testns.svc.cluster.local',
        'hl.testns.svc.cluster.local',
        '_http._tcp.svc1.testns.svc.cluster.local',
        'nosuch.testns.svc.cluster.local',
        'kubernetes.default.svc.cluster.local',
        'www.example.org',
        'svc1.default.svc.cluster.local',
      ],
      ['A', 'SRV'],
      VARIANTS,
      501,
    ),
  },
  {
    id: 'rewrite-rcode',
    corefile: kubeadm(`  rewrite continue {
    rcode regex (.*)\\.nosuchns\\.svc\\.cluster\\.local NXDOMAIN NOERROR
  }
  rewrite rcode exact servfail.example.net SERVFAIL NXDOMAIN
  rewrite rcode suffix .testns.svc.cluster.local 3 5`),
    queries: generate(
      [
        'svc1.nosuchns.svc.cluster.local',
        'nosuch.testns.svc.cluster.local',
        'svc1.testns.svc.cluster.local',
        'servfail.example.net',
        'nx.example.org',
      ],
      ['A', 'AAAA'],
      VARIANTS,
      601,
    ),
  },
  {
    id: 'rewrite-type-class',
    corefile: kubeadm(`  rewrite type ANY A
  rewrite continue {
    type AAAA A
  }`),
    queries: generate(
      ['svc1.testns.svc.cluster.local', 'dual.testns.svc.cluster.local', 'www.example.org'],
      ['ANY', 'AAAA', 'A'],
      VARIANTS,
      701,
    ),
  },
  {
    id: 'rewrite-cname',
    corefile: kubeadm(`  rewrite cname exact app.cdn.example.net. app.other.cdn.com.
  rewrite cname regex (.*)\\.cdn\\.example\\.net\\. {1}.other.cdn.com.`),
    queries: generate(
      ['app.example.net', 'deep.example.net', 'loop.example.net', 'www.example.org', 'svc1.testns.svc.cluster.local'],
      ['A'],
      VARIANTS,
      801,
    ),
  },
  {
    // Several cname rules (continue): each CNAME record meets them in reverse rule order; one
    // sends a CDN name to a cluster service.
    id: 'rewrite-cname-continue-to-service',
    corefile: kubeadm(`  rewrite continue {
    cname exact target.cdn.example.net. svc1.testns.svc.cluster.local.
  }
  rewrite continue {
    cname suffix .cdn.example.net. .other.cdn.com.
  }
  rewrite name exact alias.example.com app.example.net`),
    queries: generate(
      ['app.example.net', 'deep.example.net', 'svc.example.net', 'alias.example.com', 'www.example.org'],
      ['A', 'AAAA'],
      VARIANTS,
      851,
    ),
  },
];

describe('differential: rewrite', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential rewrite: ${t.compared} queries compared in ${t.cases} cases\n`);
  });
  for (const c of CASES) {
    it(c.id, async () => {
      expect(missing).toBeNull();
      const pair = await startPair({ corefile: c.corefile, cluster: CLUSTER, upstream }, PROBE);
      try {
        const result = newResult(c.id);
        await runQueries(pair, result, c.queries, c.plugins ?? ['kubernetes', 'forward', 'rewrite']);
        assertResult(result, c.queries.length);
      } finally {
        await pair.stop();
      }
    }, 180_000);
  }

  it('setup errors: the same message for every bad rule', () => {
    expect(missing).toBeNull();
    const dir = mkdtempSync(join(tmpdir(), 'diff-rewrite-'));
    const bad = [
      'rewrite',
      'rewrite foo a b',
      'rewrite stop foo a b',
      'rewrite continue',
      'rewrite answer name a b',
      'rewrite name a',
      'rewrite name glob a b',
      'rewrite name regex (.*\\.example {1}',
      'rewrite name regex (a)\\.x {1}.{2}.y',
      'rewrite name regex (.*) {1} answer',
      'rewrite name regex (.*) {1} answer frob a b',
      'rewrite name regex (.*) {1} answer auto answer name a b',
      'rewrite name regex (.*) {1} extra',
      'rewrite name exact a b metadata',
      'rewrite type A',
      'rewrite type A NOPE',
      'rewrite class IN XX',
      'rewrite ttl a.example.com 30-10',
      'rewrite ttl a.example.com -',
      'rewrite ttl a.example.com abc',
      'rewrite ttl glob a.example.com 10',
      'rewrite ttl regex (.* 10',
      'rewrite ttl a',
      'rewrite ttl exact a 1 2',
      'rewrite rcode a.example.com NOPE NOERROR',
      'rewrite rcode a.example.com SERVFAIL 99',
      'rewrite rcode a SERVFAIL',
      'rewrite edns0 local',
      'rewrite edns0 local frob 0xffee a',
      'rewrite edns0 local set 0xffee',
      'rewrite edns0 local set zz a',
      'rewrite edns0 local set 0x1ffff a',
      'rewrite edns0 local set 0xffee 0xzz',
      'rewrite edns0 local set 0xffee {nope}',
      'rewrite edns0 local unset',
      'rewrite edns0 nsid set extra',
      'rewrite edns0 subnet set 33 56',
      'rewrite edns0 subnet set 24 129',
      'rewrite edns0 subnet unset 1',
      'rewrite edns0 frob set',
      'rewrite cname a',
      'rewrite cname glob a b',
      'rewrite cname regex (a b',
      'rewrite stop {\n    name regex (.*)\\.a {1}.b\n    answer name (.*)\\.b\n  }',
    ];
    const messages = (bin: 'coredns' | 'clusterdns', rule: string): { status: number | null; message: string } => {
      const file = join(dir, `Corefile.${bin}`);
      writeFileSync(file, `.:0 {\n  ${rule}\n  whoami\n}\n`);
      const r =
        bin === 'coredns'
          ? spawnSync(COREDNS_BIN, ['-conf', file, '-dns.port', '0'], { encoding: 'utf8', timeout: 30000, cwd: dir })
          : spawnSync(process.execPath, [CLUSTERDNS_BIN, '-conf', file, '-dns.port', '0'], {
              encoding: 'utf8',
              timeout: 30000,
              cwd: dir,
            });
      const line = /plugin\/rewrite: .*/.exec(`${r.stdout}${r.stderr}`)?.[0] ?? `${r.stdout}${r.stderr}`;
      // CoreDNS names no location for plugin errors; clusterdns adds `FILE:LINE - Error during parsing: `.
      return {
        status: r.status,
        message: line.replace(/^plugin\/rewrite: \S+:\d+ - Error during parsing: /, 'plugin/rewrite: '),
      };
    };
    const diffs: string[] = [];
    for (const rule of bad) {
      const ref = messages('coredns', rule);
      const cand = messages('clusterdns', rule);
      if (JSON.stringify(ref) !== JSON.stringify(cand))
        diffs.push(`${rule}\n  CoreDNS:    ${JSON.stringify(ref)}\n  clusterdns: ${JSON.stringify(cand)}`);
    }
    expect(diffs.join('\n')).toBe('');
  }, 300_000);
});
