/**
 * autopath: setup parsing (docs/plugins.md, autopath), the search walk against a fake chain, CNAME
 * synthesis, and the resolv.conf-file variant through a real in-process server and upstream.
 * (`@kubernetes` with real pods is exercised in test/resolver/.)
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Answer } from 'dns-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rcode } from '../../src/dns/constants.js';
import { replyTo, setRcode, type Message } from '../../src/dns/message.js';
import { registry } from '../../src/metrics/registry.js';
import type { PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { SEARCH_PATH } from '../../src/searchpath.js';
import { makeQuery, rcode, TEST_TRANSPORT, udpQuery } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { dispenserFor, TestInstance } from '../../test/helpers/setup.js';
import { a, FakeNext, soa, TestUpstream } from '../../test/helpers/upstream.js';
import { autopath } from './index.js';
import { AutopathHandler, cnamer } from './handler.js';
import { parseAutopath } from './setup.js';
import { resolvConfSearch } from '../../src/util/resolvconf.js';

const dir = mkdtempSync(join(tmpdir(), 'autopath-test-'));
const RESOLV = join(dir, 'resolv.conf');
writeFileSync(
  RESOLV,
  'nameserver 10.0.0.2\nsearch Default.svc.cluster.local. svc.cluster.local cluster.local\noptions ndots:5\n',
);

describe('setup', () => {
  it('reads the search list of a resolv.conf file, normalised, plus the empty element; zones default to the block', () => {
    const cfg = parseAutopath(dispenserFor(`autopath ${RESOLV}`), ['cluster.local.']);
    expect(cfg).toEqual({
      zones: ['cluster.local.'],
      plugin: null,
      search: ['default.svc.cluster.local.', 'svc.cluster.local.', 'cluster.local.', ''],
    });
  });

  it('takes @PLUGIN and explicit zones', () => {
    expect(parseAutopath(dispenserFor('autopath cluster.local. Example.ORG @kubernetes'), ['.'])).toEqual({
      zones: ['cluster.local.', 'example.org.'],
      plugin: 'kubernetes',
      search: [],
    });
  });

  it.each([
    ['autopath', /no resolv-conf specified/],
    [
      'autopath /nonexistent/resolv.conf',
      /failed to parse "\/nonexistent\/resolv.conf": open \/nonexistent\/resolv.conf: no such file or directory/,
    ],
  ])('%s → error', (text, re) => {
    expect(() => parseAutopath(dispenserFor(text), ['.'])).toThrow(re);
  });

  it('resolv.conf: the last search/domain line wins', () => {
    expect(resolvConfSearch('search a b\ndomain c.example\n')).toEqual(['c.example.']);
    expect(resolvConfSearch('domain c\nsearch A.b. d\n')).toEqual(['a.b.', 'd.']);
    expect(resolvConfSearch('nameserver 1.1.1.1\n')).toEqual([]);
  });

  /** A handler plugin that offers no search path (as whoami). */
  const whoami: PluginDef = {
    name: 'whoami',
    repeat: 'error',
    setup: () => (next) => ({ name: 'whoami', serve: (q) => next!.serve(q) }),
  };

  it('@PLUGIN naming a plugin of the block without search-path support fails at startup; an absent one does nothing (CoreDNS 1.15.0)', async () => {
    const block = new TestInstance().block({ zones: ['.'] });
    await block.setup(autopath, 'autopath @whoami');
    await block.setup(whoami, 'whoami');
    block.seal();
    await expect(block.instance.start()).rejects.toThrow(
      'plugin/autopath: whoami does not implement the AutoPather interface',
    );
    const alone = new TestInstance().block({ zones: ['.'] });
    const factory = await alone.setup(autopath, 'autopath @kubernetes');
    alone.seal();
    await alone.instance.start();
    const next = new FakeNext((q) => answer(q, Rcode.NXDOMAIN));
    await factory!(next, alone.runtime.info).serve(makeQuery('x.default.svc.cluster.local.', 'A'));
    expect(next.seen.map((q) => q.name)).toEqual(['x.default.svc.cluster.local.']);
  });

  it.each(['before', 'after'])(
    "@kubernetes: the search path is the capability the block's kubernetes offers (set up %s autopath)",
    async (order) => {
      const block = new TestInstance().block({ zones: ['.'] });
      const offer = (): void =>
        block.context('kubernetes').provide(SEARCH_PATH, {
          plugin: 'kubernetes',
          autoPath: (q) => (q.transport.remoteAddress === TEST_TRANSPORT.remoteAddress ? PATH : null),
        });
      if (order === 'before') offer();
      const factory = await block.setup(autopath, 'autopath @kubernetes');
      if (order === 'after') offer();
      block.seal();
      await block.instance.start();
      const next = new FakeNext((q) =>
        answer(q, q.lname === 'x.' ? Rcode.NOERROR : Rcode.NXDOMAIN, q.lname === 'x.' ? [a('x', '192.0.2.8', 7)] : []),
      );
      const q = makeQuery('x.default.svc.cluster.local.', 'A');
      await factory!(next, block.runtime.info).serve(q);
      expect(next.seen.map((s) => s.lname)).toEqual([
        'x.default.svc.cluster.local.',
        'x.svc.cluster.local.',
        'x.cluster.local.',
        'x.c.proj.internal.',
        'x.',
      ]);
      expect(rrLines(q.reply!.peek().answers)).toEqual([
        'x.default.svc.cluster.local. 7 IN CNAME x.',
        'x. 7 IN A 192.0.2.8',
      ]);
    },
  );
});

/** Write a reply for q: rcode, and answers built by `rrs(name)`. */
function answer(q: Query, rc: number, rrs: Answer[] = [], withSoa = true): number {
  const m: Message = replyTo(q.request, 0, true);
  setRcode(m, rc);
  m.answers = rrs;
  if (!rrs.length && withSoa) m.authorities = [soa('cluster.local', 5, 5)];
  q.write(m, 'fake');
  return rc;
}

const PATH = ['default.svc.cluster.local.', 'svc.cluster.local.', 'cluster.local.', 'c.proj.internal.', ''];

function handler(next: FakeNext, path: readonly string[] | null = PATH, zones = ['.']): AutopathHandler {
  return new AutopathHandler({ zones, search: [], searchFunc: () => path }, next);
}

async function successes(): Promise<number> {
  const m = await registry.getSingleMetric('coredns_autopath_success_total')?.get();
  return (m?.values ?? []).reduce((s, v) => s + v.value, 0);
}

describe('the walk', () => {
  it('walks the search path with the base name and answers with a CNAME to the name that exists', async () => {
    const next = new FakeNext((q) =>
      q.lname === 'google.com.'
        ? answer(q, Rcode.NOERROR, [a('google.com', '192.0.2.5', 30)])
        : answer(q, Rcode.NXDOMAIN),
    );
    const q = makeQuery('Google.com.default.svc.cluster.local.', 'A');
    const before = await successes();
    const rc = await handler(next).serve(q);
    expect(rc).toBe(Rcode.NOERROR);
    expect(next.seen.map((s) => s.name)).toEqual([
      'Google.com.default.svc.cluster.local.',
      'Google.com.svc.cluster.local.',
      'Google.com.cluster.local.',
      'Google.com.c.proj.internal.',
      'Google.com.',
    ]);
    expect(next.seen.every((s) => s.qtype === 1 && s.id === q.id)).toBe(true);
    const m = q.reply!.peek();
    expect(m.questions[0]).toMatchObject({ name: 'Google.com.default.svc.cluster.local', type: 'A' });
    expect(rrLines(m.answers)).toEqual([
      'Google.com.default.svc.cluster.local. 30 IN CNAME google.com.',
      'google.com. 30 IN A 192.0.2.5',
    ]);
    expect((await successes()) - before).toBe(1);
  });

  it('the first element answering: returned as is (owner equals the name: no CNAME), counted', async () => {
    const next = new FakeNext((q) => answer(q, Rcode.NOERROR, [a(q.name, '10.96.0.11')]));
    const q = makeQuery('svc1.default.svc.cluster.local.', 'A');
    const before = await successes();
    await handler(next).serve(q);
    expect(next.calls).toBe(1);
    expect(rrLines(q.reply!.peek().answers)).toEqual(['svc1.default.svc.cluster.local. 300 IN A 10.96.0.11']);
    expect((await successes()) - before).toBe(1);
  });

  it('NODATA on an intermediate element stops the walk (NOERROR, no CNAME)', async () => {
    const next = new FakeNext((q) =>
      answer(q, q.lname === 'testns.svc.cluster.local.' ? Rcode.NOERROR : Rcode.NXDOMAIN),
    );
    const q = makeQuery('testns.default.svc.cluster.local.', 'A');
    expect(await handler(next).serve(q)).toBe(Rcode.NOERROR);
    expect(next.seen.map((s) => s.lname)).toEqual(['testns.default.svc.cluster.local.', 'testns.svc.cluster.local.']);
    const m = q.reply!.peek();
    expect(rcode(m)).toBe(Rcode.NOERROR);
    expect(m.answers).toEqual([]);
    expect(m.questions[0]!.name).toBe('testns.default.svc.cluster.local');
  });

  it('everything NXDOMAIN: the reply of the first attempt, as it was', async () => {
    const next = new FakeNext((q) => answer(q, Rcode.NXDOMAIN));
    const q = makeQuery('nope.default.svc.cluster.local.', 'AAAA');
    const before = await successes();
    expect(await handler(next).serve(q)).toBe(Rcode.NXDOMAIN);
    expect(next.calls).toBe(5);
    expect(q.reply).toBe(next.seen[0]!.reply);
    expect((await successes()) - before).toBe(0);
  });

  it('skips the elements the chain wrote nothing for (SERVFAIL/REFUSED without a reply)', async () => {
    const next = new FakeNext((q) => {
      if (q.lname === 'x.default.svc.cluster.local.') return Rcode.SERVFAIL;
      if (q.lname === 'x.svc.cluster.local.') return Rcode.REFUSED;
      // Returns success but writes nothing: still nothing written (`q.reply` is the only signal).
      if (q.lname === 'x.cluster.local.') return Rcode.NOERROR;
      return answer(
        q,
        q.lname === 'x.' ? Rcode.NOERROR : Rcode.NXDOMAIN,
        q.lname === 'x.' ? [a('x', '192.0.2.8', 7)] : [],
      );
    });
    const q = makeQuery('x.default.svc.cluster.local.', 'A');
    expect(await handler(next).serve(q)).toBe(Rcode.NOERROR);
    expect(rrLines(q.reply!.peek().answers)).toEqual([
      'x.default.svc.cluster.local. 7 IN CNAME x.',
      'x. 7 IN A 192.0.2.8',
    ]);
    // All unwritten: nothing written, the first RCODE returned for the server to write.
    const q2 = makeQuery('y.default.svc.cluster.local.', 'A');
    expect(await handler(new FakeNext(() => Rcode.SERVFAIL)).serve(q2)).toBe(Rcode.SERVFAIL);
    expect(q2.reply).toBeNull();
  });

  it("a written SERVFAIL (an upstream's, or kubernetes not yet synced) is an answer: the walk stops there, as in CoreDNS", async () => {
    const next = new FakeNext((q) =>
      q.lname === 'w.svc.cluster.local.' ? answer(q, Rcode.SERVFAIL, [], false) : answer(q, Rcode.NXDOMAIN),
    );
    const q = makeQuery('w.default.svc.cluster.local.', 'A');
    const before = await successes();
    expect(await handler(next).serve(q)).toBe(Rcode.SERVFAIL);
    expect(next.calls).toBe(2);
    expect(q.reply!.rcode).toBe(Rcode.SERVFAIL);
    expect(q.reply!.peek().questions[0]!.name).toBe('w.default.svc.cluster.local');
    expect((await successes()) - before).toBe(1);
  });

  it('an error value from the chain stops the walk at once and is returned', async () => {
    const next = new FakeNext((q) =>
      q.lname === 'e.svc.cluster.local.'
        ? q.fail(new Error('plugin/forward: i/o timeout'), Rcode.SERVFAIL)
        : answer(q, Rcode.NXDOMAIN),
    );
    const q = makeQuery('e.default.svc.cluster.local.', 'A');
    expect(await handler(next).serve(q)).toBe(Rcode.SERVFAIL);
    expect(next.calls).toBe(2);
    expect(q.error?.message).toBe('plugin/forward: i/o timeout');
    expect(q.reply).toBeNull();
  });

  it('passes through: outside its zones, no search path, not below the first element', async () => {
    for (const [name, path, zones] of [
      ['a.default.svc.cluster.local.', PATH, ['example.org.']],
      ['a.default.svc.cluster.local.', null, ['.']],
      ['a.default.svc.cluster.local.', [], ['.']],
      ['a.svc.cluster.local.', PATH, ['.']],
      ['example.com.', PATH, ['.']],
    ] as const) {
      const next = new FakeNext((q) => answer(q, Rcode.NXDOMAIN));
      const q = makeQuery(name, 'A');
      await handler(next, path, [...zones]).serve(q);
      expect(next.seen).toEqual([q]);
    }
  });

  it('the first element itself: walked with an empty base', async () => {
    const next = new FakeNext((q) =>
      answer(q, q.lname === 'default.svc.cluster.local.' ? Rcode.NOERROR : Rcode.NXDOMAIN),
    );
    const q = makeQuery('default.svc.cluster.local.', 'A');
    expect(await handler(next).serve(q)).toBe(Rcode.NOERROR);
    expect(next.seen.map((s) => s.lname)).toEqual(['default.svc.cluster.local.']);
  });

  it('cnamer: the CNAME points at the first record whose owner differs from the original name', () => {
    const m: Message = {
      type: 'response',
      id: 1,
      flags: 0,
      questions: [{ name: 'q.default.svc.cluster.local', type: 'A', class: 'IN' }],
      answers: [],
      authorities: [],
      additionals: [],
    };
    m.answers = [a('Q.default.svc.cluster.local', '192.0.2.1', 9), a('other.example', '192.0.2.2', 11)];
    cnamer(m, 'q.default.svc.cluster.local.');
    expect(rrLines(m.answers)).toEqual([
      'q.default.svc.cluster.local. 11 IN CNAME other.example.',
      'Q.default.svc.cluster.local. 9 IN A 192.0.2.1',
      'other.example. 11 IN A 192.0.2.2',
    ]);
  });
});

describe('autopath with a resolv.conf file, through the server', () => {
  let up: TestUpstream;
  let srv: TestServer;
  beforeAll(async () => {
    up = await TestUpstream.start();
    up.on('example.com', { answers: [a('example.com', '192.0.2.1', 40)] });
    srv = await startServer(`. {\n    autopath ${RESOLV}\n    forward . ${up.addr}\n}\n`);
  });
  afterAll(async () => {
    await srv?.stop();
    await up?.stop();
  });

  it('any client: the search list of the file, then the name itself', async () => {
    const m = await udpQuery(srv.port, 'example.com.default.svc.cluster.local', 'A');
    expect(rcode(m)).toBe(Rcode.NOERROR);
    expect(rrLines(m.answers)).toEqual([
      'example.com.default.svc.cluster.local. 40 IN CNAME example.com.',
      'example.com. 40 IN A 192.0.2.1',
    ]);
    expect(up.received.map((r) => r.name)).toEqual([
      'example.com.default.svc.cluster.local.',
      'example.com.svc.cluster.local.',
      'example.com.cluster.local.',
      'example.com.',
    ]);
    const other = await udpQuery(srv.port, 'www.example.org', 'A');
    expect(rcode(other)).toBe(Rcode.NXDOMAIN);
    expect(up.count('www.example.org')).toBe(1);
  });
});
