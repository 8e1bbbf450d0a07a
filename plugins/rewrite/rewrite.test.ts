/**
 * rewrite: rule parsing with CoreDNS's error texts and file:line, the Go-regex translation, the
 * handler against a fake chain (what the next plugin sees, how the reply comes back), and a real
 * server on a UDP socket (name rewrites with answers mapped back, EDNS0, the cname rule's lookup
 * through the server and its depth limit).
 */
import type { Answer } from 'dns-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { Rcode } from '../../src/dns/constants.js';
import { replyTo, setRcode, type Message } from '../../src/dns/message.js';
import { logger } from '../../src/log.js';
import type { Query } from '../../src/query.js';
import { makeQuery, rcode, udpQuery } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { seededRandom } from '../../src/util/prng.js';
import { a, FakeNext, TestUpstream } from '../../test/helpers/upstream.js';
import { dispenserFor } from '../../test/helpers/setup.js';
import { RewriteHandler } from './handler.js';
import { parseRewrite, rewrite } from './index.js';

function parse(text: string): ReturnType<typeof parseRewrite> {
  return parseRewrite(dispenserFor(text, 'rewrite'));
}

function setupError(text: string): ConfigError {
  try {
    parse(text);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error(`no error for: ${text}`);
}

describe('setup', () => {
  it('accepts every rule kind, on the line and in blocks, and several occurrences', () => {
    const rules = parse(`rewrite name exact a.example.com b.example.com
rewrite stop {
    name regex (.*)\\.example\\.com {1}.svc.cluster.local
    answer name (.*)\\.svc\\.cluster\\.local {1}.example.com
    answer value (.*)\\.svc\\.cluster\\.local {1}.example.com
}
rewrite continue name suffix .corp. .svc.cluster.local. answer auto
rewrite name prefix a b
rewrite name substring x y
rewrite type ANY HINFO
rewrite class CH IN
rewrite ttl example.com 30-300
rewrite continue { ttl regex (.*)\\.example\\.com -30 }
rewrite rcode exact a.example.com SERVFAIL 0
rewrite edns0 local set 0xffee 0x61626364
rewrite edns0 local append 0xffee {client_ip} revert
rewrite edns0 local unset 0xffee
rewrite edns0 nsid set
rewrite edns0 subnet set 24 56
rewrite edns0 subnet unset
rewrite cname regex (.*)\\.cdn\\.example\\.net\\. {1}.other.cdn.com.
rewrite cname exact a. b.`);
    expect(rules.map((r) => r.mode)).toEqual([
      'stop',
      'stop',
      'continue',
      'stop',
      'stop',
      'stop',
      'stop',
      'stop',
      'continue',
      ...new Array<string>(9).fill('stop'),
    ]);
  });

  it.each([
    ['rewrite', 'no rule type specified for rewrite'],
    ['rewrite foo a b', 'invalid rule type "foo"'],
    ['rewrite stop foo a b', 'invalid rule type "stop"'],
    ['rewrite continue', 'continue rule must begin with a rule type'],
    ['rewrite answer name a b', 'response rewrites must begin with a name rule'],
    ['rewrite name a', 'too few arguments for a name rule'],
    [
      'rewrite name glob a b',
      'name rule supports only exact, prefix, suffix, substring, and regex name matching, received: glob',
    ],
    ['rewrite name regex (.*\\.example {1}', 'invalid regex matching pattern: (.*\\.example'],
    [
      'rewrite name regex (a)\\.x {1}.{2}.y',
      'the rewrite regex pattern ({1}.{2}.y) uses more subexpressions than its corresponding matching regex pattern ((a)\\.x)',
    ],
    ['rewrite name regex (.*) {1} answer', 'invalid arguments for regex rule'],
    ['rewrite name regex (.*) {1} answer frob a b', 'invalid type "frob" for answer rule for regex rule'],
    ['rewrite name regex (.*) {1} answer name a', 'name answer rule for regex rule: 2 arguments required'],
    [
      'rewrite name regex (.*) {1} answer auto answer name a b',
      'auto name answer rule cannot be combined with explicit name anwer rules',
    ],
    [
      'rewrite name regex (.*) {1} extra x',
      'exceeded the number of arguments for a non-answer rule argument for regex rule',
    ],
    [
      'rewrite name regex (.*) {1} answer name ((a b',
      'name answer rule for regex rule: invalid regex matching pattern: ((a',
    ],
    ['rewrite name exact a b metadata', 'metadata is only supported for regex name rules'],
    ['rewrite type A', 'type rules must have exactly two arguments'],
    ['rewrite type A nope', 'invalid type "NOPE"'],
    ['rewrite class IN XX', 'invalid class "XX"'],
    ['rewrite ttl a.example.com 30-10', "invalid TTL '30-10' for a ttl rule"],
    ['rewrite ttl a.example.com -', "invalid TTL '-' for a ttl rule"],
    ['rewrite ttl a', 'too few (1) arguments for a ttl rule'],
    [
      'rewrite ttl glob a.example.com 10',
      'ttl rule supports only exact, prefix, suffix, substring, and regex name matching',
    ],
    ['rewrite ttl regex (.* 10', 'invalid regex pattern in a ttl rule: (.*'],
    ['rewrite rcode a.example.com NOPE NOERROR', "invalid matching RCODE 'NOPE' for a rcode rule"],
    ['rewrite rcode a.example.com SERVFAIL 99', "invalid replacement RCODE '99' for a rcode rule"],
    ['rewrite rcode a SERVFAIL', 'too few (2) arguments for a rcode rule'],
    ['rewrite edns0 local', 'too few arguments for an EDNS0 rule'],
    ['rewrite edns0 local frob 0xffee a', 'invalid action: "frob"'],
    ['rewrite edns0 local set 0xffee', 'EDNS0 local rules require three or four args'],
    ['rewrite edns0 local set zz a', 'strconv.ParseUint: parsing "zz": invalid syntax'],
    ['rewrite edns0 local set 0x1ffff a', 'strconv.ParseUint: parsing "0x1ffff": value out of range'],
    ['rewrite edns0 local set 0xffee 0xzz', "encoding/hex: invalid byte: U+007A 'z'"],
    ['rewrite edns0 local set 0xffee {nope}', 'unsupported variable name "{nope}"'],
    ['rewrite edns0 local unset', 'local unset action requires exactly two arguments'],
    ['rewrite edns0 nsid set extra', 'EDNS0 NSID rules can accept no more than one arg'],
    ['rewrite edns0 subnet set 33 56', 'invalid IPv4 bit mask length 33'],
    ['rewrite edns0 subnet set 24 129', 'invalid IPv6 bit mask length 129'],
    ['rewrite edns0 frob set', 'invalid rule type "frob"'],
    ['rewrite cname a', 'too few (1) arguments for a cname rule'],
    ['rewrite cname glob a b', 'unknown cname rewrite type: glob'],
    ['rewrite cname regex (a b', 'invalid cname rewrite regex pattern: error parsing regexp: missing closing ): `(a`'],
  ])('%s → %s', (text, message) => {
    const e = setupError(`rewrite name a b\nrewrite type A AAAA\n${text}`);
    expect(e.message).toBe(message);
    expect(e.plugin).toBe('rewrite');
    expect(`${e.file}:${e.line}`).toBe('Corefile:3');
  });

  it('names the line inside a block where the rule starts, and the second occurrence on its own line', () => {
    const e = setupError(
      'rewrite name a b\nrewrite stop {\n    name regex (.*)\\.a {1}.b\n    answer name (.*)\\.b\n}',
    );
    expect(e.message).toBe('name answer rule for regex rule: 2 arguments required');
    expect(e.line).toBe(3);
    expect(e.describe()).toBe(
      'plugin/rewrite: Corefile:3 - Error during parsing: name answer rule for regex rule: 2 arguments required',
    );
  });

  it('declares the block keywords its README documents', () => {
    expect(rewrite.options?.options.map((o) => o.name)).toEqual([
      'name',
      'answer',
      'type',
      'class',
      'edns0',
      'ttl',
      'rcode',
      'cname',
    ]);
  });
});

/** Answer `q` with A records for its own name (lower-cased), plus what `extra` adds. */
function answerA(q: Query, ip = '10.0.0.1', extra?: (m: Message) => void): number {
  const m = replyTo(q.request, 0, true);
  m.answers = [a(q.lname, ip, 60)];
  extra?.(m);
  q.write(m, 'fake');
  return Rcode.NOERROR;
}

function handler(text: string, next: FakeNext): RewriteHandler {
  return new RewriteHandler(parse(text), next, null, logger('rewrite'));
}

describe('handler', () => {
  it('a query no rule matches reaches the next plugin as it is, and so does its reply', async () => {
    const next = new FakeNext((q) => answerA(q));
    const q = makeQuery('Other.example.org.', 'A');
    await handler('rewrite name exact a.example.com b.example.com\nrewrite ttl regex ^c\\. 5', next).serve(q);
    expect(next.seen[0]).toBe(q);
    expect(q.reply?.plugin).toBe('fake');
  });

  it('exact: the next plugin sees the new name; the client gets its question and the old name back (lower case)', async () => {
    const next = new FakeNext((q) => answerA(q));
    const q = makeQuery('A.Example.com.', 'A');
    await handler('rewrite name exact a.example.com b.example.org', next).serve(q);
    expect(next.seen[0]!.name).toBe('b.example.org.');
    expect(next.seen[0]!.id).toBe(q.id);
    const m = q.reply!.peek();
    expect(m.questions[0]!.name).toBe('A.Example.com');
    expect(rrLines(m.answers)).toEqual(['a.example.com. 60 IN A 10.0.0.1']);
  });

  it('regex with groups and answer value: SRV targets mapped back, rules in reverse order', async () => {
    const next = new FakeNext((q) =>
      answerA(q, '10.0.0.2', (m) => {
        m.answers = [
          {
            name: q.lname.slice(0, -1),
            type: 'SRV',
            ttl: 5,
            data: { priority: 0, weight: 100, port: 80, target: 'web.ns.svc.cluster.local' },
          },
        ];
      }),
    );
    const q = makeQuery('_http._tcp.web.corp.', 'SRV');
    await handler(
      'rewrite stop {\n  name regex (.*)\\.corp\\. {1}.ns.svc.cluster.local\n  answer name (.*)\\.ns\\.svc\\.cluster\\.local\\. {1}.corp\n  answer value (.*)\\.ns\\.svc\\.cluster\\.local\\. {1}.corp\n}',
      next,
    ).serve(q);
    expect(next.seen[0]!.name).toBe('_http._tcp.web.ns.svc.cluster.local.');
    expect(rrLines(q.reply!.peek().answers)).toEqual(['_http._tcp.web.corp. 5 IN SRV 0 100 80 web.corp.']);
  });

  it('continue applies later rules to the rewritten question; stop ends the list', async () => {
    const next = new FakeNext((q) => answerA(q));
    const q = makeQuery('a.one.', 'AAAA');
    await handler(
      'rewrite continue name suffix .one. .two.\nrewrite name suffix .two. .three.\nrewrite type AAAA A',
      next,
    ).serve(q);
    expect(next.seen[0]!.name).toBe('a.three.');
    expect(next.seen[0]!.qtype).toBe(28);
  });

  it('a name that is no domain name after the rewrite: SERVFAIL with the error, nothing passed on', async () => {
    const next = new FakeNext((q) => answerA(q));
    const q = makeQuery('x.example.', 'A');
    const rc = await handler(`rewrite name regex (.*)\\.example\\. ${'{1}'.repeat(70)}.example.`, next).serve(q);
    expect(rc).toBe(Rcode.SERVFAIL);
    expect(q.error?.message).toMatch(/^invalid name after rewrite: x{70}\.example\.$/);
    expect(next.calls).toBe(0);
  });

  it('an unwritten failure below a matched rule becomes a written reply the rules apply to', async () => {
    const next = new FakeNext(() => Rcode.SERVFAIL);
    const q = makeQuery('a.example.', 'A');
    const rc = await handler('rewrite rcode a.example. SERVFAIL NXDOMAIN', next).serve(q);
    expect(rc).toBe(Rcode.NOERROR);
    expect(rcode(q.reply!.peek())).toBe(Rcode.NXDOMAIN);
  });

  it('ttl ranges clamp every section; rcode rewrites the written code', async () => {
    const next = new FakeNext((q) =>
      answerA(q, '10.0.0.1', (m) => {
        m.answers.push(a('b.example', '10.0.0.3', 5000));
        setRcode(m, Rcode.NOERROR);
      }),
    );
    const q = makeQuery('a.example.', 'A');
    await handler('rewrite continue { ttl a.example. 100-1000 }\nrewrite rcode a.example. NOERROR REFUSED', next).serve(
      q,
    );
    const m = q.reply!.peek();
    expect(rrLines(m.answers)).toEqual(['a.example. 100 IN A 10.0.0.1', 'b.example. 1000 IN A 10.0.0.3']);
    expect(rcode(m)).toBe(Rcode.REFUSED);
  });

  it('edns0: the next plugin sees the options; an OPT-less reply carries the local option, not reverted ones', async () => {
    const next = new FakeNext((q) => answerA(q));
    const q = makeQuery('a.example.', 'A');
    await handler(
      'rewrite continue { edns0 local set 0xffee hello }\nrewrite continue { edns0 local set 0xffef gone revert }\nrewrite edns0 subnet set 24 56',
      next,
    ).serve(q);
    const sent = next.seen[0]!;
    expect(sent.req.edns?.udpSize).toBe(4096);
    const opts = (
      sent.request.additionals.find((r) => r.type === 'OPT') as unknown as { options: { code: number; data: Buffer }[] }
    ).options;
    expect(opts.map((o) => [o.code, o.data.toString('hex')])).toEqual([
      [0xffee, '68656c6c6f'],
      [0xffef, '676f6e65'],
      [8, '000118000af402'],
    ]);
    const opt = q.reply!.peek().additionals.find((r) => r.type === 'OPT') as unknown as {
      udpPayloadSize: number;
      options: { code: number }[];
    };
    expect(opt.udpPayloadSize).toBe(4096);
    expect(opt.options.map((o) => o.code)).toEqual([0xffee]);
  });
});

describe("CoreDNS's TestRewrite table: what the next plugin is asked", () => {
  const rules = `rewrite stop name from.nl. to.nl.
rewrite stop name regex (core)\\.(dns)\\.(rocks)\\.(nl) {2}.{1}.{3}.{4} answer name (dns)\\.(core)\\.(rocks)\\.(nl) {2}.{1}.{3}.{4}
rewrite stop name exact from.exact.nl. to.nl.
rewrite stop name prefix prefix to
rewrite stop name suffix .suffix. .nl.
rewrite stop name substring from.substring to
rewrite stop name regex (f.*m)\\.regex\\.(nl) to.{2}
rewrite continue name regex consul\\.(rocks) core.dns.{1}
rewrite stop name core.dns.rocks to.nl.
rewrite continue class HS CH
rewrite stop class CH IN
rewrite stop type ANY HINFO`;
  it.each([
    ['from.nl.', 'A', 'IN', 'to.nl.', 1, 1],
    ['a.nl.', 'A', 'IN', 'a.nl.', 1, 1],
    ['a.nl.', 'A', 'CH', 'a.nl.', 1, 1],
    ['a.nl.', 'ANY', 'IN', 'a.nl.', 13, 1],
    ['from.nl.', 'ANY', 'IN', 'to.nl.', 255, 1],
    ['from.exact.nl.', 'A', 'IN', 'to.nl.', 1, 1],
    ['prefix.nl.', 'A', 'IN', 'to.nl.', 1, 1],
    ['to.suffix.', 'A', 'IN', 'to.nl.', 1, 1],
    ['from.substring.nl.', 'A', 'IN', 'to.nl.', 1, 1],
    ['from.regex.nl.', 'A', 'IN', 'to.nl.', 1, 1],
    ['consul.rocks.', 'A', 'IN', 'to.nl.', 1, 1],
    ['a.nl.', 'ANY', 'CH', 'a.nl.', 255, 1],
    ['a.nl.', 'ANY', 'HS', 'a.nl.', 255, 1],
    ['core.dns.rocks.nl.', 'A', 'IN', 'dns.core.rocks.nl.', 1, 1],
  ] as const)('%s %s %s → %s %i %i', async (name, type, klass, toName, toType, toClass) => {
    const next = new FakeNext((q) => answerA(q));
    await handler(rules, next).serve(makeQuery(name, type, { class: klass }));
    const seen = next.seen[0]!;
    expect([seen.name, seen.qtype, seen.qclass]).toEqual([toName, toType, toClass]);
  });
});

describe("CoreDNS's TestValueResponseReverter table: names in record data mapped back", () => {
  const RULES = [
    'rewrite stop name regex (.*)\\.domain\\.uk {1}.cluster.local answer name (.*)\\.cluster\\.local {1}.domain.uk answer value (.*)\\.cluster\\.local {1}.domain.uk',
    'rewrite continue name regex (.*)\\.domain\\.uk {1}.cluster.local answer name (.*)\\.cluster\\.local {1}.domain.uk answer value (.*)\\.cluster\\.local {1}.domain.uk',
    'rewrite stop name suffix .domain.uk .cluster.local answer auto answer value (.*)\\.cluster\\.local {1}.domain.uk',
    'rewrite continue name suffix .domain.uk .domain.us answer auto\nrewrite stop name suffix .domain.us .cluster.local answer auto',
  ];
  const owner = 'my.cluster.local';
  const CASES: [string, Answer, string][] = [
    [
      'SRV',
      {
        name: owner,
        type: 'SRV',
        ttl: 5,
        data: { priority: 0, weight: 100, port: 100, target: 'srv1.my.cluster.local' },
      },
      'srv1.my.domain.uk',
    ],
    ['ANY', { name: owner, type: 'CNAME', ttl: 3600, data: 'cname.cluster.local' }, 'cname.domain.uk'],
    ['ANY', { name: owner, type: 'DNAME', ttl: 3600, data: 'dname.cluster.local' }, 'dname.domain.uk'],
    [
      'MX',
      { name: owner, type: 'MX', ttl: 3600, data: { preference: 1, exchange: 'mx1.cluster.local' } },
      'mx1.domain.uk',
    ],
    ['ANY', { name: owner, type: 'NS', ttl: 3600, data: 'ns1.cluster.local' }, 'ns1.domain.uk'],
    [
      'SOA',
      {
        name: owner,
        type: 'SOA',
        ttl: 1800,
        data: {
          mname: 'ns1.cluster.local',
          rname: 'admin.cluster.local',
          serial: 1502165581,
          refresh: 14400,
          retry: 3600,
          expire: 604800,
          minimum: 14400,
        },
      },
      'ns1.domain.uk',
    ],
    [
      'NAPTR',
      {
        name: owner,
        type: 'NAPTR',
        ttl: 100,
        data: {
          order: 100,
          preference: 10,
          flags: 'S',
          services: 'SIP+D2U',
          regexp: '!^.*$!sip:customer-service@example.com!',
          replacement: '_sip._udp.cluster.local',
        },
      } as Answer,
      '_sip._udp.domain.uk',
    ],
  ];
  const valueOf = (rr: Answer): unknown => {
    const d = (rr as { data: unknown }).data;
    if (typeof d === 'string') return d;
    const o = d as { target?: string; exchange?: string; mname?: string; replacement?: string };
    return o.target ?? o.exchange ?? o.mname ?? o.replacement;
  };
  for (const [r, rules] of RULES.entries()) {
    it.each(CASES)(`rules ${r}: %s %j → value %s`, async (qtype, rr, value) => {
      const next = new FakeNext((q) =>
        answerA(q, '10.0.0.1', (m) => {
          m.answers = [rr];
          m.additionals = [a(`${value.split('.')[0]}.cluster.local`, '10.0.0.1', 5)];
        }),
      );
      const q = makeQuery('my.domain.uk.', qtype);
      await handler(rules, next).serve(q);
      expect(next.seen[0]!.name).toBe('my.cluster.local.');
      const m = q.reply!.peek();
      expect(m.questions[0]!.name).toBe('my.domain.uk');
      expect(m.answers[0]!.name).toBe('my.domain.uk');
      expect(valueOf(m.answers[0]!)).toBe(value);
      if (r !== 3) expect(m.additionals[0]!.name).toBe(`${value.split('.')[0]}.domain.uk`);
    });
  }
});

describe('bad input', () => {
  it('random names through every rule kind: an answer or SERVFAIL, never an exception', async () => {
    const rnd = seededRandom(15);
    const h = handler(
      `rewrite continue name regex (.*)\\.(a|b)\\. {1}{1}{1}{1}.{2}.x. answer auto
rewrite continue name substring . ..
rewrite continue name prefix a z answer auto
rewrite continue { edns0 local set 0xffee {qname} revert }
rewrite continue { edns0 subnet set 24 56 }
rewrite continue { ttl regex .* 1-2 }
rewrite continue { rcode regex .* NOERROR SERVFAIL }
rewrite continue type A TXT
rewrite stop {
    name suffix .x. .y. answer auto
    answer value (.*) {1}{1}
}`,
      new FakeNext((q) =>
        answerA(q, '10.0.0.1', (m) => {
          m.answers.push({ name: q.lname.slice(0, -1) || '.', type: 'CNAME', ttl: 9, data: `${q.lname}cname.example` });
        }),
      ),
    );
    const alphabet = 'ab.xyz-\\09';
    for (let i = 0; i < 2000; i++) {
      let name = '';
      const len = 1 + Math.floor(rnd() * 70);
      for (let j = 0; j < len; j++) name += alphabet[Math.floor(rnd() * alphabet.length)]!;
      name = name.replace(/\.\.+/g, '.').replace(/^\./, '');
      if (!name || name.split('.').some((l) => l.length > 63)) continue;
      let q: Query;
      try {
        q = makeQuery(name, rnd() < 0.5 ? 'A' : 'AAAA', rnd() < 0.5 ? { edns: 1232 } : {});
      } catch {
        continue; // not a query the server would accept
      }
      const rc = await h.serve(q);
      expect(rc === Rcode.SERVFAIL || q.reply !== null).toBe(true);
    }
  });
});

describe('through a server', () => {
  let up: TestUpstream;
  let srv: TestServer;
  beforeAll(async () => {
    up = await TestUpstream.start();
    up.on('svc1.testns.svc.cluster.local', { answers: [a('svc1.testns.svc.cluster.local', '10.96.0.11', 30)] });
    up.on('app.example.net', {
      answers: [
        { name: 'app.example.net', type: 'CNAME', ttl: 200, data: 'app.cdn.example.net' },
        a('app.cdn.example.net', '192.0.2.1'),
      ],
    });
    up.on('app.other.cdn.com', { answers: [a('app.other.cdn.com', '198.51.100.1', 100)] });
    up.on('loop.example.net', {
      answers: [{ name: 'loop.example.net', type: 'CNAME', ttl: 60, data: 'loop.cdn.example.net' }],
    });
    up.on('loop.other.cdn.com', {
      answers: [{ name: 'loop.other.cdn.com', type: 'CNAME', ttl: 60, data: 'loop.cdn.example.net' }],
    });
    srv = await startServer(`. {
  rewrite continue name regex (.*)\\.corp\\.example {1}.testns.svc.cluster.local answer auto
  rewrite cname regex (.*)\\.cdn\\.example\\.net\\. {1}.other.cdn.com.
  forward . ${up.addr}
}
`);
  });
  afterAll(async () => {
    await srv?.stop();
    await up?.stop();
  });

  it('answers a rewritten name under the name asked, in lower case', async () => {
    const m = await udpQuery(srv.port, 'SVC1.corp.example', 'A');
    expect(m.questions[0]!.name).toBe('SVC1.corp.example');
    expect(rrLines(m.answers)).toEqual(['svc1.corp.example. 30 IN A 10.96.0.11']);
    expect(up.count('svc1.testns.svc.cluster.local')).toBeGreaterThan(0);
  });

  it('a reload with a bad rule keeps the old rules serving', async () => {
    const text = srv.corefilePath;
    expect(text).toBeTruthy();
    const ok = await srv.reload(`. {\n  rewrite name regex (.*\\.corp {1}.x\n  forward . ${up.addr}\n}\n`);
    expect(ok).toBe(false);
    expect(srv.logs.some((l) => l.includes('invalid regex matching pattern: (.*\\.corp'))).toBe(true);
    const m = await udpQuery(srv.port, 'svc1.corp.example', 'A');
    expect(rrLines(m.answers)).toEqual(['svc1.corp.example. 30 IN A 10.96.0.11']);
  });

  it('cname: the CNAME target rewritten and looked up through the server', async () => {
    const m = await udpQuery(srv.port, 'app.example.net', 'A');
    expect(rrLines(m.answers)).toEqual([
      'app.example.net. 200 IN CNAME app.other.cdn.com.',
      'app.other.cdn.com. 100 IN A 198.51.100.1',
    ]);
  });

  it('cname: a target that keeps rewriting to itself stops after the depth limit', async () => {
    const m = await udpQuery(srv.port, 'loop.example.net', 'A');
    expect(rrLines(m.answers)).toEqual([
      'loop.example.net. 60 IN CNAME loop.other.cdn.com.',
      ...new Array<string>(8).fill('loop.other.cdn.com. 60 IN CNAME loop.other.cdn.com.'),
      'loop.other.cdn.com. 60 IN CNAME loop.cdn.example.net.',
    ]);
    expect(up.count('loop.other.cdn.com')).toBe(9);
  });
});
