import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { decode } from '../../src/dns/message.js';
import { registry } from '../../src/metrics/registry.js';
import type { Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { makeQuery } from '../../test/helpers/dns.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { rrLines } from '../../test/helpers/records.js';
import { dispenserFor, setupContext, type TestContext } from '../../test/helpers/setup.js';
import { FakeNext } from '../../test/helpers/upstream.js';
import type { HostsHandler } from './handler.js';
import { parseHostsIP } from './hostsfile.js';
import { hosts } from './index.js';
import { parseHosts } from './setup.js';

const dir = mkdtempSync(join(tmpdir(), 'hosts-'));
let fileNo = 0;

function hostsFile(text: string): string {
  const p = join(dir, `hosts${fileNo++}`);
  writeFileSync(p, text);
  return p;
}

const contexts: TestContext[] = [];
afterEach(async () => {
  while (contexts.length) await contexts.pop()!.stop();
});

async function build(text: string, zones = ['.'], queryThread = false): Promise<{ h: HostsHandler; next: FakeNext }> {
  const ctx = setupContext({ zones, queryThread, plugin: 'hosts' });
  const f = await hosts.setup(dispenserFor(text, 'hosts'), ctx);
  await ctx.start();
  contexts.push(ctx);
  const next = new FakeNext(() => 5);
  return { h: f!(next, ctx.block) as HostsHandler, next };
}

async function ask(h: Handler, name: string, type = 'A'): Promise<{ q: Query; rc: number }> {
  const q = makeQuery(name, type);
  const rc = await h.serve(q);
  return { q, rc };
}

const answers = (q: Query): string[] => rrLines(decode(q.reply!.wire()).answers);

const ETC_HOSTS = `# comment
127.0.0.1   localhost localhost.localdomain
::1         localhost ip6-localhost
10.0.0.1    web.example.org  www.example.org # trailing comment
10.0.0.2    web.example.org
fe80::1%eth0 link.example.org
::ffff:10.0.0.9 mapped.example.org
2001:db8::5 web.example.org
10.0.0.3    *.wild.example.org
10.0.0.4    exact.wild.example.org
not-an-ip   broken.example.org
10.0.0.5
10.0.0.6    other.test
`;

describe('hosts setup', () => {
  const p = (t: string) => parseHosts(dispenserFor(t, 'hosts'));
  it('defaults and options', () => {
    expect(p('hosts')).toEqual({
      path: '/etc/hosts',
      zones: [],
      inline: [],
      ttl: 3600,
      autoReverse: true,
      reloadMs: 5000,
      fallthrough: null,
      fallthroughUnsupported: false,
    });
    expect(
      p(
        'hosts /tmp/h example.org {\n 10.0.0.1 a.example.org b.example.org\n ttl 60\n no_reverse\n reload 0\n fallthrough\n fallthrough_unsupported\n}',
      ),
    ).toEqual({
      path: '/tmp/h',
      zones: ['example.org.'],
      inline: ['10.0.0.1 a.example.org b.example.org'],
      ttl: 60,
      autoReverse: false,
      reloadMs: 0,
      fallthrough: ['.'],
      fallthroughUnsupported: true,
    });
    expect(p('hosts {\n fallthrough in-addr.arpa Example.ORG\n}').fallthrough).toEqual([
      'in-addr.arpa.',
      'example.org.',
    ]);
  });

  const bad: [string, string, number][] = [
    ['hosts {\n ttl 0\n}', 'ttl provided is invalid', 2],
    ['hosts {\n ttl 65536\n}', 'ttl provided is invalid', 2],
    ['hosts {\n ttl x\n}', 'ttl needs a number of second', 2],
    ['hosts {\n ttl\n}', 'ttl needs a time in second', 2],
    ['hosts {\n reload\n}', 'reload needs a duration (zero seconds to disable)', 2],
    ['hosts {\n reload 5\n}', "invalid duration for reload '5'", 2],
    ['hosts {\n reload -5s\n}', "invalid negative duration for reload '-5s'", 2],
    ['hosts {\n fallthrough\n 10.0.0.1 a.example\n}', "unknown property '10.0.0.1'", 3],
    ['hosts {\n fallthrough_unsupported\n}', 'fallthrough_unsupported requires fallthrough', 3],
  ];
  for (const [text, msg, line] of bad) {
    it(`${text.replace(/\n/g, ' ')} → ${msg}`, () => {
      let err: unknown;
      try {
        p(text);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).message).toBe(msg);
      expect((err as ConfigError).line).toBe(line);
    });
  }

  it('reads addresses like Go: zones stripped, IPv4-mapped as IPv4', () => {
    expect(parseHostsIP('fe80::1%eth0')).toEqual({ ip: 'fe80::1', family: 6 });
    expect(parseHostsIP('::ffff:10.0.0.9')).toEqual({ ip: '10.0.0.9', family: 4 });
    expect(parseHostsIP('10.0.0.256')).toBeUndefined();
  });
});

describe('hosts lookups', () => {
  it('answers A and AAAA from the file (owner as asked, ttl, AA=1)', async () => {
    const { h } = await build(`hosts ${hostsFile(ETC_HOSTS)} example.org {\n ttl 60\n}`);
    const r = await ask(h, 'WEB.example.org');
    expect(r.rc).toBe(0);
    expect(answers(r.q)).toEqual(['WEB.example.org. 60 IN A 10.0.0.1', 'WEB.example.org. 60 IN A 10.0.0.2']);
    expect(r.q.reply!.flags & 0x0400).toBe(0x0400);
    expect(answers((await ask(h, 'web.example.org', 'AAAA')).q)).toEqual(['web.example.org. 60 IN AAAA 2001:db8::5']);
    expect(answers((await ask(h, 'mapped.example.org')).q)).toEqual(['mapped.example.org. 60 IN A 10.0.0.9']);
    expect(answers((await ask(h, 'link.example.org', 'AAAA')).q)).toEqual(['link.example.org. 60 IN AAAA fe80::1']);
  });

  it('the other family or another type for a known name: NOERROR, no records, no SOA', async () => {
    const { h } = await build(`hosts ${hostsFile(ETC_HOSTS)} example.org`);
    for (const [name, type] of [
      ['www.example.org', 'AAAA'],
      ['www.example.org', 'MX'],
      ['link.example.org', 'A'],
    ] as const) {
      const r = await ask(h, name, type);
      expect(r.rc).toBe(0);
      const m = decode(r.q.reply!.wire());
      expect(m.answers).toEqual([]);
      expect(m.authorities).toEqual([]);
    }
  });

  it('unknown names: SERVFAIL without writing, or next with fallthrough', async () => {
    const { h, next } = await build(`hosts ${hostsFile(ETC_HOSTS)} example.org`);
    const r = await ask(h, 'nope.example.org');
    expect(r.rc).toBe(2);
    expect(r.q.reply).toBeNull();
    expect(next.calls).toBe(0);
    const { h: h2, next: n2 } = await build(`hosts ${hostsFile(ETC_HOSTS)} example.org {\n fallthrough\n}`);
    expect((await ask(h2, 'nope.example.org')).rc).toBe(5);
    expect(n2.calls).toBe(1);
  });

  it('fallthrough zones limit where the query goes on', async () => {
    const { h, next } = await build(`hosts ${hostsFile(ETC_HOSTS)} {\n fallthrough sub.example.org\n}`);
    expect((await ask(h, 'x.sub.example.org')).rc).toBe(5);
    expect((await ask(h, 'x.example.org')).rc).toBe(2);
    expect(next.calls).toBe(1);
  });

  it('names outside ZONES go to next; names in the file outside ZONES are ignored', async () => {
    const { h, next } = await build(`hosts ${hostsFile(ETC_HOSTS)} example.org`);
    expect((await ask(h, 'other.test')).rc).toBe(5);
    expect(next.calls).toBe(1);
  });

  it('wildcards match exactly one label; exact names win', async () => {
    const { h } = await build(`hosts ${hostsFile(ETC_HOSTS)} example.org {\n fallthrough\n}`);
    expect(answers((await ask(h, 'a.wild.example.org')).q)).toEqual(['a.wild.example.org. 3600 IN A 10.0.0.3']);
    expect(answers((await ask(h, 'exact.wild.example.org')).q)).toEqual(['exact.wild.example.org. 3600 IN A 10.0.0.4']);
    expect((await ask(h, 'wild.example.org')).rc).toBe(5);
    expect((await ask(h, 'b.a.wild.example.org')).rc).toBe(5);
  });

  it('PTR from the entries (not wildcards); unknown addresses always go to next', async () => {
    const { h, next } = await build(`hosts ${hostsFile(ETC_HOSTS)} example.org`);
    expect(answers((await ask(h, '1.0.0.10.in-addr.arpa', 'PTR')).q)).toEqual([
      '1.0.0.10.in-addr.arpa. 3600 IN PTR web.example.org.',
      '1.0.0.10.in-addr.arpa. 3600 IN PTR www.example.org.',
    ]);
    const v6 = '5.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa';
    expect(answers((await ask(h, v6, 'PTR')).q)).toEqual([`${v6}. 3600 IN PTR web.example.org.`]);
    expect((await ask(h, '3.0.0.10.in-addr.arpa', 'PTR')).rc).toBe(5);
    expect((await ask(h, '99.0.0.10.in-addr.arpa', 'PTR')).rc).toBe(5);
    expect(next.calls).toBe(2);
    const { h: h2 } = await build(`hosts ${hostsFile(ETC_HOSTS)} example.org {\n no_reverse\n}`);
    expect((await ask(h2, '1.0.0.10.in-addr.arpa', 'PTR')).rc).toBe(5);
  });

  it('inline entries are served after the file entries', async () => {
    const { h } = await build(
      `hosts ${hostsFile(ETC_HOSTS)} example.org {\n 10.9.9.9 web.example.org inline.example.org\n}`,
    );
    expect(answers((await ask(h, 'web.example.org')).q).map((s) => s.split(' ').at(-1))).toEqual([
      '10.0.0.1',
      '10.0.0.2',
      '10.9.9.9',
    ]);
    expect(answers((await ask(h, 'inline.example.org')).q)).toHaveLength(1);
  });

  it('fallthrough_unsupported sends other types on', async () => {
    const { h, next } = await build(
      `hosts ${hostsFile(ETC_HOSTS)} example.org {\n fallthrough\n fallthrough_unsupported\n}`,
    );
    expect((await ask(h, 'web.example.org', 'MX')).rc).toBe(5);
    expect(next.calls).toBe(1);
  });

  it('a missing file is only a warning; the file is read once it appears', async () => {
    const p = join(dir, 'later');
    rmSync(p, { force: true });
    const { h } = await build(`hosts ${p} example.org {\n fallthrough\n reload 0\n}`);
    expect((await ask(h, 'web.example.org')).rc).toBe(5);
    writeFileSync(p, '10.1.1.1 web.example.org\n');
    h.data.refresh();
    expect(answers((await ask(h, 'web.example.org')).q)).toEqual(['web.example.org. 3600 IN A 10.1.1.1']);
  });

  it("a query thread's re-reads log nothing: the main thread's say it once (docs/multicore.md §6)", async () => {
    const p = join(dir, 'absent');
    rmSync(p, { force: true });
    const logs = captureLogs();
    try {
      const main = await build(`hosts ${p} example.org {\n reload 0\n}`);
      const thread = await build(`hosts ${p} example.org {\n reload 0\n}`, ['.'], true);
      main.h.data.refresh();
      thread.h.data.refresh();
      writeFileSync(p, '10.1.1.1 web.example.org\n');
      thread.h.data.refresh();
      rmSync(p);
      thread.h.data.refresh();
      expect(logs.lines).toEqual([`[WARNING] plugin/hosts: File does not exist: ${p}`]);
    } finally {
      logs.restore();
    }
  });

  it('re-reads the file when mtime or size change; exports the metrics', async () => {
    const p = hostsFile('10.1.1.1 a.example.org\n');
    const { h } = await build(`hosts ${p} example.org {\n reload 0\n}`);
    const entries = async () =>
      (await registry.getSingleMetric('coredns_hosts_entries')!.get()).values.find((v) => v.labels.hostsfile === p)
        ?.value;
    expect(await entries()).toBe(1);
    writeFileSync(p, '10.1.1.2 a.example.org\n10.1.1.3 a.example.org\n');
    utimesSync(p, new Date(), new Date(Date.now() + 5000));
    h.data.refresh();
    expect(answers((await ask(h, 'a.example.org')).q).map((s) => s.split(' ').at(-1))).toEqual([
      '10.1.1.2',
      '10.1.1.3',
    ]);
    expect(await entries()).toBe(2);
    const ts = (await registry.getSingleMetric('coredns_hosts_reload_timestamp_seconds')!.get()).values[0]!.value;
    expect(ts).toBeGreaterThan(Date.now() / 1000);
  });
});
