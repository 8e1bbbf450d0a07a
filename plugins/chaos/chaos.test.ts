import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chaos, chaosConfig, DEFAULT_AUTHORS } from './index.js';
import { decode } from '../../src/dns/message.js';
import { runCorefile, type CorefileRun } from '../../test/helpers/corefile.js';
import { makeQuery, rcode } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { configError, dispenserFor, setupContext as fakeSetupContext, handlerOf } from '../../test/helpers/setup.js';
import { FakeNext } from '../../test/helpers/upstream.js';
import type { Handler } from '../../src/plugin.js';

function build(text: string): { h: Handler; next: FakeNext } {
  const next = new FakeNext(() => 5);
  return { h: handlerOf(chaos, text, next), next };
}

describe('chaos: setup', () => {
  it('version and authors from the arguments', () => {
    expect(chaosConfig([], 'clusterdns-1.0.0')).toEqual({ version: 'clusterdns-1.0.0', authors: DEFAULT_AUTHORS });
    expect(chaosConfig(['v9'], 'x')).toEqual({ version: 'v9', authors: DEFAULT_AUTHORS });
    expect(chaosConfig(['v9', 'zed', 'amy', 'zed'], 'x')).toEqual({ version: 'v9', authors: ['amy', 'zed'] });
    expect(chaosConfig(['x'.repeat(300)], 'x').version).toHaveLength(255);
  });

  it('rejects a block', () => {
    expect(
      configError(
        () => chaos.setup(dispenserFor('chaos v1 {\n x\n}', 'chaos'), fakeSetupContext()),
        'block',
      ).describe(),
    ).toBe("plugin/chaos: Corefile:2 - Error during parsing: unknown property 'x'");
  });

  it('opens the listener to every class', () => {
    expect(chaos.handlesAllClasses).toBe(true);
  });
});

describe('chaos: handler', () => {
  it('answers the CH TXT names with TTL 0, class CH, owner as asked', () => {
    const { h } = build('chaos v1.2 alice bob');
    const q = makeQuery('Version.Bind', 'TXT', { class: 'CH', id: 5 });
    expect(h.serve(q)).toBe(0);
    const m = decode(q.reply!.wire());
    expect(rcode(m)).toBe(0);
    expect(m.answers).toHaveLength(1);
    expect(m.answers[0]).toMatchObject({ name: 'Version.Bind', type: 'TXT', class: 'CH', ttl: 0 });
    expect(rrLines(m.answers)).toEqual(['Version.Bind. 0 CH TXT "v1.2"']);
    const vs = makeQuery('version.server', 'TXT', { class: 'CH' });
    void h.serve(vs);
    expect(rrLines(decode(vs.reply!.wire()).answers)).toEqual(['version.server. 0 CH TXT "v1.2"']);
    for (const n of ['hostname.bind', 'id.server']) {
      const hq = makeQuery(n, 'TXT', { class: 'CH' });
      void h.serve(hq);
      expect(rrLines(decode(hq.reply!.wire()).answers)).toEqual([`${n}. 0 CH TXT "${hostname()}"`]);
    }
    const aq = makeQuery('authors.bind', 'TXT', { class: 'CH' });
    void h.serve(aq);
    expect(rrLines(decode(aq.reply!.wire()).answers).sort()).toEqual([
      'authors.bind. 0 CH TXT "alice"',
      'authors.bind. 0 CH TXT "bob"',
    ]);
  });

  it('passes other names, types and classes on', () => {
    const { h, next } = build('chaos');
    for (const [name, type, klass] of [
      ['version.bind', 'TXT', 'IN'],
      ['version.bind', 'A', 'CH'],
      ['other.bind', 'TXT', 'CH'],
    ] as const) {
      const q = makeQuery(name, type, { class: klass });
      expect(h.serve(q)).toBe(5);
      expect(q.reply).toBeNull();
    }
    expect(next.calls).toBe(3);
  });

  it('defaults to clusterdns-<version>', () => {
    const { h } = build('chaos');
    const q = makeQuery('version.bind', 'TXT', { class: 'CH' });
    void h.serve(q);
    expect(rrLines(decode(q.reply!.wire()).answers)).toEqual(['version.bind. 0 CH TXT "clusterdns-test"']);
  });
});

describe('chaos: CH class routing through the whole server (UDP)', () => {
  let withChaos: CorefileRun;
  let without: CorefileRun;
  beforeAll(async () => {
    withChaos = await runCorefile('. {\n  chaos v7\n  whoami\n}\n');
    without = await runCorefile('. {\n  whoami\n}\n');
  });
  afterAll(async () => {
    await withChaos.stop();
    await without.stop();
  });

  it('a listener with chaos answers CH queries; one without refuses them before any plugin', async () => {
    const m = await withChaos.ask('version.bind', 'TXT', { class: 'CH' });
    expect(rcode(m)).toBe(0);
    expect(rrLines(m.answers)).toEqual(['version.bind. 0 CH TXT "v7"']);
    const refused = await without.ask('version.bind', 'TXT', { class: 'CH' });
    expect(rcode(refused)).toBe(5);
    // Other CH names reach the plugins after chaos (whoami answers anything).
    const other = await withChaos.ask('example.org', 'A', { class: 'CH' });
    expect(rcode(other)).toBe(0);
  });
});
