import type { Answer } from 'dns-packet';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { encodeMessage } from '../../src/dns/encode.js';
import { decode, replyTo, setRcode } from '../../src/dns/message.js';
import type { Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { makeQuery } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { a, aaaa, FakeNext } from '../../test/helpers/upstream.js';
import { loadbalance } from './index.js';
import { parseLoadbalance } from './setup.js';
import { parseWeights } from './weights.js';

const ips = ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4', '192.0.2.5'];

/** next writing a reply; `wire` writes encoded bytes (owners compressed to the question). */
function nextWith(
  build: (q: Query) => { answers?: Answer[]; authorities?: Answer[]; additionals?: Answer[]; rcode?: number },
  wire: boolean,
): FakeNext {
  return new FakeNext((q) => {
    const r = build(q);
    const msg = replyTo(q.request);
    setRcode(msg, r.rcode ?? 0);
    msg.answers = r.answers ?? [];
    msg.authorities = r.authorities ?? [];
    msg.additionals = r.additionals ?? [];
    if (wire) q.writeWire(encodeMessage(msg), 'upstream');
    else q.write(msg, 'upstream');
    return r.rcode ?? 0;
  });
}

async function build(text: string, next: Handler): Promise<Handler> {
  const ctx = setupContext();
  const f = await loadbalance.setup(dispenserFor(text, 'loadbalance'), ctx);
  return f!(next, ctx.block);
}

async function run(h: Handler, name = 'lb.example', type = 'A'): Promise<Query> {
  const q = makeQuery(name, type);
  await h.serve(q);
  return q;
}

function ipsOf(q: Query, section: 'answers' | 'additionals' = 'answers'): string[] {
  const reply = decode(q.reply!.wire());
  return reply[section].filter((r) => r.type !== 'OPT').map((r) => String((r as { data: unknown }).data));
}

describe('loadbalance setup', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lb-'));
  const wfile = join(dir, 'weights');
  writeFileSync(wfile, '# weights\nlb.example\n192.0.2.1 100\n192.0.2.2 1\n');

  it('accepts the documented forms', () => {
    const p = (t: string) => parseLoadbalance(dispenserFor(t, 'loadbalance'));
    expect(p('loadbalance')).toMatchObject({ policy: 'round_robin', prefer: [] });
    expect(p('loadbalance round_robin')).toMatchObject({ policy: 'round_robin' });
    expect(p(`loadbalance weighted ${wfile} {\n reload 10s\n}`)).toMatchObject({
      policy: 'weighted',
      weightFile: wfile,
      reloadMs: 10_000,
    });
    expect(p('loadbalance {\n prefer 10.0.0.0/8 2001:db8::/32\n}').prefer).toHaveLength(2);
    expect(
      p(
        'loadbalance weighted a\nloadbalance round_robin {\n prefer 10.0.0.0/8\n}\nloadbalance {\n prefer 192.168.0.0/16\n}',
      ),
    ).toMatchObject({ policy: 'round_robin' });
    expect(p('loadbalance {\n prefer 10.0.0.0/8\n}\nloadbalance {\n prefer 192.168.0.0/16\n}').prefer).toHaveLength(2);
    expect(p('loadbalance {\n prefer\n}').prefer).toEqual([]); // CoreDNS 1.15.0 accepts a bare prefer
  });

  const bad: [string, string, number][] = [
    ['loadbalance fleeb', 'unknown policy: fleeb', 1],
    ['loadbalance round_robin extra', 'unknown property for round_robin', 1],
    ['loadbalance weighted', 'missing weight file argument', 1],
    ['loadbalance weighted a b', 'unexpected argument(s)', 1],
    // CoreDNS 1.15.0's texts: reload is a property of the weighted policy only.
    ['loadbalance {\n reload 10s\n}', "unknown property 'reload'", 2],
    ['loadbalance weighted w {\n reload\n}', 'reload duration value is missing', 2],
    ['loadbalance weighted w {\n reload 1s 2s\n}', 'unexpected argument', 2],
    ['loadbalance weighted w {\n reload 5\n}', "invalid reload duration '5'", 2],
    ['loadbalance {\n prefer 10.0.0.0/33\n}', 'invalid CIDR "10.0.0.0/33": invalid CIDR address: 10.0.0.0/33', 2],
    ['loadbalance {\n prefer 10.0.0.1\n}', 'invalid CIDR "10.0.0.1": invalid CIDR address: 10.0.0.1', 2],
    ['loadbalance {\n bogus\n}', "unknown property 'bogus'", 2],
  ];
  for (const [text, msg, line] of bad) {
    it(`${text.replace(/\n/g, ' ')} → ${msg}`, () => {
      let err: unknown;
      try {
        parseLoadbalance(dispenserFor(text, 'loadbalance'));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).message).toBe(msg);
      expect((err as ConfigError).line).toBe(line);
    });
  }

  it('a missing weight file is a setup error', async () => {
    await expect(
      Promise.resolve().then(() =>
        loadbalance.setup(dispenserFor(`loadbalance weighted ${join(dir, 'nope')}`, 'loadbalance'), setupContext()),
      ),
    ).rejects.toThrow(/failed to load weight file/);
  });

  it('parses weight files', () => {
    const w = parseWeights('www.example.org\n10.0.0.1 10\n2001:DB8::1 3 # v6\n');
    expect([...w.get('www.example.org.')!]).toEqual([
      ['10.0.0.1', 10],
      ['2001:db8::1', 3],
    ]);
    expect(() => parseWeights('www.example.org\n10.0.0.1 300\n')).toThrow(/wrong weight value/);
    expect(() => parseWeights('10.0.0.1 3\n')).toThrow(/missing domain name/);
  });

  it('weighted puts the heavy address first most of the time', async () => {
    const next = nextWith((q) => ({ answers: [a(q.name, '192.0.2.2'), a(q.name, '192.0.2.1')] }), true);
    const h = await build(`loadbalance weighted ${wfile}`, next);
    let heavyFirst = 0;
    for (let i = 0; i < 50; i++) if (ipsOf(await run(h))[0] === '192.0.2.1') heavyFirst++;
    expect(heavyFirst).toBeGreaterThan(35);
  });
});

describe('loadbalance round_robin', () => {
  for (const wire of [true, false]) {
    it(`permutes an all-A answer section (${wire ? 'wire' : 'decoded'} reply)`, async () => {
      const next = nextWith((q) => ({ answers: ips.map((ip) => a(q.name, ip)) }), wire);
      const h = await build('loadbalance', next);
      const orders = new Set<string>();
      for (let i = 0; i < 30; i++) {
        const q = await run(h);
        expect(q.reply!.isWire).toBe(wire); // the wire form is shuffled in place, not decoded
        const got = ipsOf(q);
        expect([...got].sort()).toEqual(ips);
        orders.add(got.join(','));
      }
      expect(orders.size).toBeGreaterThan(1);
    });
  }

  it('mixed sections: CNAMEs first, other types, then shuffled addresses, then MX', async () => {
    const next = nextWith(
      () => ({
        answers: [
          a('t.example', '192.0.2.1'),
          { name: 'x.example', type: 'MX', ttl: 60, data: { preference: 10, exchange: 'mx.example' } },
          { name: 'lb.example', type: 'CNAME', ttl: 60, data: 't.example' },
          { name: 't.example', type: 'TXT', ttl: 60, data: ['hi'] },
          aaaa('t.example', '2001:db8::1'),
        ],
      }),
      true,
    );
    const h = await build('loadbalance', next);
    const q = await run(h);
    const types = decode(q.reply!.wire()).answers.map((r) => r.type);
    expect(types.slice(0, 2)).toEqual(['CNAME', 'TXT']);
    expect([...types.slice(2, 4)].sort()).toEqual(['A', 'AAAA']);
    expect(types[4]).toBe('MX');
  });

  it('shuffles additional sections independently and leaves SRV order alone', async () => {
    const srv = (port: number): Answer => ({
      name: 'lb.example',
      type: 'SRV',
      ttl: 5,
      data: { priority: 0, weight: 10, port, target: `t${port}.example` },
    });
    const next = nextWith(
      () => ({ answers: [srv(1), srv(2), srv(3)], additionals: ips.map((ip) => a('t1.example', ip)) }),
      true,
    );
    const h = await build('loadbalance', next);
    const orders = new Set<string>();
    for (let i = 0; i < 30; i++) {
      const q = await run(h, 'lb.example', 'SRV');
      expect(rrLines(decode(q.reply!.wire()).answers).map((s) => s.split(' ').at(-2))).toEqual(['1', '2', '3']);
      orders.add(ipsOf(q, 'additionals').join(','));
    }
    expect(orders.size).toBeGreaterThan(1);
  });

  it('prefer moves addresses inside the CIDRs first', async () => {
    const next = nextWith(
      (q) => ({
        answers: [a(q.name, '192.0.2.1'), a(q.name, '10.1.1.1'), a(q.name, '192.0.2.2'), a(q.name, '10.2.2.2')],
      }),
      true,
    );
    const h = await build('loadbalance {\n prefer 10.0.0.0/8\n}', next);
    for (let i = 0; i < 10; i++) {
      const got = ipsOf(await run(h));
      expect(got.slice(0, 2).every((ip) => ip.startsWith('10.'))).toBe(true);
    }
  });

  it('leaves non-NOERROR replies and server-written replies alone', async () => {
    const next = nextWith((q) => ({ rcode: 3, answers: ips.map((ip) => a(q.name, ip)) }), true);
    const h = await build('loadbalance', next);
    for (let i = 0; i < 5; i++) expect(ipsOf(await run(h))).toEqual(ips);
    const h2 = await build('loadbalance', new FakeNext(() => 2));
    const q = await run(h2);
    expect(q.reply).toBeNull();
  });

  it('without a next plugin fails with "no next plugin found"', async () => {
    const ctx = setupContext();
    const f = await loadbalance.setup(dispenserFor('loadbalance', 'loadbalance'), ctx);
    const q = makeQuery('x.example', 'A');
    expect(await f!(null, ctx.block).serve(q)).toBe(2);
    expect(q.error!.message).toBe('plugin/loadbalance: no next plugin found');
  });
});
