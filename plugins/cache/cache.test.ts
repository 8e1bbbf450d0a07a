import type { Answer } from 'dns-packet';
import * as dnsPacket from 'dns-packet';
import { getHeapStatistics } from 'node:v8';
import { afterEach, describe, expect, it } from 'vitest';
import { decode, replyTo, setRcode } from '../../src/dns/message.js';
import { registry } from '../../src/metrics/registry.js';
import type { Handler } from '../../src/plugin.js';
import { encodeQuery, makeQuery, TEST_TRANSPORT, type QueryOptions } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { parseRequest } from '../../src/dns/wire.js';
import { Query } from '../../src/query.js';
import { dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { a, FakeNext, soa } from '../../test/helpers/upstream.js';
import { cacheClock } from './clock.js';
import type { CacheHandler } from './handler.js';
import { cache } from './index.js';

let now = 1_700_000_000_000;
cacheClock.now = () => now;
afterEach(() => {
  now += 86_400_000; // every test starts a day later: nothing left over is fresh
});

interface Reply {
  rcode?: number;
  answers?: Answer[];
  authorities?: Answer[];
  additionals?: Answer[];
  flags?: number;
  /** Write the question under another name. */
  otherQuestion?: string;
}

/** A next plugin answering from `replies` by lower-cased name (absolute); unknown names: SERVFAIL, not written. */
function upstreamNext(replies: Record<string, Reply>): FakeNext {
  return new FakeNext((q: Query) => {
    const r = replies[q.lname];
    if (!r) return 2;
    const msg = replyTo(q.request, r.rcode ?? 0);
    msg.flags = (msg.flags ?? 0) | (r.flags ?? 0);
    setRcode(msg, r.rcode ?? 0);
    if (r.otherQuestion) msg.questions = [{ ...msg.questions[0]!, name: r.otherQuestion }];
    msg.answers = (r.answers ?? []).map((x) => ({ ...x }));
    msg.authorities = (r.authorities ?? []).map((x) => ({ ...x }));
    msg.additionals = (r.additionals ?? []).map((x) => ({ ...x }));
    q.write(msg, 'upstream');
    return r.rcode ?? 0;
  });
}

async function build(text: string, next: Handler, zones = ['.']): Promise<CacheHandler> {
  const ctx = setupContext({ zones });
  const f = await cache.setup(dispenserFor(text, 'cache'), ctx);
  return f!(next, ctx.block) as CacheHandler;
}

async function ask(
  h: Handler,
  name: string,
  type = 'A',
  o: QueryOptions = {},
): Promise<{ q: Query; rc: number; sync: boolean }> {
  const q = makeQuery(name, type, o);
  const r = h.serve(q);
  const sync = typeof r === 'number';
  const rc = await r;
  return { q, rc, sync };
}

function answers(q: Query): string[] {
  return rrLines(decode(q.reply!.wire()).answers);
}

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const data = await registry.getSingleMetric(name)!.get();
  let sum = 0;
  for (const v of data.values) if (Object.entries(labels).every(([k, x]) => String(v.labels[k]) === x)) sum += v.value;
  return sum;
}

describe('cache: positive answers', () => {
  it('stores a reply, serves hits synchronously with AA as stored (1.15.0) and counted-down TTLs', async () => {
    const next = upstreamNext({
      'www.example.org.': {
        answers: [a('www.example.org', '192.0.2.1', 300), a('www.example.org', '192.0.2.2', 60)],
        flags: 0x0080,
      },
    });
    const h = await build('cache', next);
    const first = await ask(h, 'www.example.org');
    expect(first.sync).toBe(true); // the fake next answers synchronously, so does the miss path
    expect(answers(first.q)).toEqual(['www.example.org. 60 IN A 192.0.2.1', 'www.example.org. 60 IN A 192.0.2.2']);
    expect(first.q.reply!.plugin).toBe('upstream');
    now += 10_500;
    const hit = await ask(h, 'WWW.example.ORG', 'A', { id: 999 });
    expect(hit.sync).toBe(true);
    expect(next.calls).toBe(1);
    expect(hit.q.reply!.plugin).toBe('cache');
    const msg = decode(hit.q.reply!.wire());
    expect(msg.id).toBe(999);
    expect(msg.questions[0]!.name).toBe('WWW.example.ORG');
    expect((msg.flags ?? 0) & 0x0400).toBe(0); // AA as the stored reply had it (none)
    expect((msg.flags ?? 0) & 0x0080).toBe(0x0080); // RA as stored
    expect(rrLines(msg.answers).map((s) => s.split(' ')[1])).toEqual(['50', '50']);
    now += 49_000;
    const later = await ask(h, 'www.example.org');
    expect(answers(later.q).map((s) => s.split(' ')[1])).toEqual(['1', '1']);
    now += 1000;
    await ask(h, 'www.example.org');
    expect(next.calls).toBe(2); // expired
  });

  it('clamps TTLs to [MINTTL, TTL]: TTL 0 goes out as 5 and is stored; MINTTL 0 lets it through unstored', async () => {
    const next = upstreamNext({
      'zero.example.': { answers: [a('zero.example', '192.0.2.1', 0)] },
      'long.example.': { answers: [a('long.example', '192.0.2.1', 86400)] },
    });
    const h = await build('cache 30', next);
    expect(answers((await ask(h, 'zero.example')).q)).toEqual(['zero.example. 5 IN A 192.0.2.1']);
    expect(answers((await ask(h, 'long.example')).q)).toEqual(['long.example. 30 IN A 192.0.2.1']);
    await ask(h, 'zero.example');
    expect(next.calls).toBe(2);
    const next2 = upstreamNext({ 'zero.example.': { answers: [a('zero.example', '192.0.2.1', 0)] } });
    const h2 = await build('cache {\n success 100 30 0\n}', next2);
    expect(answers((await ask(h2, 'zero.example')).q)).toEqual(['zero.example. 0 IN A 192.0.2.1']);
    await ask(h2, 'zero.example');
    expect(next2.calls).toBe(2);
  });

  it('keeps DO, CD and qtype apart', async () => {
    const next = upstreamNext({ 'k.example.': { answers: [a('k.example', '192.0.2.1')] } });
    const h = await build('cache', next);
    await ask(h, 'k.example');
    await ask(h, 'k.example', 'A', { do: true });
    await ask(h, 'k.example', 'A', { cd: true });
    await ask(h, 'k.example', 'AAAA');
    expect(next.calls).toBe(4);
    await ask(h, 'k.example', 'A', { do: true });
    await ask(h, 'k.example', 'A', { cd: true });
    expect(next.calls).toBe(4);
  });

  it('clears AD unless the query had DO or AD', async () => {
    const next = upstreamNext({ 'ad.example.': { answers: [a('ad.example', '192.0.2.1')], flags: 0x0020 } });
    const h = await build('cache', next);
    expect((await ask(h, 'ad.example')).q.reply!.flags & 0x0020).toBe(0);
    expect((await ask(h, 'ad.example', 'A', { do: true })).q.reply!.flags & 0x0020).toBe(0x0020);
    expect((await ask(h, 'ad.example', 'A', { do: true })).q.reply!.flags & 0x0020).toBe(0x0020); // hit
  });

  it('stores without the OPT record; the hit carries none', async () => {
    const opt = { name: '.', type: 'OPT', udpPayloadSize: 1232, flags: 0, options: [] } as unknown as Answer;
    const next = upstreamNext({ 'o.example.': { answers: [a('o.example', '192.0.2.1')], additionals: [opt] } });
    const h = await build('cache', next);
    const miss = await ask(h, 'o.example', 'A', { edns: 1232 });
    expect(decode(miss.q.reply!.wire()).additionals.some((r) => r.type === 'OPT')).toBe(true);
    const hit = await ask(h, 'o.example', 'A', { edns: 1232 });
    expect(next.calls).toBe(1);
    expect(decode(hit.q.reply!.wire()).additionals).toEqual([]);
  });

  it('an OPT record in the middle of the additional section is removed by re-encoding', async () => {
    const next = new FakeNext((q) => {
      const msg = replyTo(q.request);
      msg.answers = [a(q.name, '192.0.2.1')];
      msg.additionals = [
        { name: '.', type: 'OPT', udpPayloadSize: 1232, flags: 0, options: [] } as unknown as Answer,
        a('extra.example', '192.0.2.2'),
      ];
      q.writeWire(dnsPacket.encode(msg), 'upstream');
      return 0;
    });
    const h = await build('cache', next);
    await ask(h, 'mid.example', 'A', { edns: 1232 });
    const hit = await ask(h, 'mid.example', 'A', { edns: 1232 });
    expect(next.calls).toBe(1);
    expect(rrLines(decode(hit.q.reply!.wire()).additionals)).toEqual(['extra.example. 300 IN A 192.0.2.2']);
  });

  it('keepttl serves the stored duration', async () => {
    const next = upstreamNext({ 'kt.example.': { answers: [a('kt.example', '192.0.2.1', 100)] } });
    const h = await build('cache {\n keepttl\n}', next);
    await ask(h, 'kt.example');
    now += 30_000;
    expect(answers((await ask(h, 'kt.example')).q)).toEqual(['kt.example. 100 IN A 192.0.2.1']);
  });
});

describe('cache: what is not stored', () => {
  it('a SERVFAIL the server writes itself (nothing written) passes untouched and is cached for the servfail time (1.15.0)', async () => {
    // The plugins below failed with an error (forward with every upstream down): CoreDNS 1.15.0
    // caches a SERVFAIL then.
    const next = new FakeNext((q) => q.fail(new Error('upstream down'), 2));
    const h = await build('cache', next);
    const r = await ask(h, 'nothing.example');
    expect(r.rc).toBe(2);
    expect(r.q.reply).toBeNull();
    const again = await ask(h, 'nothing.example');
    expect(next.calls).toBe(1);
    expect(again.rc).toBe(2); // what happened; the reply is the cache's (the server does not write its own)
    const flags = again.q.reply!.wire().readUInt16BE(2);
    expect(flags & 0x0f).toBe(2);
    expect(flags & 0x0480).toBe(0); // neither AA nor RA
    const off = await build('cache {\n servfail 0\n}', new FakeNext((q) => q.fail(new Error('upstream down'), 2)));
    await ask(off, 'nothing.example');
    expect((await ask(off, 'nothing.example')).q.reply).toBeNull();
  });

  it('a SERVFAIL returned without an error (hosts: a name it has no record for, no SOA) is not cached, as CoreDNS 1.15.0', async () => {
    // CoreDNS caches a failure only when the plugin below returned an error (`err != nil`); hosts
    // returns SERVFAIL without one, and CoreDNS asks it again (coredns_cache_misses_total counts 2).
    const next = upstreamNext({});
    const h = await build('cache', next);
    expect((await ask(h, 'nothing.example')).rc).toBe(2);
    const again = await ask(h, 'nothing.example');
    expect(next.calls).toBe(2);
    expect(again.rc).toBe(2);
    expect(again.q.reply).toBeNull();
  });

  it('truncated replies, REFUSED, NXDOMAIN without SOA and CNAME chains without the type are not stored', async () => {
    const next = upstreamNext({
      'tc.example.': { answers: [a('tc.example', '192.0.2.1')], flags: 0x0200 },
      'ref.example.': { rcode: 5 },
      'nx.example.': { rcode: 3 },
      'chain.example.': { answers: [{ name: 'chain.example', type: 'CNAME', ttl: 60, data: 'elsewhere.example' }] },
    });
    const h = await build('cache', next);
    for (const n of ['tc.example', 'ref.example', 'nx.example', 'chain.example']) {
      await ask(h, n);
      await ask(h, n);
    }
    expect(next.calls).toBe(8);
  });

  it('disable success/denial: not stored, TTLs still clamped', async () => {
    const next = upstreamNext({
      'svc.cluster.local.': { answers: [a('svc.cluster.local', '10.0.0.1', 0)] },
      'nx.cluster.local.': { rcode: 3, authorities: [soa('cluster.local', 5, 5)] },
      'ext.example.': { answers: [a('ext.example', '192.0.2.1', 3000)] },
    });
    const h = await build('cache 30 {\n disable success cluster.local\n disable denial cluster.local\n}', next);
    expect(answers((await ask(h, 'svc.cluster.local')).q)).toEqual(['svc.cluster.local. 5 IN A 10.0.0.1']);
    await ask(h, 'svc.cluster.local');
    await ask(h, 'nx.cluster.local');
    await ask(h, 'nx.cluster.local');
    expect(next.calls).toBe(4);
    expect(answers((await ask(h, 'ext.example')).q)).toEqual(['ext.example. 30 IN A 192.0.2.1']);
    await ask(h, 'ext.example');
    expect(next.calls).toBe(5);
  });

  it('a reply for another question is dropped (counted)', async () => {
    const next = upstreamNext({
      'q.example.': { answers: [a('other.example', '192.0.2.1')], otherQuestion: 'other.example' },
    });
    const h = await build('cache', next);
    const before = await metric('coredns_cache_drops_total', { server: 'dns://:53', zones: '.', view: '' });
    await ask(h, 'q.example');
    await ask(h, 'q.example');
    expect(next.calls).toBe(2);
    expect(await metric('coredns_cache_drops_total', { server: 'dns://:53', zones: '.', view: '' })).toBe(before + 2);
  });

  it('NOTIFY queries and zone transfers bypass the cache', async () => {
    const next = upstreamNext({ 'n.example.': { answers: [a('n.example', '192.0.2.1', 9999)] } });
    const h = await build('cache', next);
    const notify = encodeQuery('n.example', 'A');
    notify.writeUInt16BE((4 << 11) | 0x0100, 2);
    const parsed = parseRequest(notify);
    if (parsed.kind !== 'query') throw new Error('notify rejected');
    for (let i = 0; i < 2; i++) {
      const q = new Query(notify, parsed.req, TEST_TRANSPORT);
      await h.serve(q);
      expect(answers(q)).toEqual(['n.example. 9999 IN A 192.0.2.1']);
    }
    await ask(h, 'n.example', 'AXFR');
    await ask(h, 'n.example', 'AXFR');
    expect(next.calls).toBe(4);
  });

  it('names outside the cache zones pass through untouched', async () => {
    const next = upstreamNext({ 'x.other.': { answers: [a('x.other', '192.0.2.1', 9999)] } });
    const h = await build('cache example.org', next);
    expect(answers((await ask(h, 'x.other')).q)).toEqual(['x.other. 9999 IN A 192.0.2.1']);
    await ask(h, 'x.other');
    expect(next.calls).toBe(2);
  });
});

describe('cache: negative answers', () => {
  it('NXDOMAIN and NODATA with SOA are stored in the denial cache with the denial bounds', async () => {
    const next = upstreamNext({
      'nx.example.': { rcode: 3, authorities: [soa('example', 3600, 3600)] },
      'nodata.example.': { authorities: [soa('example', 20, 20)] },
    });
    const h = await build('cache {\n denial 100 60\n}', next);
    const nx = await ask(h, 'nx.example');
    expect(rrLines(decode(nx.q.reply!.wire()).authorities)[0]).toMatch(/^example\. 60 IN SOA/);
    const hit = await ask(h, 'nx.example');
    expect(hit.rc).toBe(3);
    expect(hit.q.reply!.rcode).toBe(3);
    await ask(h, 'nodata.example', 'AAAA');
    now += 5000;
    const nd = await ask(h, 'nodata.example', 'AAAA');
    expect(rrLines(decode(nd.q.reply!.wire()).authorities)[0]).toMatch(/^example\. 15 IN SOA/);
    expect(next.calls).toBe(2);
  });

  it('SERVFAIL written by a plugin is cached for `servfail` seconds (0 disables)', async () => {
    const next = upstreamNext({ 'sf.example.': { rcode: 2 } });
    const h = await build('cache {\n servfail 2s\n}', next);
    await ask(h, 'sf.example');
    const hit = await ask(h, 'sf.example');
    expect(hit.q.reply!.rcode).toBe(2);
    expect(hit.rc).toBe(2); // what happened: the reply written by the cache says it was written
    expect(next.calls).toBe(1);
    now += 2000;
    await ask(h, 'sf.example');
    expect(next.calls).toBe(2);
    const next2 = upstreamNext({ 'sf.example.': { rcode: 2 } });
    const h2 = await build('cache {\n servfail 0\n}', next2);
    await ask(h2, 'sf.example');
    await ask(h2, 'sf.example');
    expect(next2.calls).toBe(2);
  });
});

describe('cache: prefetch and serve_stale', () => {
  it('prefetches a popular entry near its expiry in the background', async () => {
    const next = upstreamNext({ 'p.example.': { answers: [a('p.example', '192.0.2.1', 100)] } });
    const h = await build('cache {\n prefetch 2 1m 50%\n}', next);
    await ask(h, 'p.example');
    now += 10_000;
    await ask(h, 'p.example'); // hit 1, remaining 90
    now += 45_000;
    const before = await metric('coredns_cache_prefetch_total', { server: 'dns://:53' });
    const r = await ask(h, 'p.example'); // hit 2, remaining 45 ≤ 50
    expect(answers(r.q)).toEqual(['p.example. 45 IN A 192.0.2.1']);
    await new Promise((res) => setImmediate(res));
    expect(next.calls).toBe(2);
    expect(await metric('coredns_cache_prefetch_total', { server: 'dns://:53' })).toBe(before + 1);
    const fresh = await ask(h, 'p.example');
    expect(answers(fresh.q)).toEqual(['p.example. 100 IN A 192.0.2.1']);
  });

  it('serve_stale immediate: an expired entry is served with TTL 0 and refreshed once in the background', async () => {
    const replies: Record<string, Reply> = { 's.example.': { answers: [a('s.example', '192.0.2.1', 30)] } };
    const next = upstreamNext(replies);
    const h = await build('cache {\n serve_stale 1h\n}', next);
    await ask(h, 's.example');
    now += 40_000;
    replies['s.example.'] = { answers: [a('s.example', '192.0.2.2', 30)] };
    const stale = await ask(h, 's.example');
    expect(stale.sync).toBe(true);
    expect(answers(stale.q)).toEqual(['s.example. 0 IN A 192.0.2.1']);
    await new Promise((res) => setImmediate(res));
    expect(next.calls).toBe(2);
    expect(answers((await ask(h, 's.example')).q)).toEqual(['s.example. 30 IN A 192.0.2.2']);
    now += 2 * 3_600_000;
    await ask(h, 's.example');
    expect(next.calls).toBe(3); // beyond the stale window: a plain miss
  });

  it('serve_stale verify: a SERVFAIL written below is cached but does not hide the stale answer', async () => {
    const replies: Record<string, Reply> = { 'w.example.': { answers: [a('w.example', '192.0.2.1', 30)] } };
    const next = upstreamNext(replies);
    const h = await build('cache {\n serve_stale 1h verify\n}', next);
    await ask(h, 'w.example');
    now += 40_000;
    replies['w.example.'] = { rcode: 2 };
    for (let i = 0; i < 2; i++) expect(answers((await ask(h, 'w.example')).q)).toEqual(['w.example. 0 IN A 192.0.2.1']);
  });

  it('serve_stale verify: asks below first, serves stale only when that fails', async () => {
    const replies: Record<string, Reply> = { 'v.example.': { answers: [a('v.example', '192.0.2.1', 30)] } };
    const next = upstreamNext(replies);
    const h = await build('cache {\n serve_stale 1h verify\n}', next);
    await ask(h, 'v.example');
    now += 40_000;
    delete replies['v.example.']; // now the next plugin fails (SERVFAIL, not written)
    const stale = await ask(h, 'v.example');
    expect(answers(stale.q)).toEqual(['v.example. 0 IN A 192.0.2.1']);
    const again = await ask(h, 'v.example'); // still failing: stale again, not a cached SERVFAIL
    expect(answers(again.q)).toEqual(['v.example. 0 IN A 192.0.2.1']);
    replies['v.example.'] = { answers: [a('v.example', '192.0.2.9', 30)] };
    const fresh = await ask(h, 'v.example');
    expect(answers(fresh.q)).toEqual(['v.example. 30 IN A 192.0.2.9']);
    expect(next.calls).toBe(4);
  });
});

describe('cache: metrics and capacity', () => {
  it('counts requests, hits by type, misses, entries', async () => {
    const next = upstreamNext({
      'm.example.': { answers: [a('m.example', '192.0.2.1')] },
      'nx.example.': { rcode: 3, authorities: [soa('example')] },
    });
    const h = await build('cache', next, ['example.']);
    const l = { server: 'dns://:53', zones: 'example.', view: '' };
    const req0 = await metric('coredns_cache_requests_total', l);
    const hit0 = await metric('coredns_cache_hits_total', { ...l, type: 'success' });
    const den0 = await metric('coredns_cache_hits_total', { ...l, type: 'denial' });
    const miss0 = await metric('coredns_cache_misses_total', l);
    await ask(h, 'm.example');
    await ask(h, 'm.example');
    await ask(h, 'nx.example');
    await ask(h, 'nx.example');
    expect(await metric('coredns_cache_requests_total', l)).toBe(req0 + 4);
    expect(await metric('coredns_cache_hits_total', { ...l, type: 'success' })).toBe(hit0 + 1);
    expect(await metric('coredns_cache_hits_total', { ...l, type: 'denial' })).toBe(den0 + 1);
    expect(await metric('coredns_cache_misses_total', l)).toBe(miss0 + 2);
    expect(await metric('coredns_cache_entries', { ...l, type: 'success' })).toBe(1);
    expect(await metric('coredns_cache_entries', { ...l, type: 'denial' })).toBe(1);
  });

  it('evicts beyond capacity and counts evictions', async () => {
    const next = new FakeNext((q) => {
      const msg = replyTo(q.request);
      msg.answers = [a(q.name, '192.0.2.1')];
      q.write(msg, 'upstream');
      return 0;
    });
    const h = await build('cache {\n success 1\n}', next, ['cap.example.']);
    const l = { server: 'dns://:53', zones: 'cap.example.', view: '', type: 'success' };
    const ev0 = await metric('coredns_cache_evictions_total', l);
    for (let i = 0; i < 1030; i++) await ask(h, `n${i}.cap.example`);
    expect(h.success.size).toBe(1024);
    expect(await metric('coredns_cache_evictions_total', l)).toBe(ev0 + 6);
  });

  it('a capacity of millions allocates nothing up front; its bound still holds', async () => {
    // `max` would preallocate every slot: about 140 MB in arrays of 40 MB for this bucket.
    const before = getHeapStatistics().used_heap_size;
    const h = await build('cache {\n success 5000000\n}', new FakeNext(() => 0), ['big.example.']);
    expect(getHeapStatistics().used_heap_size - before).toBeLessThan(16 * 1024 * 1024);
    expect(h.success.max).toBe(0);
    expect(h.success.maxSize).toBe(4_999_936); // 256 shards of 19,531, as CoreDNS sizes them
  });

  it('a capacity past the preallocated size evicts at its bound and counts evictions', async () => {
    // 100,096 = 256 shards of 391: the first capacity bounded by size rather than preallocated.
    const l = { server: 'dns://:53', zones: 'grow.example.', view: '', type: 'success' };
    const ev0 = await metric('coredns_cache_evictions_total', l);
    const next = new FakeNext((q) => {
      const msg = replyTo(q.request);
      msg.answers = [a(q.name, '192.0.2.1')];
      q.write(msg, 'upstream');
      return 0;
    });
    const h = await build('cache {\n success 100096\n}', next, ['grow.example.']);
    expect(h.success.max).toBe(0);
    for (let i = 0; i < 100_100; i++) await ask(h, `n${i}.grow.example`);
    expect(h.success.size).toBe(100_096);
    expect(await metric('coredns_cache_evictions_total', l)).toBe(ev0 + 4);
  });
});
