import type { Answer } from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { dns64, embed } from './index.js';
import * as metrics from './metrics.js';
import { parsePrefix } from './setup.js';
import { Flag, Qtype } from '../../src/dns/constants.js';
import { decode, replyTo, setFlag, setRcode, type Message } from '../../src/dns/message.js';
import { makeQuery, rcode } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { configError, dispenserFor, setupContext as fakeSetupContext, handlerOf } from '../../test/helpers/setup.js';
import { FakeNext } from '../../test/helpers/upstream.js';
import type { Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';

const TOKEN = { text: '', file: 'Corefile', line: 1, endLine: 1, quoted: false };

function setupErr(text: string): string {
  return configError(() => dns64.setup(dispenserFor(text, 'dns64'), fakeSetupContext()), text).describe();
}

describe('dns64: setup', () => {
  it.each([
    [
      'dns64 10.0.0.0/8',
      'plugin/dns64: Corefile:1 - Error during parsing: invalid netmask 32 IPv6 address: "10.0.0.0/8"',
    ],
    [
      'dns64 10.1.2.3/8',
      'plugin/dns64: Corefile:1 - Error during parsing: invalid netmask 32 IPv6 address: "10.0.0.0/8"',
    ],
    ['dns64 64:ff9b::/95', 'plugin/dns64: Corefile:1 - Error during parsing: invalid prefix length "64:ff9b::/95"'],
    [
      'dns64 2001:db8:1:2:3::/33',
      'plugin/dns64: Corefile:1 - Error during parsing: invalid prefix length "2001:db8::/33"',
    ],
    ['dns64 foo', 'plugin/dns64: Corefile:1 - Error during parsing: invalid CIDR address: foo'],
    [
      'dns64 a b',
      "plugin/dns64: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'b'",
    ],
    [
      'dns64 {\n prefix\n}',
      "plugin/dns64: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'prefix'",
    ],
    [
      'dns64 {\n prefix 64:ff9b::/100\n}',
      'plugin/dns64: Corefile:2 - Error during parsing: invalid prefix length "64:ff9b::/100"',
    ],
    ['dns64 {\n bogus\n}', "plugin/dns64: Corefile:2 - Error during parsing: unknown property 'bogus'"],
  ])('%j', (text, message) => {
    expect(setupErr(text)).toBe(message);
  });

  it('accepts the six RFC 6052 lengths', () => {
    for (const n of [32, 40, 48, 56, 64, 96]) expect(parsePrefix(`2001:db8::/${n}`, TOKEN).length).toBe(n);
  });
});

describe('dns64: RFC 6052 embedding', () => {
  // RFC 6052 §2.4, the address 192.0.2.33 under each prefix length.
  it.each([
    ['2001:db8::/32', '2001:db8:c000:221::'],
    ['2001:db8:100::/40', '2001:db8:1c0:2:21::'],
    ['2001:db8:122::/48', '2001:db8:122:c000:2:2100::'],
    ['2001:db8:122:300::/56', '2001:db8:122:3c0:0:221::'],
    ['2001:db8:122:344::/64', '2001:db8:122:344:c0:2:2100:0'],
    ['2001:db8:122:344::/96', '2001:db8:122:344::c000:221'],
    ['64:ff9b::/96', '64:ff9b::c000:221'],
  ])('%s', (prefix, expected) => {
    const p = parsePrefix(prefix, TOKEN);
    expect(embed(p.prefix, p.length, '192.0.2.33')).toBe(expected);
  });
});

const SOA: Answer = {
  name: 'example.org',
  type: 'SOA',
  class: 'IN',
  ttl: 30,
  data: { mname: 'ns.example.org', rname: 'h.example.org', serial: 1, refresh: 1, retry: 1, expire: 1, minimum: 30 },
};

/** A chain below dns64 that answers per qtype with `answers[type](reply)`. */
function chain(answers: Partial<Record<'A' | 'AAAA', (m: Message) => void>>, failA?: number): FakeNext {
  return new FakeNext((q: Query) => {
    if (q.qtype === Qtype.A && failA !== undefined) return failA;
    const m = replyTo(q.request);
    answers[q.qtype === Qtype.A ? 'A' : 'AAAA']?.(m);
    q.write(m, 'fake');
    return 0;
  });
}

async function run(text: string, next: FakeNext, q: Query): Promise<{ rc: number; m: Message | null }> {
  const h: Handler = handlerOf(dns64, text, next);
  const rc = await h.serve(q);
  return { rc, m: q.reply ? decode(q.reply.wire()) : null };
}

const v6 = { transport: { family: 2 as const, remoteAddress: '2001:db8::99' } };

describe('dns64: handler', () => {
  it('synthesizes AAAA from the A records when the AAAA reply has none; TTL capped by the SOA', async () => {
    const next = chain({
      AAAA: (m) => {
        m.authorities = [SOA];
      },
      A: (m) => {
        m.answers = [
          { name: 'www.example.org', type: 'CNAME', class: 'IN', ttl: 300, data: 'host.example.org' },
          { name: 'host.example.org', type: 'A', class: 'IN', ttl: 300, data: '192.0.2.33' },
          { name: 'host.example.org', type: 'A', class: 'IN', ttl: 10, data: '192.0.2.34' },
        ];
      },
    });
    const before = (await metrics.translated.get()).values.find((v) => v.labels.server === 'dns://:53')?.value ?? 0;
    const { rc, m } = await run('dns64', next, makeQuery('www.example.org', 'AAAA', v6));
    expect(rc).toBe(0);
    expect(rrLines(m!.answers)).toEqual([
      'www.example.org. 300 IN CNAME host.example.org.',
      'host.example.org. 30 IN AAAA 64:ff9b::c000:221',
      'host.example.org. 10 IN AAAA 64:ff9b::c000:222',
    ]);
    expect(m!.questions[0]).toMatchObject({ name: 'www.example.org', type: 'AAAA' });
    expect(next.seen.map((q) => q.qtype)).toEqual([Qtype.AAAA, Qtype.A]);
    expect((await metrics.translated.get()).values.find((v) => v.labels.server === 'dns://:53')?.value).toBe(
      before + 1,
    );
  });

  it('without a SOA the TTL is capped at 600', async () => {
    const next = chain({
      A: (m) => {
        m.answers = [{ name: 'a.example.org', type: 'A', class: 'IN', ttl: 3600, data: '192.0.2.1' }];
      },
    });
    const { m } = await run('dns64', next, makeQuery('a.example.org', 'AAAA', v6));
    expect(rrLines(m!.answers)).toEqual(['a.example.org. 600 IN AAAA 64:ff9b::c000:201']);
  });

  it('keeps the A reply RCODE, TC, authority and additional sections', async () => {
    const next = chain({
      A: (m) => {
        setRcode(m, 2);
        setFlag(m, Flag.TC, true);
        m.authorities = [SOA];
        m.additionals = [{ name: 'ns.example.org', type: 'A', class: 'IN', ttl: 5, data: '192.0.2.53' }];
      },
    });
    const { m } = await run('dns64', next, makeQuery('a.example.org', 'AAAA', v6));
    expect(rcode(m!)).toBe(2);
    expect(m!.flag_tc).toBe(true);
    expect(m!.authorities).toHaveLength(1);
    expect(rrLines(m!.additionals)).toEqual(['ns.example.org. 5 IN A 192.0.2.53']);
  });

  it('an A lookup that fails without a reply gives that RCODE', async () => {
    const { rc, m } = await run('dns64', chain({}, 5), makeQuery('a.example.org', 'AAAA', v6));
    expect(rc).toBe(0);
    expect(rcode(m!)).toBe(5);
    expect(m!.answers).toEqual([]);
  });

  it('leaves NXDOMAIN, AAAA answers, other types and IPv4 clients alone', async () => {
    const nx = chain({
      AAAA: (m) => {
        setRcode(m, 3);
      },
    });
    expect(rcode((await run('dns64', nx, makeQuery('nx.example.org', 'AAAA', v6))).m!)).toBe(3);
    expect(nx.calls).toBe(1);
    const has = chain({
      AAAA: (m) => {
        m.answers = [{ name: 'a.example.org', type: 'AAAA', class: 'IN', ttl: 5, data: '2001:db8::1' }];
      },
    });
    expect(rrLines((await run('dns64', has, makeQuery('a.example.org', 'AAAA', v6))).m!.answers)).toEqual([
      'a.example.org. 5 IN AAAA 2001:db8::1',
    ]);
    expect(has.calls).toBe(1);
    const a = chain({});
    await run('dns64', a, makeQuery('a.example.org', 'A', v6));
    expect(a.calls).toBe(1);
    const v4client = chain({});
    await run('dns64', v4client, makeQuery('a.example.org', 'AAAA'));
    expect(v4client.calls).toBe(1);
  });

  it('translate_all translates even with AAAA answers; allow_ipv4 serves IPv4 clients', async () => {
    const next = chain({
      AAAA: (m) => {
        m.answers = [{ name: 'a.example.org', type: 'AAAA', class: 'IN', ttl: 5, data: '2001:db8::1' }];
      },
      A: (m) => {
        m.answers = [{ name: 'a.example.org', type: 'A', class: 'IN', ttl: 5, data: '192.0.2.1' }];
      },
    });
    const { m } = await run(
      'dns64 {\n prefix 2001:db8:64::/48\n translate_all\n allow_ipv4\n}',
      next,
      makeQuery('a.example.org', 'AAAA'),
    );
    expect(rrLines(m!.answers)).toEqual(['a.example.org. 5 IN AAAA 2001:db8:64:c000:2:100::']);
  });
});
