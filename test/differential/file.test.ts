/**
 * Differential: the file plugin against CoreDNS 1.15.0 — realistic zones with `$ORIGIN`, `$TTL`,
 * `$INCLUDE` (with and without a new origin), parentheses and comments, every common record type,
 * the RFC 3597 generic form, wildcards (and an empty non-terminal that blocks one), a delegation
 * with glue and DS, CNAME chains inside a zone and into a second zone, DNAME, CNAME loops, DNSSEC
 * records served as stored (DO and not), NXDOMAIN/NODATA; one file serving several zones; CNAMEs
 * into cluster.local answered by kubernetes (target records and the zone's NS as authority).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decode } from '../../src/dns/message.js';
import { a, TestUpstream } from '../helpers/upstream.js';
import {
  assertResult,
  CLUSTERDNS_BIN,
  COREDNS_BIN,
  encode,
  exchange,
  generate,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type QuerySpec,
} from './harness.js';
import { waitFor } from '../helpers/wait.js';

const SIG = 'oJB1W6WNGv+ldvQ3WDG0MQkg5IEhjRip8WTrPYGv07h108dUKGMeDPKijVCHX3DDKdfb+v6oB9wfuh3DTJXUAfI=';
const KEY =
  'AwEAAcNEU67LJI5GEgF9QLNqLO1SMq1EdoQ6E9f85ha0k0ewQGCblyW2836GiVsm6k8Kr5ECIoMJ6fZWf3CQSQ9ycWfTyOHfmI3eQ/1Covhb2y4bAmL/07PhrL7ozWBW3wBfM335Ft9xjtXHPy7ztCbV9qZ4TVDTW/Iyg0PiwgoXVesz';
const DIGEST = '2BB183AF5F22588179A53B0A98631FAD1A292118D6E7B0E2E1DFD4F7C8A5A7B5';

export const DB_EXAMPLE_ORG = `; example.org, as an operator would write it
$ORIGIN example.org.
$TTL 3600
@   IN SOA ns1.example.org. hostmaster.example.org. (
        2024010101 ; serial
        7200       ; refresh
        3600       ; retry
        1209600    ; expire
        300 )      ; minimum
    IN NS ns1
    IN NS ns2.example.org.
    IN NS ns.external.net.
    IN MX 10 mail
    IN MX 20 Mail2.Example.ORG.
    IN TXT "v=spf1 mx -all"
    IN CAA 0 issue "letsencrypt.org"
    IN A 192.0.2.1
    DNSKEY 257 3 13 ${KEY}
@   RRSIG SOA 13 2 3600 20300101000000 20240101000000 12345 example.org. ${SIG}
@   RRSIG NS 13 2 3600 20300101000000 20240101000000 12345 example.org. ${SIG}
@   RRSIG A 13 2 3600 20300101000000 20240101000000 12345 example.org. ${SIG}
@   NSEC a.b.ent.example.org. A NS SOA MX TXT RRSIG NSEC DNSKEY CAA
ns1 IN A 192.0.2.53
ns2 300 IN AAAA 2001:db8::53
    IN A 192.0.2.54
mail IN A 192.0.2.25
mail IN AAAA 2001:db8::25
mail2 IN A 192.0.2.26
www IN CNAME web
www RRSIG CNAME 13 3 3600 20300101000000 20240101000000 12345 example.org. ${SIG}
web 60 A 192.0.2.80
web A 192.0.2.81
web AAAA 2001:db8::80
web RRSIG A 13 3 60 20300101000000 20240101000000 12345 example.org. ${SIG}
web NSEC www.example.org. A AAAA RRSIG NSEC
chain1 CNAME chain2
chain2 CNAME chain3.example.org.
chain3 CNAME WWW
ext CNAME www.example.net.
ext2 CNAME nosuch.example.net.
outside CNAME www.not-served.test.
dangling CNAME nosuch
loop CNAME loop
loopa CNAME loopb
loopb CNAME loopa
txt TXT "first string" "second; with semicolon" "escaped \\"quote\\" and \\\\ backslash" unquoted
txt TXT "bytes \\255\\001\\032" ""
long TXT "${'x'.repeat(300)}"
_sip._tcp SRV 10 60 5060 sipserver
_sip._tcp SRV 20 0 5060 SipServer.example.org.
sipserver A 192.0.2.60
_ldap._tcp SRV 0 0 389 ldap.external.net.
*.wild A 192.0.2.100
*.wild TXT "wildcard"
*.wild RRSIG A 13 3 3600 20300101000000 20240101000000 12345 example.org. ${SIG}
sub.wild A 192.0.2.101     ; an exact name beats the wildcard
a.b.ent A 192.0.2.110
a.b.ent NSEC b.ent.example.org. A RRSIG NSEC
*.ent A 192.0.2.111
*.cnamewild CNAME web
host.ptr PTR web.example.org.
generic TYPE65280 \\# 4 0A000001
generic2 A \\# 4 C0000263
hinfo HINFO "PC-Intel-700mhz" "Linux"
sshfp SSHFP 4 2 ${DIGEST}
naptr NAPTR 100 10 "S" "SIP+D2U" "" _sip._udp.example.org.
tlsa TLSA 3 1 1 ${DIGEST}
svc HTTPS 1 Web alpn=h2,h3 port=8443 ipv4hint=192.0.2.80,192.0.2.81 ipv6hint=2001:db8::80 ech=AEX+DQBB
svc HTTPS 2 . alpn="h2" no-default-alpn mandatory=alpn,port port="443"
svc SVCB 0 web.example.org.
svc2 SVCB 1 . key65000="a\\032b" dohpath=/dns-query{?dns} ohttp
svc3 HTTPS 1 ext.example.net.
; a delegation with glue inside and outside the child zone
sub NS ns1.sub
sub NS ns2.sub.example.org.
sub NS ns.other.net.
sub DS 12345 13 2 ${DIGEST}
sub RRSIG DS 13 3 3600 20300101000000 20240101000000 12345 example.org. ${SIG}
ns1.sub A 192.0.2.201
ns2.sub AAAA 2001:db8::201
intosub CNAME host.sub
dname DNAME example.net.
dname2 DNAME web.example.org.
$GENERATE 1-4 dhcp-\${10,3} A 10.2.0.$
$GENERATE 10-14/2 \${0,2,x}.rev 300 PTR host$.example.org.
$INCLUDE db.hosts
$INCLUDE db.lab lab.example.org.
after-include A 192.0.2.250
`;

export const DB_HOSTS = `; included with the current origin and TTL
h1 A 10.0.0.1
h2 A 10.0.0.2
   AAAA fd00::2
`;

export const DB_LAB = `; included with its own origin
@ 120 A 10.1.0.1
node1 A 10.1.0.11
node2 CNAME node1
`;

export const DB_EXAMPLE_NET = `$TTL 1h
example.net. IN SOA ns.example.net. admin.example.net. 7 1h 15m 1w 1h
example.net. IN NS ns.example.net.
ns A 198.51.100.53
www A 198.51.100.80
cname-back CNAME web.example.org.
`;

/** Odd corners: apex wildcard, escaped names, duplicates, records outside the zone, many records, upper case. */
export const DB_EDGE = `$ORIGIN Edge.Test.
@ 300 IN SOA NS1.Edge.Test. Host\\.Master.edge.test. 99 3600 600 86400 60
@ 300 IN NS ns1
NS1 300 A 192.0.2.1
* 300 A 192.0.2.2
* 300 MX 5 NS1
has\\046dot 300 A 192.0.2.3
sp\\032ace 300 TXT "caf\\195\\169" "tab\\009"
dup 300 A 192.0.2.4
dup 300 A 192.0.2.4
outside.example. 300 A 192.0.2.5
${Array.from({ length: 40 }, (_, i) => `many 300 A 10.9.0.${i + 1}`).join('\n')}
UPPER 300 CNAME Lower
lower 300 AAAA 2001:DB8::1
_svc._tcp 300 SRV 1 1 443 Target.Edge.Test.
target 300 A 192.0.2.6
$ORIGIN edge.test.
_low._tcp 300 SRV 1 1 443 target
x.y.z 300 A 192.0.2.7
*.z 300 TXT "wild z"
cw 300 CNAME nothere.y.z
wcn 300 CNAME foo.z
`;

/** One file for several zones: relative names only, so each zone is its own origin. */
export const DB_SHARED = `@ 3600 IN SOA ns hostmaster 1 7200 3600 1209600 300
@ 3600 IN NS ns
ns 3600 IN A 192.0.2.53
www 3600 IN A 192.0.2.80
*.apps 600 IN CNAME www
`;

const ORG = [
  'example.org',
  'ns1.example.org',
  'ns2.example.org',
  'mail.example.org',
  'mail2.example.org',
  'www.example.org',
  'web.example.org',
  'chain1.example.org',
  'chain2.example.org',
  'ext.example.org',
  'ext2.example.org',
  'outside.example.org',
  'dangling.example.org',
  'loop.example.org',
  'loopa.example.org',
  'txt.example.org',
  'long.example.org',
  '_sip._tcp.example.org',
  '_ldap._tcp.example.org',
  'x.wild.example.org',
  'a.b.wild.example.org',
  'sub.wild.example.org',
  'wild.example.org',
  '*.wild.example.org',
  'b.ent.example.org',
  'ent.example.org',
  'a.b.ent.example.org',
  'c.b.ent.example.org',
  'x.ent.example.org',
  'foo.cnamewild.example.org',
  'host.ptr.example.org',
  'generic.example.org',
  'generic2.example.org',
  'hinfo.example.org',
  'sshfp.example.org',
  'naptr.example.org',
  'tlsa.example.org',
  'svc.example.org',
  'svc2.example.org',
  'svc3.example.org',
  'sub.example.org',
  'host.sub.example.org',
  'ns1.sub.example.org',
  'deep.host.sub.example.org',
  'intosub.example.org',
  'x.dname.example.org',
  'www.dname.example.org',
  'dname.example.org',
  'x.dname2.example.org',
  'h1.example.org',
  'h2.example.org',
  'lab.example.org',
  'node1.lab.example.org',
  'node2.lab.example.org',
  'after-include.example.org',
  'dhcp-011.example.org',
  'dhcp-014.example.org',
  'dhcp-015.example.org',
  '0a.rev.example.org',
  '0c.rev.example.org',
  '0b.rev.example.org',
  'nosuch.example.org',
  'a.nosuch.example.org',
  'www.example.net',
  'cname-back.example.net',
  'nosuch.example.net',
  'example.net',
];
const TYPES = [
  'UNKNOWN_64',
  'UNKNOWN_65',
  'A',
  'AAAA',
  'NS',
  'SOA',
  'MX',
  'TXT',
  'CNAME',
  'SRV',
  'PTR',
  'CAA',
  'DS',
  'DNSKEY',
  'NSEC',
  'RRSIG',
  'UNKNOWN_65280',
  'HINFO',
  'NAPTR',
  'SSHFP',
  'TLSA',
  'DNAME',
];
const VARIANTS = [
  { proto: 'udp' as const },
  { proto: 'udp' as const, edns: 4096, do: true },
  { proto: 'tcp' as const, edns: 1232, mixed: true },
  { proto: 'udp' as const, edns: 512, do: true },
];

interface Case {
  readonly id: string;
  readonly corefile: string;
  readonly upstream?: (u: TestUpstream) => void;
  readonly files: Record<string, string>;
  /** Sandbox YAML (repo-relative) for cases that combine file with kubernetes. */
  readonly cluster?: readonly string[];
  readonly probe: { name: string; type: string };
  readonly queries: QuerySpec[];
}

/** A zone whose CNAMEs point into cluster.local, served by kubernetes (issue #27, item 8). */
const DB_INTO_CLUSTER = `$ORIGIN example.org.
$TTL 3600
@ IN SOA ns1.example.org. hostmaster.example.org. 2024010101 7200 3600 1209600 300
  IN NS ns1
  IN NS ns2.example.org.
ns1 IN A 192.0.2.53
ns2 IN A 192.0.2.54
www IN A 192.0.2.80
out IN CNAME svc1.testns.svc.cluster.local.
dual IN CNAME dual.testns.svc.cluster.local.
headless IN CNAME hl.testns.svc.cluster.local.
ext IN CNAME ext.testns.svc.cluster.local.
extint IN CNAME extint.testns.svc.cluster.local.
gone IN CNAME nosuch.testns.svc.cluster.local.
srv IN CNAME _http._tcp.svc1.testns.svc.cluster.local.
`;
const INTO_CLUSTER_NAMES = [
  'out.example.org',
  'dual.example.org',
  'headless.example.org',
  'ext.example.org',
  'extint.example.org',
  'gone.example.org',
  'srv.example.org',
  'www.example.org',
];

const CASES: Case[] = [
  {
    // CoreDNS answers the CNAME, the target's records from the kubernetes zone and the file
    // zone's NS records as authority (the SOA when the target has none of the type).
    id: 'CNAME targets in cluster.local answered by kubernetes in another block',
    corefile: `example.org:{{DNS}} {
  file db.example.org
}
cluster.local:{{DNS}} {
  kubernetes {
    endpoint {{API}}
  }
}
`,
    files: { 'db.example.org': DB_INTO_CLUSTER },
    cluster: ['examples/cluster.yaml'],
    probe: { name: 'svc1.testns.svc.cluster.local', type: 'A' },
    queries: generate(INTO_CLUSTER_NAMES, ['A', 'AAAA', 'SRV', 'TXT', 'CNAME'], VARIANTS, 20),
  },
  {
    id: 'CNAME targets in cluster.local answered by kubernetes in the same block',
    corefile: `.:{{DNS}} {
  file db.example.org example.org
  kubernetes cluster.local {
    endpoint {{API}}
  }
}
`,
    files: { 'db.example.org': DB_INTO_CLUSTER },
    cluster: ['examples/cluster.yaml'],
    probe: { name: 'svc1.testns.svc.cluster.local', type: 'A' },
    queries: generate(INTO_CLUSTER_NAMES, ['A', 'AAAA', 'SRV', 'MX'], VARIANTS, 21),
  },
  {
    id: 'two zones, includes, delegation, DNSSEC',
    corefile: `example.org:{{DNS}} example.net:{{DNS}} {
  file db.example.org example.org
  file db.example.net example.net
}
`,
    files: {
      'db.example.org': DB_EXAMPLE_ORG,
      'db.hosts': DB_HOSTS,
      'db.lab': DB_LAB,
      'db.example.net': DB_EXAMPLE_NET,
    },
    probe: { name: 'www.example.org', type: 'A' },
    queries: generate(ORG, TYPES, VARIANTS, 15),
  },
  {
    id: 'edge cases: apex wildcard, escapes, duplicates, many records, letter case, fallthrough',
    corefile: `edge.test:{{DNS}} {
  file db.edge {
    fallthrough
  }
  whoami
}
`,
    files: { 'db.edge': DB_EDGE },
    probe: { name: 'ns1.edge.test', type: 'A' },
    queries: generate(
      [
        'edge.test',
        'ns1.edge.test',
        'anything.edge.test',
        'a.b.edge.test',
        'dup.edge.test',
        'outside.example',
        'upper.edge.test',
        'LOWER.edge.test',
        '_low._tcp.edge.test',
        'x.y.z.edge.test',
        'y.z.edge.test',
        'q.z.edge.test',
        'q.y.z.edge.test',
        'cw.edge.test',
        'wcn.edge.test',
        'z.edge.test',
      ],
      ['A', 'AAAA', 'MX', 'TXT', 'CNAME', 'SRV', 'NS', 'SOA'],
      [{ proto: 'udp' }, { proto: 'udp', edns: 1232 }, { proto: 'tcp' }, { proto: 'udp', mixed: true }],
      18,
    ).concat(
      // Names with escaped octets are left out: the harness writes questions with dns-packet, which
      // does not escape. Owners that differ from the question only in letter case (the SRV owner
      // \`_svc._tcp.Edge.Test.\`, \`many\` asked in mixed case near the 512-octet limit) are left out
      // too: miekg/dns compresses names case-sensitively and clusterdns's encoder does not, so the
      // owner echoes the question's case and one more record fits (docs/plugins.md, file).
      generate(
        ['many.edge.test', 'dup.edge.test'],
        ['A'],
        [{ proto: 'udp' }, { proto: 'udp', edns: 1232 }, { proto: 'tcp' }],
        19,
      ),
    ),
  },
  {
    id: 'one file, several zones, in a root block',
    corefile: `.:{{DNS}} {
  file db.shared a.test b.test {
    reload 0
  }
}
`,
    files: { 'db.shared': DB_SHARED },
    probe: { name: 'www.a.test', type: 'A' },
    queries: generate(
      [
        'a.test',
        'www.a.test',
        'ns.b.test',
        'x.apps.a.test',
        'y.z.apps.b.test',
        'apps.b.test',
        'nosuch.b.test',
        'c.test',
        'example.org',
      ],
      ['A', 'AAAA', 'NS', 'SOA', 'CNAME', 'TXT'],
      VARIANTS,
      16,
    ),
  },
  {
    // upstream.Lookup routes a CNAME target to the block that serves it: example.org's `ext` and
    // `ext2` point into example.net's block, its `cname-back` points back; `outside` to no block.
    id: 'zones in separate blocks: CNAME targets answered by the other block',
    corefile: `example.org:{{DNS}} {
  file db.example.org
}
example.net:{{DNS}} {
  file db.example.net
}
`,
    files: {
      'db.example.org': DB_EXAMPLE_ORG,
      'db.hosts': DB_HOSTS,
      'db.lab': DB_LAB,
      'db.example.net': DB_EXAMPLE_NET,
    },
    probe: { name: 'www.example.net', type: 'A' },
    queries: generate(
      ['ext.example.org', 'ext2.example.org', 'outside.example.org', 'cname-back.example.net', 'www.example.net'],
      ['A', 'AAAA', 'TXT'],
      [{ proto: 'udp' }, { proto: 'tcp', edns: 1232, do: true }],
      17,
    ),
  },
  {
    id: 'zone in a root block with forward: CNAME targets outside the zone resolved through the server',
    corefile: `.:{{DNS}} {
  file db.example.org example.org {
    reload 0
  }
  forward . {{UPSTREAM}}
}
`,
    files: { 'db.example.org': DB_EXAMPLE_ORG, 'db.hosts': DB_HOSTS, 'db.lab': DB_LAB },
    upstream: (u) => {
      u.on('www.example.net', { answers: [a('www.example.net', '198.51.100.80', 120)] });
      u.on('www.not-served.test', { answers: [a('www.not-served.test', '203.0.113.7', 30)] });
      u.defaultBehaviour = { rcode: 3 };
    },
    probe: { name: 'www.example.org', type: 'A' },
    queries: generate(
      [
        'ext.example.org',
        'ext2.example.org',
        'outside.example.org',
        'x.dname.example.org',
        'www.example.org',
        'dangling.example.org',
        'nosuch.example.org',
        'www.example.net',
      ],
      ['A', 'AAAA', 'TXT'],
      [{ proto: 'udp' }, { proto: 'tcp', edns: 1232, do: true }],
      17,
    ),
  },
];

/** Broken zone files: CoreDNS's start-up error and clusterdns's must name the same file, line, column and reason. */
const SOA = '$TTL 1h\n@ IN SOA ns1 admin 1 2 3 4 5\n';
const BROKEN: readonly { name: string; zone: string; options?: string }[] = [
  { name: 'bad address', zone: `${SOA}www IN A 1.2.3\n` },
  { name: 'IPv4 as AAAA', zone: `${SOA}www IN AAAA 1.2.3.4\n` },
  { name: 'bad MX preference', zone: `${SOA}www IN MX x mail\n` },
  { name: 'unterminated quote', zone: `${SOA}www IN TXT "unterminated\n` },
  { name: 'unbalanced parenthesis', zone: '@ 3600 IN SOA ns1 admin ( 1 2 3 4 5\nwww IN A 1.2.3.4\n' },
  { name: 'extra closing parenthesis', zone: '@ 3600 IN SOA ns1 admin 1 2 3 4 5 )\n' },
  { name: 'unknown type', zone: `${SOA}www IN BOGUS 1.2.3.4\n` },
  { name: 'missing include', zone: `${SOA}$INCLUDE nosuch.db\n` },
  { name: 'bad SOA serial', zone: '$TTL 1h\n@ IN SOA ns1 admin x 2 3 4 5\n' },
  { name: 'no SOA', zone: '$TTL 1h\nwww A 1.2.3.4\n' },
  { name: 'SOA of another zone', zone: '$TTL 1h\nexample.net. IN SOA ns1 admin 1 2 3 4 5\n' },
  { name: 'relative SOA owner', zone: 'test 3600 IN SOA ns1 admin 1 2 3 4 5\n' },
  { name: 'NSEC3 zone', zone: `${SOA}x NSEC3PARAM 1 0 0 -\n` },
  { name: 'garbage after rdata', zone: `${SOA}www A 1.2.3.4 extra\n` },
  { name: 'bad SRV port', zone: `${SOA}www SRV 1 2 port target\n` },
  { name: 'two CAA values', zone: `${SOA}www CAA 0 issue "a" "b"\n` },
  { name: 'RFC 3597 length mismatch', zone: `${SOA}www TYPE999 \\# 3 0102\n` },
  { name: 'bad $TTL', zone: '$TTL x\n' },
  { name: 'empty label', zone: `${SOA}bad..name A 1.2.3.4\n` },
  { name: 'bad $GENERATE step', zone: `${SOA}$GENERATE 1-3/0 host$ A 10.0.0.$\n` },
  { name: 'bad $GENERATE base', zone: `${SOA}$GENERATE 1-3 host\${0,3,q} A 10.0.0.$\n` },
  { name: 'bad SVCB key', zone: `${SOA}www HTTPS 1 . bogus=1\n` },
  { name: 'bad SVCB port', zone: `${SOA}www HTTPS 1 . port=x\n` },
  { name: 'SVCB values run together', zone: `${SOA}www HTTPS 1 . alpn="h2"port=1\n` },
  { name: 'missing file, reload 0', zone: '', options: ' {\n    reload 0\n  }' },
];

function startupError(bin: 'coredns' | 'clusterdns', dir: string): { status: number | null; line: string } {
  const args = ['-conf', join(dir, 'Corefile'), '-dns.port', '0'];
  const r =
    bin === 'coredns'
      ? spawnSync(COREDNS_BIN, args, { encoding: 'utf8', timeout: 20000, cwd: dir })
      : spawnSync(process.execPath, [CLUSTERDNS_BIN, ...args], { encoding: 'utf8', timeout: 20000, cwd: dir });
  const line =
    `${r.stdout}${r.stderr}`.split('\n').find((l) => l.startsWith('plugin/file: ')) ?? `${r.stdout}${r.stderr}`;
  return { status: r.status, line };
}

describe('differential: file', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  for (const c of CASES) {
    it(c.id, async () => {
      if (missing) throw new Error(missing);
      const pair = await startPair(
        {
          corefile: c.corefile,
          files: c.files,
          ...(c.upstream ? { upstream: c.upstream } : {}),
          ...(c.cluster ? { cluster: c.cluster } : {}),
        },
        c.probe,
      );
      try {
        const result = newResult(c.id);
        await runQueries(
          pair,
          result,
          c.queries,
          c.upstream
            ? ['file', 'forward']
            : c.corefile.includes('whoami')
              ? ['file', 'whoami']
              : c.cluster
                ? ['file', 'kubernetes']
                : ['file'],
        );
        assertResult(result, c.queries.length);
      } finally {
        await pair.stop();
      }
    }, 240_000);
  }
  it('reports broken zone files as CoreDNS 1.15.0 does (zone file, line, column, reason)', () => {
    if (missing) throw new Error(missing);
    for (const b of BROKEN) {
      const dir = mkdtempSync(join(tmpdir(), 'file-broken-'));
      if (b.zone !== '') writeFileSync(join(dir, 'db.zone'), b.zone);
      writeFileSync(join(dir, 'Corefile'), `example.org {\n  file db.zone${b.options ?? ''}\n}\n`);
      const ref = startupError('coredns', dir);
      const cand = startupError('clusterdns', dir);
      expect(ref.status, b.name).toBe(1);
      expect(cand.status, b.name).toBe(1);
      // clusterdns adds the Corefile position of the directive (docs/plugins.md, file); the rest is CoreDNS's text.
      const pos = `plugin/file: ${join(dir, 'Corefile')}:2 - Error during parsing: `;
      expect(cand.line.startsWith(pos), `${b.name}: ${cand.line}`).toBe(true);
      const refText = ref.line.replace(/^plugin\/file: (plugin\/file: )?/, '');
      expect(cand.line.slice(pos.length), b.name).toBe(refText);
    }
  }, 240_000);
  it('reloads a zone when its SOA serial changes, keeps serving it when the new file is broken', async () => {
    if (missing) throw new Error(missing);
    const zone = (serial: number, ip: string, extra = ''): string =>
      `$TTL 60\n@ IN SOA ns hostmaster ${serial} 3600 600 86400 60\n@ NS ns\nns A 192.0.2.1\nwww A ${ip}\n${extra}`;
    const pair = await startPair(
      {
        corefile: 'example.org:{{DNS}} {\n  file db.reload {\n    reload 200ms\n  }\n}\n',
        files: { 'db.reload': zone(1, '192.0.2.10') },
      },
      { name: 'www.example.org', type: 'A' },
    );
    const answerOf = async (port: number): Promise<string> => {
      const r = await exchange(port, encode({ name: 'www.example.org', type: 'A', id: 7 }), 'udp', 2000);
      const a = r ? decode(r).answers.find((x) => x.type === 'A') : undefined;
      return a ? String((a as { data: unknown }).data) : 'none';
    };
    const reloadSeen = async (want: string): Promise<void> => {
      let got: string[] = [];
      await waitFor(
        () => `the reload: ${got.join(' / ')} instead of ${want}`,
        async () => {
          got = await Promise.all([answerOf(pair.ref.dns), answerOf(pair.cand.dns)]);
          return got.every((g) => g === want);
        },
        { everyMs: 50 },
      );
    };
    // Replace the file whole (write beside it, then rename): a reload tick that read a half-written
    // file with the new serial but without its records would serve that and never read it again
    // (the serial no longer changes), in either server; with query threads there are more readers.
    const replaceZone = (dir: string, text: string): void => {
      writeFileSync(join(dir, 'db.reload.new'), text);
      renameSync(join(dir, 'db.reload.new'), join(dir, 'db.reload'));
    };
    try {
      // A broken file with a new serial: logged, the old zone stays; then a good one with a newer serial.
      for (const p of [pair.ref, pair.cand]) replaceZone(p.dir, zone(2, '192.0.2.20', 'bad A 1.2.3\n'));
      await Promise.all([
        pair.ref.waitFor(/Parsing zone "example\.org\.": failed to parse file/),
        pair.cand.waitFor(/Parsing zone "example\.org\.": failed to parse file/),
      ]);
      expect(await answerOf(pair.ref.dns)).toBe('192.0.2.10');
      expect(await answerOf(pair.cand.dns)).toBe('192.0.2.10');
      for (const p of [pair.ref, pair.cand]) replaceZone(p.dir, zone(3, '192.0.2.30'));
      await reloadSeen('192.0.2.30');
      // The line is written before the reply is sent, but this process may read the reply first.
      await Promise.all([pair.ref.waitFor(/Successfully reloaded/), pair.cand.waitFor(/Successfully reloaded/)]);
      const lines = [pair.ref, pair.cand].map(
        (p) =>
          p.output
            .filter((l) => /plugin\/file: (Successfully reloaded|Parsing zone)/.test(l))
            .map((l) => l.replace(/^.*?\[(INFO|ERROR)\]/, '[$1]'))[0],
      );
      expect(lines[1]).toBe(lines[0]);
      const ok = [pair.ref, pair.cand].map((p) =>
        p.output.find((l) => l.includes('Successfully reloaded'))?.replace(/^.*?\[INFO\]/, '[INFO]'),
      );
      expect(ok[1]).toBe(ok[0]);
      expect(ok[0]).toBe(
        '[INFO] plugin/file: Successfully reloaded zone "example.org." in "db.reload" with 3 SOA serial',
      );
    } finally {
      await pair.stop();
    }
  }, 120_000);
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential file: ${t.compared} replies compared over ${t.cases} cases\n`);
  });
});
