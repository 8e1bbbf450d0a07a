import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { registry } from '../../src/metrics/registry.js';
import { rcode, udpQuery } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { dispenserFor } from '../../test/helpers/setup.js';
import { parseTemplates } from './setup.js';

const parse = (text: string): ReturnType<typeof parseTemplates> =>
  parseTemplates(dispenserFor(text, 'template'), ['.']);

describe('template setup', () => {
  it('defaults: block zones, the .* regex, NOERROR, no fallthrough', () => {
    const [t] = parse('template IN A');
    expect(t).toMatchObject({ qclass: 1, qtype: 1, zones: ['.'], rcode: 0, fallthrough: null, ederror: null });
    expect(t!.regexes.map((r) => r.source)).toEqual(['.*']);
  });

  it('reads every option; occurrences accumulate in order', () => {
    const ts = parse(
      [
        'template ANY ANY Example.ORG 10.0.0.0/24 {',
        ' match ^a[.] "^(?P<x>b)[.]"',
        ' match c',
        ' answer "{{ .Name }} 60 IN A 10.0.0.1" "{{ .Name }} 60 IN A 10.0.0.2"',
        ' additional "x. 60 IN A 10.0.0.3"',
        ' authority "example.org. 60 IN NS ns.example.org."',
        ' rcode NXDOMAIN',
        ' ederror 21 "Blocked"',
        ' fallthrough in-addr.arpa',
        ' upstream 10.0.0.53',
        '}',
        'template IN PTR in-addr.arpa',
      ].join('\n'),
    );
    expect(ts).toHaveLength(2);
    const t = ts[0]!;
    expect(t.zones).toEqual(['example.org.', '0.0.10.in-addr.arpa.']);
    expect(t.regexes.map((r) => [r.source, r.names])).toEqual([
      ['^a[.]', ['']],
      ['^(?P<x>b)[.]', ['', 'x']],
      ['c', ['']],
    ]);
    expect(t.answer.map((a) => a.label)).toEqual(['{{.Name}} 60 IN A 10.0.0.1', '{{.Name}} 60 IN A 10.0.0.2']);
    expect(t.additional).toHaveLength(1);
    expect(t.authority).toHaveLength(1);
    expect(t).toMatchObject({
      qclass: 255,
      qtype: 255,
      rcode: 3,
      ederror: { code: 21, reason: 'Blocked' },
      fallthrough: ['in-addr.arpa.'],
    });
    expect(ts[1]).toMatchObject({ qtype: 12, zones: ['in-addr.arpa.'] });
    expect(parse('template IN A {\n fallthrough\n}')[0]!.fallthrough).toEqual(['.']);
  });

  // CoreDNS 1.15.0's wording (checked against the binary in test/differential/template.test.ts).
  const bad: [string, string, number][] = [
    ['template', "Wrong argument count or unexpected line ending after 'template'", 1],
    ['template X', 'invalid query class X', 1],
    ['template ANY', "Wrong argument count or unexpected line ending after 'ANY'", 1],
    ['template ANY X', 'invalid RR class X', 1],
    ['template in A', 'invalid query class in', 1],
    ['template IN a', 'invalid RR class a', 1],
    ['template ANY ANY {\n notavailable\n}', "Wrong argument count or unexpected line ending after 'notavailable'", 2],
    ['template ANY ANY {\n answer\n}', "Wrong argument count or unexpected line ending after 'answer'", 2],
    ['template ANY ANY {\n additional\n}', "Wrong argument count or unexpected line ending after 'additional'", 2],
    ['template ANY ANY {\n match\n}', "Wrong argument count or unexpected line ending after 'match'", 2],
    ['template ANY ANY {\n rcode\n}', "Wrong argument count or unexpected line ending after 'rcode'", 2],
    ['template ANY ANY {\n rcode NXDOMAIN extra\n}', "Wrong argument count or unexpected line ending after 'extra'", 2],
    ['template ANY ANY {\n rcode UNDEFINED\n}', 'unknown rcode UNDEFINED', 2],
    ['template ANY ANY {\n rcode nxdomain\n}', 'unknown rcode nxdomain', 2],
    [
      'template ANY ANY {\n rcode BADVERS\n}',
      "rcode BADVERS (an extended RCODE) is not supported by clusterdns's template plugin",
      2,
    ],
    [
      'template ANY ANY {\n ederror x\n}',
      'error parsing extended DNS error code x, strconv.ParseUint: parsing "x": invalid syntax',
      2,
    ],
    ['template ANY ANY {\n ederror 1 2 3\n}', "Wrong argument count or unexpected line ending after '3'", 2],
    ['template ANY ANY {\n answer "{{"\n}', 'could not compile template: {{, template: answer:1: unclosed action', 2],
    [
      'template ANY ANY {\n authority "{{ notAFunction }}"\n}',
      'could not compile template: {{ notAFunction }}, template: authority:1: function "notAFunction" not defined',
      2,
    ],
    [
      'template ANY ANY {\n answer "{{ template \\"x\\" }}"\n}',
      'could not compile template: {{ template "x" }}, template: answer:1: {{template}} (nested templates) is not supported by clusterdns',
      2,
    ],
    [
      'template ANY ANY {\n match (?=x)\n}',
      'could not parse regex: (?=x), error parsing regexp: invalid or unsupported Perl syntax: `(?=`',
      2,
    ],
    [
      'template ANY ANY {\n match (?i:x)\n}',
      'could not parse regex: (?i:x), error parsing regexp: the inline flag group `(?i:` is not supported by clusterdns (flags only at the start of the pattern)',
      2,
    ],
    [`template ANY ANY {\n match ${'a'.repeat(10001)}\n}`, 'regex pattern too long: 10001 > 10000', 2],
    ['template ANY ANY {\n var\n}', "Wrong argument count or unexpected line ending after 'var'", 2],
    ['template ANY ANY {\n var a\n}', "Wrong argument count or unexpected line ending after 'a'", 2],
    ['template ANY ANY {\n var 1a 1\n}', 'invalid variable name "1a"', 2],
    ['template ANY ANY {\n var a-b 1\n}', 'invalid variable name "a-b"', 2],
    ['template ANY ANY {\n var name 1\n}', 'variable name "name" is reserved', 2],
    ['template ANY ANY {\n var group 1\n}', 'variable name "group" is reserved', 2],
    ['template ANY ANY {\n var len 1\n}', 'variable name "len" is reserved', 2],
    ['template ANY ANY {\n var true 1\n}', 'variable name "true" is reserved', 2],
    ['template ANY ANY {\n var let 1\n}', 'variable name "let" is reserved', 2],
    ['template ANY ANY {\n var a 1\n var a 2\n}', 'variable name "a" is reserved', 3],
    ['template ANY ANY {\n var a b + 1\n var b 1\n}', 'could not compile expression: a, unknown name b (1:1)', 2],
    ['template ANY ANY {\n var a undefined\n}', 'could not compile expression: a, unknown name undefined (1:1)', 2],
    ['template ANY ANY {\n var a 1 +\n}', 'could not compile expression: a, unexpected token EOF (1:4)', 2],
    ['template ANY ANY {\n expr\n}', "Wrong argument count or unexpected line ending after 'expr'", 2],
    ['template ANY ANY {\n expr nosuch()\n}', 'could not compile expression: unknown func nosuch (1:1)', 2],
    [
      'template ANY ANY {\n expr "sortBy([1], #)"\n}',
      'could not compile expression: the built-in sortBy() is not supported by clusterdns (1:1)',
      2,
    ],
    [
      "template ANY ANY {\n expr name() matches '(?=x)'\n}",
      'could not compile expression: error parsing regexp: invalid or unsupported Perl syntax: `(?=` (1:23)',
      2,
    ],
    [
      'template ANY ANY {\n answer "{{ .Name }} 60 IN HINFO a b"\n}',
      'template "{{ .Name }} 60 IN HINFO a b": record type HINFO is not supported by clusterdns\'s template plugin (supported: A, AAAA, CNAME, DNAME, NS, PTR, MX, SRV, TXT, SPF, SOA, CAA)',
      2,
    ],
    [
      'template ANY ANY {\n answer "{{ .Message }}"\n}',
      'template "{{ .Message }}": .Message as a whole is not supported by clusterdns; use its fields (Id, Response, Opcode, Authoritative, Truncated, RecursionDesired, RecursionAvailable, Zero, AuthenticatedData, CheckingDisabled, Rcode, Question)',
      2,
    ],
    [
      'template ANY ANY {\n answer "{{ .Message.Extra }}"\n}',
      'template "{{ .Message.Extra }}": .Message.Extra is not supported by clusterdns',
      2,
    ],
  ];
  for (const [text, msg, line] of bad) {
    it(`${text.slice(0, 80).replace(/\n/g, ' ')} → ${msg.slice(0, 60)}`, () => {
      let err: unknown;
      try {
        parse(text);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).message).toBe(msg);
      expect((err as ConfigError).line).toBe(line);
    });
  }

  it('var and expr compile against the variables declared before them', () => {
    const [t] = parse(
      "template ANY ANY example. {\n match ^(?P<a>[a-z]+)[.]example[.]$\n var a group('a') + group(1) + group(0)\n var b a + 'x'\n expr b != ''\n}",
    );
    expect(t!.vars.map((v) => v.name)).toEqual(['a', 'b']);
    expect(t!.exprs).toHaveLength(1);
  });

  it('accepts what CoreDNS accepts: a template that can only fail at query time, {{ parseInt }} without arguments', () => {
    expect(() =>
      parse('template ANY ANY {\n answer "{{ .Name }} A {{ .Grup.d }}."\n additional "{{ parseInt }}"\n}'),
    ).not.toThrow();
  });
});

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  const v = m?.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
  return v?.value ?? 0;
}

describe('template over sockets', () => {
  let s: TestServer;
  const dir = mkdtempSync(join(tmpdir(), 'template-test-'));
  const hostsFile = join(dir, 'hosts');
  beforeAll(async () => {
    writeFileSync(hostsFile, '192.0.2.10 target.hosts.test\n2001:db8::10 target.hosts.test\n');
    s = await startServer(`
. {
  template IN A example {
    match "(^|[.])ip-(?P<a>[0-9]*)-(?P<b>[0-9]*)-(?P<c>[0-9]*)-(?P<d>[0-9]*)[.]example[.]$"
    answer "{{ .Name }} 60 IN A {{ .Group.a }}.{{ .Group.b }}.{{ .Group.c }}.{{ .Group.d }}"
    fallthrough
  }
  template IN ANY example {
    match "^hex-(?P<b>[0-9a-f]{2})(?P<c>[0-9a-f]{2})[.]example[.]$"
    answer "{{ .Name }} 60 IN TXT \\"{{ .Type }} {{ .Class }} {{ .Zone }} 10.{{ parseInt .Group.b 16 8 }}.{{ parseInt .Group.c 16 8 }}\\""
  }
  template IN PTR in-addr.arpa {
    match "^(?P<d>[0-9]*)[.](?P<c>[0-9]*)[.](?P<b>[0-9]*)[.](?P<a>[0-9]*)[.]in-addr[.]arpa[.]$"
    answer "{{ .Name }} 60 IN PTR ip-{{ .Group.a }}-{{ .Group.b }}-{{ .Group.c }}-{{ .Group.d }}.example."
  }
  template ANY ANY invalid {
    rcode NXDOMAIN
    authority "invalid. 60 {{ .Class }} SOA ns.invalid. hostmaster.invalid. (1 60 60 60 60)"
    ederror 21 "Blocked according to RFC2606"
  }
  template IN AAAA nov6.test {
    authority "nov6.test. 60 IN SOA ns.nov6.test. hostmaster.nov6.test. (1 60 60 60 60)"
  }
  template IN ANY fail.test {
    match ^exec[.]
    answer "{{ .Name }} 60 IN A {{ index .Match 3 }}"
    fallthrough
  }
  template IN ANY fail.test {
    match ^rr[.]
    answer "{{ .Name }} 60 IN A 10.0.0"
  }
  template IN A alias.test {
    answer "{{ .Name }} 60 IN CNAME target.hosts.test."
  }
  template IN AAAA loop.test {
    answer "{{ .Name }} 60 IN CNAME {{ .Name }}"
  }
  template IN A lan.example.com {
    match ^(?P<ip>[0-9]{1,3}(-[0-9]{1,3}){3})[.](?P<id>[a-z2-7]{4})[.]lan[.]example[.]com[.]$
    var ip replace(group('ip'), '-', '.')
    expr "any(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'], incidr(ip, #))"
    answer "{{ .Name }} 60 IN A {{ .Var.ip }}"
    fallthrough
  }
  template IN TXT vars.test {
    match ^(?P<n>[0-9]+)[.]vars[.]test[.]$
    var num int(group('n'))
    var double num * 2
    var half num / 2
    expr num > 1
    answer "{{ .Name }} 60 IN TXT \\"{{ .Var.num }} {{ .Var.double }} {{ .Var.half }} {{ len .Var }}\\""
    fallthrough
  }
  template IN TXT vars.test {
    match ^bad[.]
    var n int('x')
  }
  template IN ANY sf.test {
    rcode SERVFAIL
  }
  hosts ${hostsFile} hosts.test
  whoami
}
`);
  });
  afterAll(async () => s?.stop());

  it('the README A and PTR pair with named groups', async () => {
    const r = await udpQuery(s.port, 'x.ip-10-1-2-3.example', 'A');
    expect(rcode(r)).toBe(0);
    expect(r.flag_aa).toBe(true);
    expect(rrLines(r.answers)).toEqual(['x.ip-10-1-2-3.example. 60 IN A 10.1.2.3']);
    const p = await udpQuery(s.port, '4.3.2.1.in-addr.arpa', 'PTR');
    expect(rrLines(p.answers)).toEqual(['4.3.2.1.in-addr.arpa. 60 IN PTR ip-1-2-3-4.example.']);
  });

  it('falls through to the next template, which fails the query without fallthrough', async () => {
    const r = await udpQuery(s.port, 'hex-0a0b.example', 'A');
    expect(rrLines(r.answers)).toEqual(['hex-0a0b.example. 60 IN TXT "A IN example. 10.10.11"']);
    const any = await udpQuery(s.port, 'hex-0a0b.example', 'ANY');
    expect(rrLines(any.answers)).toEqual(['hex-0a0b.example. 60 IN TXT "ANY IN example. 10.10.11"']);
    const none = await udpQuery(s.port, 'nothing.example', 'A');
    expect(rcode(none)).toBe(2);
    expect(none.answers).toEqual([]);
  });

  it('a query outside every template zone goes to the next plugin', async () => {
    const r = await udpQuery(s.port, 'elsewhere.test', 'A');
    expect(rcode(r)).toBe(0);
    expect(r.additionals.some((a) => a.type === 'A')).toBe(true); // whoami's answer
  });

  it('rcode NXDOMAIN with a SOA in authority and an extended error', async () => {
    const r = await udpQuery(s.port, 'x.invalid', 'TXT', { edns: 1232 });
    expect(rcode(r)).toBe(3);
    expect(rrLines(r.authorities)).toEqual(['invalid. 60 IN SOA ns.invalid. hostmaster.invalid. 1 60 60 60 60']);
    const opt = r.additionals.find((a) => a.type === 'OPT') as unknown as
      | { options: { code: number; data: Buffer }[] }
      | undefined;
    expect(opt?.options.find((o) => o.code === 15)?.data.toString('latin1')).toBe(
      '\u0000\u0015Blocked according to RFC2606',
    );
  });

  it('NODATA for AAAA in a zone: no answer, the SOA in authority', async () => {
    const r = await udpQuery(s.port, 'host.nov6.test', 'AAAA');
    expect(rcode(r)).toBe(0);
    expect(r.answers).toEqual([]);
    expect(rrLines(r.authorities)).toEqual(['nov6.test. 60 IN SOA ns.nov6.test. hostmaster.nov6.test. 1 60 60 60 60']);
  });

  it('a template that fails at query time answers SERVFAIL and counts the failure', async () => {
    const labels = { zone: 'fail.test.', class: 'IN', type: 'A', section: 'answer' };
    const before = await metric('coredns_template_template_failures_total', {
      ...labels,
      template: '{{.Name}} 60 IN A {{index .Match 3}}',
    });
    const r = await udpQuery(s.port, 'exec.fail.test', 'A');
    expect(rcode(r)).toBe(2);
    expect(
      await metric('coredns_template_template_failures_total', {
        ...labels,
        template: '{{.Name}} 60 IN A {{index .Match 3}}',
      }),
    ).toBe(before + 1);
    const rrBefore = await metric('coredns_template_rr_failures_total', {
      ...labels,
      template: '{{.Name}} 60 IN A 10.0.0',
    });
    const r2 = await udpQuery(s.port, 'rr.fail.test', 'A');
    expect(rcode(r2)).toBe(2);
    expect(
      await metric('coredns_template_rr_failures_total', { ...labels, template: '{{.Name}} 60 IN A 10.0.0' }),
    ).toBe(rrBefore + 1);
    expect(
      await metric('coredns_template_matches_total', { zone: 'fail.test.', class: 'IN', type: 'A' }),
    ).toBeGreaterThanOrEqual(2);
  });

  it('var and expr: the README LAN example, arithmetic, a failed expression falls through, an evaluation error is SERVFAIL', async () => {
    const lan = await udpQuery(s.port, '192-168-1-20.abcd.lan.example.com', 'A');
    expect(rrLines(lan.answers)).toEqual(['192-168-1-20.abcd.lan.example.com. 60 IN A 192.168.1.20']);
    const pub = await udpQuery(s.port, '8-8-8-8.abcd.lan.example.com', 'A');
    expect(pub.answers.filter((a) => a.type === 'A' && a.name.includes('lan'))).toEqual([]); // fell through to whoami
    const v = await udpQuery(s.port, '5.vars.test', 'TXT');
    expect(rrLines(v.answers)).toEqual(['5.vars.test. 60 IN TXT "5 10 2.5 3"']);
    const one = await udpQuery(s.port, '1.vars.test', 'TXT');
    expect(rcode(one)).toBe(2); // expr false, no later template matches: SERVFAIL
    const bad = await udpQuery(s.port, 'bad.vars.test', 'TXT');
    expect(rcode(bad)).toBe(2);
  });

  it('rcode SERVFAIL: nothing written, the server answers SERVFAIL', async () => {
    const r = await udpQuery(s.port, 'a.sf.test', 'A');
    expect(rcode(r)).toBe(2);
    expect(r.flag_aa).toBe(false);
  });

  it('a CNAME answer to an A/AAAA query is followed through the server (here: hosts)', async () => {
    const r = await udpQuery(s.port, 'www.alias.test', 'A');
    expect(rrLines(r.answers)).toEqual([
      'www.alias.test. 60 IN CNAME target.hosts.test.',
      'target.hosts.test. 3600 IN A 192.0.2.10',
    ]);
  });

  it('a CNAME loop is answered SERVFAIL, not followed forever', async () => {
    const r = await udpQuery(s.port, 'self.loop.test', 'AAAA');
    // The nested lookup's own lookup of self.loop.test is refused as a cycle: the query fails.
    expect(rcode(r)).toBe(2);
    expect(r.answers).toEqual([]);
  });
});
