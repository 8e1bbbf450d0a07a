/**
 * Differential: the template plugin against CoreDNS 1.15.0, on the Corefiles people write with
 * it (the README's examples and common customisations: synthesised A/PTR pairs, NXDOMAIN for
 * `.invalid`, AAAA NODATA for an IPv4-only zone, CNAMEs followed through kubernetes, hosts or
 * forward, fallthrough chains), plus the template metrics after the same traffic and the
 * setup errors of bad Corefiles. The Go template engine itself is compared with Go's
 * text/template (`go run`, the toolchain that builds .bin/coredns) on the same inputs.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { a, aaaa } from '../helpers/upstream.js';
import { GoTemplate } from '../../plugins/template/gotemplate/template.js';
import { GoObject, type GoValue } from '../../plugins/template/gotemplate/values.js';
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
  type Variant,
} from './harness.js';

const VARIANTS: readonly Variant[] = [
  { proto: 'udp' },
  { proto: 'udp', edns: 1232 },
  { proto: 'udp', edns: 512, do: true },
  { proto: 'tcp', edns: 4096, mixed: true },
];

const README_A_PTR = `.:{{DNS}} {
  prometheus 127.0.0.1:{{METRICS}}
  forward . {{UPSTREAM}}
  # ip-a-b-c-d.example A a.b.c.d
  template IN A example {
    match (^|[.])ip-(?P<a>[0-9]*)-(?P<b>[0-9]*)-(?P<c>[0-9]*)-(?P<d>[0-9]*)[.]example[.]$
    answer "{{ .Name }} 60 IN A {{ .Group.a }}.{{ .Group.b }}.{{ .Group.c }}.{{ .Group.d }}"
    fallthrough
  }
  # d.c.b.a.in-addr.arpa PTR ip-a-b-c-d.example
  template IN PTR in-addr.arpa {
    match ^(?P<d>[0-9]*)[.](?P<c>[0-9]*)[.](?P<b>[0-9]*)[.](?P<a>[0-9]*)[.]in-addr[.]arpa[.]$
    answer "{{ .Name }} 60 IN PTR ip-{{ .Group.a }}-{{ .Group.b }}-{{ .Group.c }}-{{ .Group.d }}.example."
  }
}
`;

const README_INVALID = `.:{{DNS}} {
  forward . {{UPSTREAM}}
  template ANY ANY invalid {
    rcode NXDOMAIN
    authority "invalid. 60 {{ .Class }} SOA ns.invalid. hostmaster.invalid. (1 60 60 60 60)"
    ederror 21 "Blocked according to RFC2606"
  }
  template IN ANY example.com.dc1.example.com {
    rcode NXDOMAIN
    authority "{{ .Zone }} 60 IN SOA ns.example.com hostmaster.example.com (1 60 60 60 60)"
  }
  template IN ANY example.com {
    match "example\\.com\\.(dc2\\.example\\.com\\.)$"
    rcode NXDOMAIN
    authority "{{ index .Match 1 }} 60 IN SOA ns.{{ index .Match 1 }} hostmaster.{{ index .Match 1 }} (1 60 60 60 60)"
    fallthrough
  }
}
`;

/** IPv4-only zone: AAAA answered NODATA with a SOA, everything else forwarded. */
const AAAA_NODATA = `.:{{DNS}} {
  template IN AAAA v4only.example.net {
    authority "v4only.example.net. 30 IN SOA ns.v4only.example.net. hostmaster.v4only.example.net. (2024010101 7200 1800 86400 30)"
  }
  template ANY AAAA corp.internal {
    rcode NOERROR
  }
  forward . {{UPSTREAM}}
}
`;

const README_MORE = `.:{{DNS}} {
  forward . {{UPSTREAM}}
  template IN A example {
    match "^ip0a(?P<b>[a-f0-9]{2})(?P<c>[a-f0-9]{2})(?P<d>[a-f0-9]{2})[.]example[.]$"
    answer "{{ .Name }} 60 IN A 10.{{ parseInt .Group.b 16 8 }}.{{ parseInt .Group.c 16 8 }}.{{ parseInt .Group.d 16 8 }}"
    fallthrough
  }
  template IN A example {
    match "^ip-(?P<a>10)-(?P<b>[0-9]*)-(?P<c>[0-9]*)-(?P<d>[0-9]*)[.]dc[.]example[.]$"
    match "^(?P<a>[0-9]*)[.](?P<b>[0-9]*)[.](?P<c>[0-9]*)[.](?P<d>[0-9]*)[.]ext[.]example[.]$"
    answer "{{ .Name }} 60 IN A {{ .Group.a}}.{{ .Group.b }}.{{ .Group.c }}.{{ .Group.d }}"
    fallthrough
  }
  template IN A example {
    match ^ip-10-(?P<b>[0-9]*)-(?P<c>[0-9]*)-(?P<d>[0-9]*)[.]example[.]$
    answer "{{ .Name }} 60 IN A 10.{{ .Group.b }}.{{ .Group.c }}.{{ .Group.d }}"
    authority  "example. 60 IN NS ns0.example."
    authority  "example. 60 IN NS ns1.example."
    additional "ns0.example. 60 IN A 203.0.113.8"
    additional "ns1.example. 60 IN A 198.51.100.8"
    fallthrough
  }
  template IN MX example {
    match ^ip-10-(?P<b>[0-9]*)-(?P<c>[0-9]*)-(?P<d>[0-9]*)[.]example[.]$
    answer "{{ .Name }} 60 IN MX 10 {{ .Name }}"
    additional "{{ .Name }} 60 IN A 10.{{ .Group.b }}.{{ .Group.c }}.{{ .Group.d }}"
    fallthrough
  }
  template IN TXT example {
    match "^(?P<host>[a-z0-9-]+)[.]info[.]example[.]$"
    answer "{{ .Name }} 60 IN TXT \\"host={{ .Group.host }}\\" \\"{{ printf \\"%s/%s/%d\\" .Type .Class (len .Match) }}\\" \\"{{ if eq .Group.host \\"admin\\" }}restricted{{ else }}open{{ end }}\\""
    answer "{{ .Name }} 60 IN TXT \\"{{ range $i, $m := .Match }}{{ if $i }},{{ end }}{{ $m }}{{ end }}\\""
    fallthrough
  }
  template IN SRV example {
    match "^_(?P<svc>[a-z]+)[.]_tcp[.](?P<host>[a-z0-9-]+)[.]example[.]$"
    answer "{{ .Name }} 60 IN SRV 0 5 {{ if eq .Group.svc \\"https\\" }}443{{ else }}80{{ end }} {{ .Group.host }}.example."
  }
}
`;

/** The README's fabricated CNAME, answered through forward; and the hosts/forward fallthrough chain. */
const CNAME_FORWARD = `.:{{DNS}} {
  template IN ANY foogle.com {
    match "^foogle\\.com\\.$"
    answer "foogle.com 60 IN CNAME google.com"
  }
  template IN A alias.test {
    match "^(?P<host>[a-z0-9-]+)[.]alias[.]test[.]$"
    answer "{{ .Name }} 30 IN CNAME {{ .Group.host }}.hosts.test."
    fallthrough
  }
  template IN AAAA alias.test {
    answer "{{ .Name }} 30 IN CNAME web.hosts.test."
  }
  hosts {{DIR}}/hosts hosts.test {
    fallthrough
  }
  forward . {{UPSTREAM}}
}
`;

/** A CNAME from an external name to a cluster Service: the target is answered by kubernetes. */
const CNAME_KUBERNETES = `.:{{DNS}} {
  kubernetes cluster.local in-addr.arpa ip6.arpa {
    endpoint {{API}}
    fallthrough in-addr.arpa ip6.arpa
  }
  template IN A corp.example {
    match "^(?P<svc>[a-z0-9-]+)[.](?P<ns>[a-z0-9-]+)[.]corp[.]example[.]$"
    answer "{{ .Name }} 60 IN CNAME {{ .Group.svc }}.{{ .Group.ns }}.svc.cluster.local."
    fallthrough
  }
  template IN AAAA corp.example {
    match "^(?P<svc>[a-z0-9-]+)[.](?P<ns>[a-z0-9-]+)[.]corp[.]example[.]$"
    answer "{{ .Name }} 60 IN CNAME {{ .Group.svc }}.{{ .Group.ns }}.svc.cluster.local."
  }
  template IN ANY corp.example {
    rcode NXDOMAIN
    authority "corp.example. 60 IN SOA ns.corp.example. hostmaster.corp.example. (1 60 60 60 60)"
  }
  template IN PTR in-addr.arpa {
    match ^(?P<d>[0-9]+)[.](?P<c>[0-9]+)[.](?P<b>[0-9]+)[.]10[.]in-addr[.]arpa[.]$
    answer "{{ .Name }} 60 IN PTR node-{{ .Group.b }}-{{ .Group.c }}-{{ .Group.d }}.corp.example."
  }
  forward . {{UPSTREAM}}
}
`;

/** Failures at query time: SERVFAIL for both, and the failure metrics. */
const FAILURES = `.:{{DNS}} {
  prometheus 127.0.0.1:{{METRICS}}
  template IN ANY fail.test {
    match ^exec[.]
    answer "{{ .Name }} 60 IN A {{ index .Match 3 }}"
    fallthrough
  }
  template IN ANY fail.test {
    match ^rr[.]
    answer "{{ .Name }} 60 IN A 10.0.0"
    fallthrough
  }
  template IN ANY fail.test {
    match ^parse[.]
    answer "{{ .Name }} 60 IN A 10.0.0.{{ parseInt \\"zz\\" 10 8 }}"
    fallthrough
  }
  template IN ANY fail.test {
    match ^sf[.]
    rcode SERVFAIL
    fallthrough
  }
  template IN ANY fail.test {
    match ^field[.]
    answer "{{ .Name }} 60 IN A {{ .Grup.d }}"
  }
}
`;

/** Other RCODEs with records, and a reply too large for a UDP client without EDNS. */
const RCODES_AND_SIZE = `.:{{DNS}} {
  template IN ANY refused.test {
    rcode REFUSED
    answer "{{ .Name }} 60 IN A 10.0.0.1"
  }
  template IN ANY notimp.test {
    rcode NOTIMP
  }
  template IN ANY yx.test {
    rcode YXDOMAIN
    authority "yx.test. 60 IN SOA a. b. 1 2 3 4 5"
  }
  template IN TXT big.test {
${Array.from({ length: 30 }, (_, i) => `    answer "{{ .Name }} 60 IN TXT \\"record ${i} ${'x'.repeat(40)}\\""`).join('\n')}
    additional "extra.big.test. 60 IN A 10.9.9.9"
  }
}
`;

/** CoreDNS 1.15.0's var/expr: the README's LAN example and expressions over the query. */
const EXPRESSIONS = `.:{{DNS}} {
  template IN A example.com {
    match ^(?P<ip>[0-9]{1,3}(-[0-9]{1,3}){3})[.](?P<id>[a-z2-7]{26})[.]example[.]com[.]$
    var ip replace(group('ip'), '-', '.')
    expr "any(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16'], incidr(ip, #))"
    answer "{{ .Name }} 60 IN A {{ .Var.ip }}"
    fallthrough
  }
  template IN TXT vars.test {
    match ^(?P<n>[0-9]+)[.](?P<w>[a-z]+)[.]vars[.]test[.]$
    var num int(group('n'))
    var double num * 2
    var half num / 2
    var label upper(group('w')) + '-' + string(num) + '-' + group(2)
    var local incidr(client_ip(), '127.0.0.0/8')
    var big num > 10 ? 'big' : 'small'
    var parts split(group(0), '.')
    expr num > 1 && type() == 'TXT' && len(parts) == 5
    answer "{{ .Name }} 60 IN TXT \\"{{ .Var.num }} {{ .Var.double }} {{ .Var.half }} {{ .Var.label }} {{ .Var.local }} {{ .Var.big }} {{ index .Var.parts 1 }} {{ len .Var }}\\""
    fallthrough
  }
  template IN ANY vars.test {
    match ^bad[.]
    var n int('x')
  }
  template IN ANY expr.test {
    expr name() matches '^[a-c][.]' || proto() == 'tcp'
    answer "{{ .Name }} 60 IN TXT \\"{{ .Type }} ok\\""
    fallthrough
  }
  forward . {{UPSTREAM}}
}
`;

interface TCase {
  readonly id: string;
  readonly setup: CaseSetup;
  readonly queries: QuerySpec[];
  readonly plugins: string[];
  readonly probe?: { name: string; type: string };
  /** Compare the coredns_template_* series after the queries. */
  readonly metrics?: boolean;
  /** Context tags for src/dnscompare/rules.ts. */
  readonly tags?: string[];
}

const names = (...n: string[]): string[] => n;

const CASES: TCase[] = [
  {
    id: 'template-readme-a-ptr',
    setup: {
      corefile: README_A_PTR,
      upstream: (u) => u.on('www.example.', { answers: [a('www.example', '192.0.2.80')] }),
    },
    queries: [
      ...generate(
        names(
          'ip-10-1-2-3.example',
          'host.ip-192-168-0-1.example',
          'ip-1-2-3.example',
          'www.example',
          'example',
          'ip-10-1-2-3.example.org',
        ),
        ['A', 'AAAA', 'MX', 'ANY'],
        VARIANTS,
        101,
      ),
      ...generate(
        names(
          '4.3.2.1.in-addr.arpa',
          '1.0.168.192.in-addr.arpa',
          '3.2.1.in-addr.arpa',
          'x.4.3.2.1.in-addr.arpa',
          'in-addr.arpa',
        ),
        ['PTR', 'A', 'ANY'],
        VARIANTS,
        102,
      ),
    ],
    plugins: ['template', 'forward'],
    metrics: true,
  },
  {
    id: 'template-readme-invalid',
    setup: {
      corefile: README_INVALID,
      upstream: (u) => u.on('example.com.', { answers: [a('example.com', '192.0.2.1')] }),
    },
    queries: [
      ...generate(
        names(
          'x.invalid',
          'invalid',
          'a.b.invalid',
          'something.example.com.dc1.example.com',
          'example.com.dc1.example.com',
          'www.example.com.dc2.example.com',
          'example.com',
        ),
        ['A', 'TXT', 'SOA', 'ANY'],
        VARIANTS,
        201,
      ),
      ...['x.invalid', 'version.invalid'].map(
        (name, i): QuerySpec => ({ name, type: 'TXT', klass: 'CH', proto: 'udp', id: 2100 + i }),
      ),
      { name: 'x.invalid', type: 'A', klass: 'ANY', proto: 'udp', id: 2110 },
    ],
    plugins: ['template', 'forward'],
    tags: ['template-ederror'],
  },
  {
    id: 'template-aaaa-nodata',
    setup: {
      corefile: AAAA_NODATA,
      upstream: (u) => {
        u.on('www.v4only.example.net.', { answers: [a('www.v4only.example.net', '192.0.2.7')] });
        u.on('db.corp.internal.', { answers: [a('db.corp.internal', '10.1.0.5')] });
      },
    },
    queries: generate(
      names('www.v4only.example.net', 'v4only.example.net', 'db.corp.internal', 'other.example.org'),
      ['A', 'AAAA', 'MX', 'ANY'],
      VARIANTS,
      301,
    ),
    plugins: ['template', 'forward'],
  },
  {
    id: 'template-readme-patterns',
    setup: {
      corefile: README_MORE,
      upstream: (u) => u.on('www.example.', { answers: [a('www.example', '192.0.2.80')] }),
    },
    queries: generate(
      names(
        'ip0a7b7b7b.example',
        'ip0aff0001.example',
        'ip0azz0001.example',
        'ip-10-5-6-7.dc.example',
        '10.1.2.3.ext.example',
        'ip-10-9-8-7.example',
        'web-1.info.example',
        'admin.info.example',
        '_https._tcp.web.example',
        '_http._tcp.web.example',
        '_ftp._udp.web.example',
        'www.example',
      ),
      ['A', 'MX', 'TXT', 'SRV', 'AAAA'],
      VARIANTS,
      401,
    ),
    plugins: ['template', 'forward'],
  },
  {
    id: 'template-cname-forward-hosts',
    setup: {
      corefile: CNAME_FORWARD,
      files: { hosts: '192.0.2.10 web.hosts.test\n2001:db8::10 web.hosts.test\n192.0.2.11 api.hosts.test\n' },
      upstream: (u) => {
        u.on('google.com.', {
          answers: [a('google.com', '142.250.0.1', 120), aaaa('google.com', '2a00:1450::1', 120)],
        });
        u.on('nosuch.hosts.test.', { rcode: 3 });
      },
    },
    queries: generate(
      names('foogle.com', 'www.foogle.com', 'web.alias.test', 'api.alias.test', 'nosuch.alias.test', 'alias.test'),
      ['A', 'AAAA', 'MX', 'TXT'],
      VARIANTS,
      501,
    ),
    plugins: ['template', 'hosts', 'forward'],
  },
  {
    id: 'template-cname-kubernetes',
    setup: {
      corefile: CNAME_KUBERNETES,
      cluster: ['examples/cluster.yaml'],
      upstream: (u) => u.on('www.example.org.', { answers: [a('www.example.org', '192.0.2.99')] }),
    },
    probe: { name: 'kubernetes.default.svc.cluster.local', type: 'A' },
    queries: [
      ...generate(
        names(
          'svc1.testns.corp.example',
          'dual.testns.corp.example',
          'kubernetes.default.corp.example',
          'nosuch.testns.corp.example',
          'x.y.z.corp.example',
          'corp.example',
        ),
        ['A', 'AAAA', 'TXT'],
        VARIANTS,
        601,
      ),
      ...generate(
        names('5.4.3.10.in-addr.arpa', '1.0.96.10.in-addr.arpa', '1.2.3.4.in-addr.arpa'),
        ['PTR'],
        VARIANTS,
        602,
      ),
      ...generate(names('www.example.org'), ['A'], VARIANTS, 603),
    ],
    plugins: ['template', 'kubernetes', 'forward'],
  },
  {
    id: 'template-rcodes-and-size',
    setup: { corefile: RCODES_AND_SIZE },
    queries: generate(names('a.refused.test', 'a.notimp.test', 'a.yx.test', 'a.big.test'), ['A', 'TXT'], VARIANTS, 801),
    plugins: ['template'],
  },
  {
    id: 'template-expressions',
    setup: {
      corefile: EXPRESSIONS,
      upstream: (u) => {
        u.on('8-8-8-8.abcdefghijklmnopqrstuvwxyz.example.com.', {
          answers: [a('8-8-8-8.abcdefghijklmnopqrstuvwxyz.example.com', '192.0.2.8')],
        });
        u.on('d.expr.test.', { answers: [a('d.expr.test', '192.0.2.4')] });
      },
    },
    queries: generate(
      names(
        '10-1-2-3.abcdefghijklmnopqrstuvwxyz.example.com',
        '192-168-7-9.abcdefghijklmnopqrstuvwxyz.example.com',
        '8-8-8-8.abcdefghijklmnopqrstuvwxyz.example.com',
        '5.abc.vars.test',
        '25.xyz.vars.test',
        '1.abc.vars.test',
        'bad.vars.test',
        'a.expr.test',
        'd.expr.test',
      ),
      ['A', 'TXT'],
      VARIANTS,
      901,
    ),
    plugins: ['template', 'forward'],
  },
  {
    id: 'template-failures',
    setup: { corefile: FAILURES },
    queries: generate(
      names(
        'exec.fail.test',
        'rr.fail.test',
        'parse.fail.test',
        'sf.fail.test',
        'field.fail.test',
        'other.fail.test',
        'elsewhere.test',
      ),
      ['A', 'TXT'],
      VARIANTS,
      701,
    ),
    plugins: ['template'],
    metrics: true,
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

/** The coredns_template_* samples, labels sorted, the server label's port dropped. */
async function templateSeries(port: number): Promise<string[]> {
  const body = await get(port, '/metrics');
  return body
    .split('\n')
    .filter((l) => l.startsWith('coredns_template_'))
    .map((l) => {
      const m = /^(\w+)\{(.*)\} (.*)$/.exec(l)!;
      const labels = [...m[2]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)]
        .map(([, k, v]) => `${k}=${k === 'server' ? v!.replace(/:\d+$/, ':PORT') : v}`)
        .sort();
      return `${m[1]}{${labels.join(',')}} ${m[3]}`;
    })
    .sort();
}

describe('differential: template', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential template: ${t.compared} queries compared in ${t.cases} cases\n`);
  });
  for (const c of CASES) {
    it(c.id, async () => {
      expect(missing).toBeNull();
      const pair = await startPair(c.setup, c.probe);
      try {
        const result = newResult(c.id);
        await runQueries(pair, result, c.queries, c.plugins, { tags: c.tags });
        assertResult(result, c.queries.length);
        if (c.metrics) {
          const [ref, cand] = await Promise.all([templateSeries(pair.ref.metrics), templateSeries(pair.cand.metrics)]);
          expect(ref.length).toBeGreaterThan(0);
          expect(cand).toEqual(ref);
        }
      } finally {
        await pair.stop();
      }
    }, 180_000);
  }

  // Setup errors: the same first line from both (file:line and CoreDNS's wording).
  const BAD: string[] = [
    'template',
    'template X',
    'template ANY',
    'template ANY X',
    'template in A',
    'template ANY ANY {\n  notavailable\n}',
    'template ANY ANY {\n  answer\n}',
    'template ANY ANY {\n  rcode\n}',
    'template ANY ANY {\n  rcode UNDEFINED\n}',
    'template ANY ANY {\n  rcode NXDOMAIN extra\n}',
    'template ANY ANY {\n  answer "{{"\n}',
    'template ANY ANY {\n  additional "{{ notAFunction }}"\n}',
    'template ANY ANY {\n  match (?=x)\n}',
    'template ANY ANY {\n  match (a)\\1\n}',
    'template ANY ANY {\n  ederror x\n}',
    'template ANY ANY {\n  ederror 1 2 3\n}',
  ];
  it('rejects bad Corefiles as CoreDNS does', () => {
    expect(missing).toBeNull();
    const dir = mkdtempSync(join(tmpdir(), 'template-bad-'));
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
        `${r.stdout}${r.stderr}`.split('\n').find((l) => l.includes('plugin/template')) ??
        `(no plugin/template line in: ${r.stdout}${r.stderr})`
      );
    };
    const diffs: string[] = [];
    BAD.forEach((body, i) => {
      const file = join(dir, `bad${i}.conf`);
      writeFileSync(file, `. {\n${body}\n}\n`);
      const ref = firstError('coredns', file);
      const cand = firstError('clusterdns', file);
      if (ref !== cand) diffs.push(`${JSON.stringify(body)}\n  CoreDNS:    ${ref}\n  clusterdns: ${cand}`);
    });
    expect(diffs).toEqual([]);
  }, 120_000);

  // The template engine against Go's text/template on the same data.
  const GO_CASES: string[] = [
    '{{ .Name }} 60 IN A {{ .Group.a }}.{{ .Group.b }}.0.1',
    '{{ index .Match 1 }}|{{ index .Group "b" }}|{{ index .Group "none" }}|{{ .Group.none }}',
    '{{ parseInt "7b" 16 8 }} {{ parseInt .Group.a 10 8 | printf "%03d" }} {{ parseInt "0x1f" 0 16 }}',
    '{{ printf "%s|%5s|%-4s|%d|%x|%X|%q|%v|%08.3f|%+d|%t|%c" "a" "b" "c" 42 255 255 "q" .Match 3.14159 7 true 65 }}',
    '{{ printf "%d" "x" }} {{ printf "%s %s" "x" }} {{ printf "%s" "a" "b" }} {{ printf "%z" 1 }}',
    '{{- if eq .Class "IN" -}}  yes  {{- else -}} no {{- end -}} !',
    '{{ if eq .Type "AAAA" }}6{{ else if eq .Type "A" }}4{{ else }}?{{ end }}',
    '{{ if and (eq .Class "IN") (ne .Name "") }}ok{{ end }}{{ if or (eq .Class "CH") (eq .Class "IN" "HS") }}ok{{ end }}',
    '{{ and 1 0 }} {{ or 0 "" "z" }} {{ not true }} {{ and "a" "b" }} {{ or 0 "" }}',
    '{{ eq (parseInt .Group.a 10 8) 10 }} {{ lt 1 2 }} {{ ge "b" "a" }} {{ ne 1 2 }} {{ le 2 2 }} {{ gt 1.5 1.2 }}',
    '{{ range $i, $m := .Match }}[{{ $i }}={{ $m }}]{{ end }}{{ range .Match }}{{ if eq . "10" }}{{ break }}{{ end }}<{{ . }}>{{ end }}',
    '{{ range .Match }}{{ if eq . "10" }}{{ continue }}{{ end }}<{{ . }}>{{ end }}{{ range $k, $v := .Group }}{{ $k }}={{ $v }};{{ end }}',
    '{{ range .Group.none }}x{{ else }}empty{{ end }}{{ range 3 }}{{ . }}{{ end }}{{ with .Group.a }}<{{ . }}>{{ end }}{{ with .Group.none }}x{{ else }}none{{ end }}',
    '{{ $x := "q" }}{{ $x }}{{ $x = "r" }}{{ $x }}{{ $.Zone }}{{ with $y := .Group.b }}{{ $y }}{{ end }}',
    '{{ len .Match }} {{ len .Name }} {{ len .Group }} {{ slice .Name 0 2 }}{{ slice .Name 19 }} {{ slice .Match 1 2 }}',
    '{{ .Meta "k" }}|{{ .Meta "x" }}|{{/* a comment */}}a {{- /* trimmed */ -}} b',
    '{{ print 1 2 "a" "b" 3 }}|{{ println "x" 1 }}|{{ html "<a&b>\'" }}|{{ urlquery "a b&c/d" }}|{{ js "a\'b<c>&=\\"" }}',
    '{{ 0x1F }} {{ 1.5 }} {{ \'a\' }} {{ true }} {{ `raw\\n` }} {{ "esc\\t" }} {{ 1e3 }} {{ -7 }} {{ 0o17 }} {{ 017 }} {{ 1_000 }}',
    '{{ (index .Match 1) | printf "%s!" }} {{ .Group }} {{ .Match }} {{ print nil }}',
    '{{ printf "%s/%s/%d" .Type .Class (len .Match) }} {{ print .Type .Class }} {{ (index .Match 0) }}',
    '{{ 2.5 }} {{ 100000.5 }} {{ 1234567.5 }} {{ 0.0001 }} {{ 0.00001 }} {{ 1.5e-7 }} {{ -3.25e10 }} {{ print 2.0 }} {{ print 1e6 }}',
    '{{ index .Match 5 }}',
    '{{ .Grup.d }}',
    '{{ .Name.x }}',
    '{{ parseInt "gg" 16 8 }}',
    '{{ parseInt "300" 10 8 }}',
    '{{ "a" "b" }}',
    '{{ lt "a" 1 }}',
    '{{ parseInt }}',
    '{{',
    '{{ notAFunction }}',
    '{{ end }}',
    '{{ if 1 }}',
    '{{ $y }}',
    '{{ break }}',
    '{{ "unterminated }}',
  ];
  it('renders as Go text/template does', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gotemplate-'));
    writeFileSync(join(dir, 'go.mod'), 'module gotpl\n\ngo 1.22\n');
    writeFileSync(join(dir, 'main.go'), GO_PROGRAM);
    // The Go toolchain scripts/install-coredns.sh builds CoreDNS with (same lookup).
    const go =
      process.env.GO ??
      (spawnSync('sh', ['-c', 'command -v go'], { encoding: 'utf8' }).stdout.trim() || '/usr/local/go/bin/go');
    expect(existsSync(go), `Go toolchain not found at ${go} (set GO=/path/to/go)`).toBe(true);
    const out = execFileSync(go, ['run', '.', ...GO_CASES], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, GOFLAGS: '-mod=mod', GOPROXY: 'off', GOWORK: 'off' },
      timeout: 120_000,
    });
    const goResults = JSON.parse(out) as { out?: string; parseErr?: string; execErr?: boolean }[];
    const data = new GoObject(
      '*main.D',
      {
        Name: 'ip-10-1-2-3.example.',
        Zone: 'example.',
        Class: 'IN',
        Type: 'A',
        Match: ['ip-10-1-2-3.example.', '10', '1'],
        Group: new Map<string, GoValue>([
          ['0', 'ip-10-1-2-3.example.'],
          ['1', '10'],
          ['2', '1'],
          ['a', '10'],
          ['b', '1'],
        ]),
      },
      { Meta: (args) => (args[0] === 'k' ? 'v' : '') },
    );
    const diffs: string[] = [];
    GO_CASES.forEach((src, i) => {
      const want = goResults[i]!;
      let got: { out?: string; parseErr?: string; execErr?: boolean };
      try {
        const t = GoTemplate.parse('answer', src);
        try {
          got = { out: t.execute(data) };
        } catch {
          got = { execErr: true };
        }
      } catch (e) {
        got = { parseErr: (e as Error).message };
      }
      if (JSON.stringify(got) !== JSON.stringify(want))
        diffs.push(`${src}\n  Go:         ${JSON.stringify(want)}\n  clusterdns: ${JSON.stringify(got)}`);
    });
    expect(diffs).toEqual([]);
  }, 180_000);
});

const GO_PROGRAM = `package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/template"
)

type D struct {
	Name, Zone, Class, Type string
	Match                   []string
	Group                   map[string]string
}

func (d *D) Meta(s string) string {
	if s == "k" {
		return "v"
	}
	return ""
}

type result struct {
	Out      *string \`json:"out,omitempty"\`
	ParseErr string  \`json:"parseErr,omitempty"\`
	ExecErr  bool    \`json:"execErr,omitempty"\`
}

func main() {
	d := &D{Name: "ip-10-1-2-3.example.", Zone: "example.", Class: "IN", Type: "A",
		Match: []string{"ip-10-1-2-3.example.", "10", "1"},
		Group: map[string]string{"0": "ip-10-1-2-3.example.", "1": "10", "2": "1", "a": "10", "b": "1"}}
	var out []result
	for _, s := range os.Args[1:] {
		t, err := template.New("answer").Funcs(template.FuncMap{"parseInt": strconv.ParseUint}).Parse(s)
		if err != nil {
			out = append(out, result{ParseErr: err.Error()})
			continue
		}
		var b strings.Builder
		if err := t.Execute(&b, d); err != nil {
			out = append(out, result{ExecErr: true})
			continue
		}
		s := b.String()
		out = append(out, result{Out: &s})
	}
	j, _ := json.Marshal(out)
	fmt.Println(string(j))
}
`;
