import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { decode } from '../../src/dns/message.js';
import { registry } from '../../src/metrics/registry.js';
import type { Handler } from '../../src/plugin.js';
import { makeQuery } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { dispenserFor, setupContext, type TestContext } from '../../test/helpers/setup.js';
import { a, FakeNext, TestUpstream } from '../../test/helpers/upstream.js';
import { waitFor } from '../../test/helpers/wait.js';
import { ForwardHandler } from './handler.js';
import { forward } from './index.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function upstream(): Promise<TestUpstream> {
  const u = await TestUpstream.start();
  cleanups.push(() => u.stop());
  return u;
}

async function build(text: string, next: Handler | null = null): Promise<{ h: Handler; ctx: TestContext }> {
  const ctx = setupContext();
  const factory = await forward.setup(dispenserFor(text, 'forward'), ctx);
  // Every setup of the block ran: the factory may look up capabilities (dnstap's), as in a server.
  ctx.seal();
  await ctx.start();
  cleanups.push(() => ctx.stop());
  return { h: factory!(next, ctx.block), ctx };
}

async function metricValue(name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return 0;
  const data = await metric.get();
  let sum = 0;
  for (const v of data.values) {
    const vl = v.labels as Record<string, string | number>;
    if ((v as { metricName?: string }).metricName?.endsWith('_bucket')) continue;
    if ((v as { metricName?: string }).metricName?.endsWith('_sum')) continue;
    if (Object.entries(labels).every(([k, val]) => String(vl[k]) === val)) sum += v.value;
  }
  return sum;
}

describe('forward: answers', () => {
  it('returns the upstream reply as is, with the client id and question case', async () => {
    const u = await upstream();
    u.on('www.example.org', {
      answers: [a('www.example.org', '192.0.2.1', 120), a('www.example.org', '192.0.2.2', 60)],
      aa: true,
    });
    const { h } = await build(`forward . ${u.addr}`);
    const q = makeQuery('WWW.Example.ORG', 'A', { id: 4242 });
    const rc = await h.serve(q);
    expect(rc).toBe(0);
    const wire = q.reply!.wire();
    expect(wire.readUInt16BE(0)).toBe(4242);
    const msg = decode(wire);
    expect(msg.questions[0]!.name).toBe('WWW.Example.ORG');
    expect(rrLines(msg.answers)).toEqual(['www.example.org. 120 IN A 192.0.2.1', 'www.example.org. 60 IN A 192.0.2.2']);
    expect((msg.flags ?? 0) & 0x0400).toBe(0x0400); // AA kept
    expect(q.reply!.plugin).toBe('forward');
    expect(u.received.at(-1)!.proto).toBe('udp');
    expect(u.received.at(-1)!.id).not.toBe(4242);
  });

  it('passes NXDOMAIN and SERVFAIL replies through as written replies (the status says what happened)', async () => {
    const u = await upstream();
    u.on('fail.example.org', { rcode: 2 });
    const { h } = await build(`forward . ${u.addr}`);
    const q1 = makeQuery('nope.example.org', 'A');
    expect(await h.serve(q1)).toBe(3);
    expect(q1.reply!.rcode).toBe(3);
    const q2 = makeQuery('fail.example.org', 'A');
    expect(await h.serve(q2)).toBe(2); // what happened; `q.reply` says it was written (docs/ARCHITECTURE.md)
    expect(q2.reply).not.toBeNull();
    expect(q2.reply!.rcode).toBe(2);
  });

  it('uses the client transport, and TCP with force_tcp', async () => {
    const u = await upstream();
    u.on('x.example', { answers: [a('x.example', '192.0.2.9')] });
    const { h } = await build(`forward . ${u.addr}`);
    await h.serve(makeQuery('x.example', 'A', { transport: { proto: 'tcp' } }));
    expect(u.received.at(-1)!.proto).toBe('tcp');
    const { h: h2 } = await build(`forward . ${u.addr} {\n force_tcp\n}`);
    const q = makeQuery('x.example', 'A');
    await h2.serve(q);
    expect(u.received.at(-1)!.proto).toBe('tcp');
    expect(rrLines(decode(q.reply!.wire()).answers)).toEqual(['x.example. 300 IN A 192.0.2.9']);
  });

  it('sends the client OPT record unchanged', async () => {
    const u = await upstream();
    const { h } = await build(`forward . ${u.addr}`);
    await h.serve(makeQuery('e.example', 'A', { edns: 1232, do: true }));
    expect(u.received.at(-1)!.edns).toBe(true);
  });

  it('reuses pooled TCP connections and retries a cached connection the upstream closed', async () => {
    const u = await upstream();
    u.on('tcp.example', { answers: [a('tcp.example', '192.0.2.7')] });
    const { h } = await build(`forward . ${u.addr} {\n force_tcp\n}`);
    const hits0 = await metricValue('coredns_proxy_conn_cache_hits_total', { to: u.addr, proto: 'tcp' });
    await h.serve(makeQuery('tcp.example', 'A'));
    await h.serve(makeQuery('tcp.example', 'A'));
    expect(await metricValue('coredns_proxy_conn_cache_hits_total', { to: u.addr, proto: 'tcp' })).toBe(hits0 + 1);
    await u.stop();
    await u.restart();
    const q = makeQuery('tcp.example', 'A');
    expect(await h.serve(q)).toBe(0);
    expect(q.reply!.rcode).toBe(0);
  });

  it('answers FORMERR when the upstream replies for another question', async () => {
    const u = await upstream();
    u.on('wrong.example', { wrongQuestion: true, answers: [a('wrong.example', '192.0.2.1')] });
    const { h } = await build(`forward . ${u.addr} {\n force_tcp\n}`);
    const q = makeQuery('wrong.example', 'A', { id: 7 });
    expect(await h.serve(q)).toBe(1); // FORMERR, written by forward
    const msg = decode(q.reply!.wire());
    expect(msg.id).toBe(7);
    expect((msg.flags ?? 0) & 0xf).toBe(1);
    expect(msg.answers).toEqual([]);
  });

  it('counts requests and responses in both metric families', async () => {
    const u = await upstream();
    u.on('m.example', { answers: [a('m.example', '192.0.2.1')] });
    const { h } = await build(`forward . ${u.addr}`);
    const before = await metricValue('coredns_forward_requests_total', { to: u.addr });
    await h.serve(makeQuery('m.example', 'A'));
    expect(await metricValue('coredns_forward_requests_total', { to: u.addr })).toBe(before + 1);
    expect(await metricValue('coredns_forward_responses_total', { to: u.addr, rcode: 'NOERROR' })).toBe(1);
    const hist = await registry.getSingleMetric('coredns_proxy_request_duration_seconds')!.get();
    const count = hist.values.find(
      (v) =>
        (v as { metricName?: string }).metricName === 'coredns_proxy_request_duration_seconds_count' &&
        v.labels.to === u.addr &&
        v.labels.rcode === 'NOERROR' &&
        v.labels.proxy_name === 'forward',
    );
    expect(count?.value).toBe(1);
  });
});

describe('forward: truncation', () => {
  it('passes a truncated UDP reply to a UDP client (the client retries over TCP)', async () => {
    const u = await upstream();
    u.on('big.example', { truncateUdp: true, answers: [a('big.example', '192.0.2.1')] });
    const { h } = await build(`forward . ${u.addr}`);
    const q = makeQuery('big.example', 'A');
    await h.serve(q);
    expect(q.reply!.flags & 0x0200).toBe(0x0200);
    const q2 = makeQuery('big.example', 'A', { transport: { proto: 'tcp' } });
    await h.serve(q2);
    expect(q2.reply!.flags & 0x0200).toBe(0);
    expect(q2.reply!.answerCount).toBe(1);
  });

  it('with prefer_udp, retries a truncated answer over TCP to the same upstream', async () => {
    const u = await upstream();
    u.on('big.example', { truncateUdp: true, answers: [a('big.example', '192.0.2.1')] });
    const { h } = await build(`forward . ${u.addr} {\n prefer_udp\n}`);
    const q = makeQuery('big.example', 'A', { transport: { proto: 'tcp' } });
    await h.serve(q);
    expect(q.reply!.flags & 0x0200).toBe(0);
    expect(q.reply!.answerCount).toBe(1);
    expect(u.received.map((r) => r.proto)).toEqual(['udp', 'tcp']);
  });
});

describe('forward: upstream selection and health', () => {
  it('sequential tries upstreams in order; a failing one is skipped once health checks mark it down', async () => {
    const dead = await upstream();
    dead.defaultBehaviour = { drop: true };
    const alive = await upstream();
    alive.on('s.example', { answers: [a('s.example', '192.0.2.5')] });
    const { h } = await build(
      `forward . ${dead.addr} ${alive.addr} {\n policy sequential\n read_timeout 200ms\n health_check 20ms\n}`,
    );
    const fwd = h as ForwardHandler;
    const q = makeQuery('s.example', 'A');
    expect(await h.serve(q)).toBe(0);
    expect(dead.count('s.example')).toBe(1);
    expect(alive.count('s.example')).toBe(1);
    const failsBefore = await metricValue('coredns_proxy_healthcheck_failures_total', { to: dead.addr });
    await waitFor('the upstream marked down', () => fwd.proxies[0]!.down(2));
    expect(await metricValue('coredns_proxy_healthcheck_failures_total', { to: dead.addr })).toBeGreaterThan(
      failsBefore,
    );
    expect(await metricValue('coredns_forward_healthcheck_failures_total', { to: dead.addr })).toBeGreaterThan(0);
    const q2 = makeQuery('s.example', 'A');
    expect(await h.serve(q2)).toBe(0);
    expect(dead.count('s.example')).toBe(1); // skipped
    expect(alive.count('s.example')).toBe(2);
  });

  it('all upstreams down: counts healthcheck_broken, tries one at random, SERVFAIL naming upstream', async () => {
    const d1 = await upstream();
    d1.defaultBehaviour = { drop: true };
    const { h } = await build(
      `forward . ${d1.addr} {\n read_timeout 100ms\n health_check 20ms\n max_connect_attempts 1\n}`,
    );
    const fwd = h as ForwardHandler;
    const q = makeQuery('down.example', 'A');
    expect(await h.serve(q)).toBe(2);
    expect(q.reply).toBeNull();
    expect(q.error!.message).toMatch(
      new RegExp(`^read udp 127\\.0\\.0\\.1:\\d+->${d1.addr.replace(/\./g, '\\.')}: i/o timeout$`),
    );
    await waitFor('the upstream marked down', () => fwd.proxies[0]!.down(2));
    const broken = await metricValue('coredns_forward_healthcheck_broken_total');
    const q2 = makeQuery('down.example', 'A');
    expect(await h.serve(q2)).toBe(2);
    expect(await metricValue('coredns_forward_healthcheck_broken_total')).toBe(broken + 1);
    expect(d1.count('down.example')).toBe(2); // tried anyway
  });

  it('failfast_all_unhealthy_upstreams answers SERVFAIL without trying', async () => {
    const d1 = await upstream();
    d1.defaultBehaviour = { drop: true };
    const { h } = await build(
      `forward . ${d1.addr} {\n read_timeout 100ms\n health_check 20ms\n failfast_all_unhealthy_upstreams\n}`,
    );
    const fwd = h as ForwardHandler;
    await h.serve(makeQuery('ff.example', 'A'));
    await waitFor('the upstream marked down', () => fwd.proxies[0]!.down(2));
    const seen = d1.count('ff.example');
    const q = makeQuery('ff.example', 'A');
    expect(await h.serve(q)).toBe(2);
    expect(q.error!.message).toBe('no healthy proxies');
    expect(d1.count('ff.example')).toBe(seen);
  });

  it('an upstream that dies and comes back is used again after its health probe succeeds', async () => {
    const u = await upstream();
    u.on('back.example', { answers: [a('back.example', '192.0.2.8')] });
    const { h } = await build(`forward . ${u.addr} {\n read_timeout 200ms\n health_check 20ms\n}`);
    const fwd = h as ForwardHandler;
    expect(await h.serve(makeQuery('back.example', 'A'))).toBe(0);
    await u.stop();
    const q = makeQuery('back.example', 'A');
    expect(await h.serve(q)).toBe(2);
    expect(q.error!.message).toContain(u.addr);
    await u.restart();
    await waitFor('the health check to clear the failures', () => fwd.proxies[0]!.fails === 0);
    const q2 = makeQuery('back.example', 'A');
    expect(await h.serve(q2)).toBe(0);
    expect(q2.reply!.answerCount).toBe(1);
  });

  it('max_fails 0 never health-checks (max_fails 1 does, after the same failure)', async () => {
    const d1 = await upstream();
    d1.defaultBehaviour = { drop: true };
    const checks = async (maxFails: number): Promise<number> => {
      const { h } = await build(
        `forward . ${d1.addr} {\n read_timeout 50ms\n max_fails ${maxFails}\n max_connect_attempts 1\n}`,
      );
      const proxy = (h as ForwardHandler).proxies[0]!;
      const healthcheck = vi.spyOn(proxy, 'healthcheck');
      await h.serve(makeQuery('nf.example', 'A')); // the failed attempt is where a check would start
      return healthcheck.mock.calls.length;
    };
    expect(await checks(1)).toBe(1);
    expect(await checks(0)).toBe(0);
  });

  it('round_robin moves the counter-selected upstream to the front', async () => {
    const us = [await upstream(), await upstream(), await upstream()];
    const { h } = await build(`forward . ${us.map((u) => u.addr).join(' ')} {\n policy round_robin\n}`);
    const order: number[] = [];
    for (let k = 0; k < 6; k++) {
      await h.serve(makeQuery(`rr${k}.example`, 'A'));
      order.push(us.findIndex((u) => u.count(`rr${k}.example`) === 1));
    }
    expect(order).toEqual([1, 2, 0, 1, 2, 0]);
  });

  it('random policy spreads queries over both upstreams', async () => {
    const us = [await upstream(), await upstream()];
    const { h } = await build(`forward . ${us[0]!.addr} ${us[1]!.addr}`);
    for (let k = 0; k < 40; k++) await h.serve(makeQuery(`r${k}.example`, 'A'));
    expect(us[0]!.received.length).toBeGreaterThan(0);
    expect(us[1]!.received.length).toBeGreaterThan(0);
    expect(us[0]!.received.length + us[1]!.received.length).toBe(40);
  });

  it('failover tries the next upstream on a listed RCODE and returns the last answer when all did', async () => {
    const u1 = await upstream();
    const u2 = await upstream();
    u1.on('fo.example', { rcode: 5 });
    u2.on('fo.example', { answers: [a('fo.example', '192.0.2.3')] });
    u1.on('all.example', { rcode: 5 });
    u2.on('all.example', { rcode: 5 });
    const { h } = await build(`forward . ${u1.addr} ${u2.addr} {\n policy sequential\n failover REFUSED\n}`);
    const q = makeQuery('fo.example', 'A');
    expect(await h.serve(q)).toBe(0);
    expect(q.reply!.answerCount).toBe(1);
    const q2 = makeQuery('all.example', 'A');
    await h.serve(q2);
    expect(q2.reply!.rcode).toBe(5);
  });
});

describe('forward: chain', () => {
  it('names outside FROM or excepted go to the next plugin; FROM itself is always forwarded', async () => {
    const u = await upstream();
    const next = new FakeNext(() => 5);
    const { h } = await build(`forward example.org ${u.addr} {\n except example.org internal.example.org\n}`, next);
    await h.serve(makeQuery('www.example.com', 'A'));
    await h.serve(makeQuery('a.internal.example.org', 'A'));
    expect(next.calls).toBe(2);
    await h.serve(makeQuery('example.org', 'A'));
    expect(next.calls).toBe(2);
    expect(u.count('example.org')).toBe(1);
  });

  it('several forward lines chain in file order; `next RCODE` hands over to the next forwarder', async () => {
    const u1 = await upstream();
    const u2 = await upstream();
    u1.on('n.example', { rcode: 3 });
    u2.on('n.example', { answers: [a('n.example', '192.0.2.4')] });
    u2.on('other.test', { answers: [a('other.test', '192.0.2.6')] });
    const { h } = await build(`forward example ${u1.addr} {\n next NXDOMAIN\n}\nforward . ${u2.addr}`);
    const q = makeQuery('n.example', 'A');
    expect(await h.serve(q)).toBe(0);
    expect(u1.count('n.example')).toBe(1);
    expect(u2.count('n.example')).toBe(1);
    const q2 = makeQuery('other.test', 'A');
    expect(await h.serve(q2)).toBe(0);
    expect(u1.count('other.test')).toBe(0);
  });

  it('without a next plugin, a name outside FROM fails with "no next plugin found"', async () => {
    const u = await upstream();
    const { h } = await build(`forward example.org ${u.addr}`);
    const q = makeQuery('x.test', 'A');
    expect(await h.serve(q)).toBe(2);
    expect(q.error!.message).toBe('plugin/forward: no next plugin found');
  });
});

describe('forward: max_concurrent', () => {
  it('over the limit: REFUSED without writing, counted, no upstream failure', async () => {
    const u = await upstream();
    u.on('slow.example', { delayMs: 300, answers: [a('slow.example', '192.0.2.1')] });
    const { h } = await build(`forward . ${u.addr} {\n max_concurrent 2\n}`);
    const fwd = h as ForwardHandler;
    const before = await metricValue('coredns_forward_max_concurrent_rejects_total');
    const p1 = h.serve(makeQuery('slow.example', 'A'));
    const p2 = h.serve(makeQuery('slow.example', 'A'));
    expect(fwd.inFlight).toBe(2);
    const q3 = makeQuery('slow.example', 'A');
    const r3 = h.serve(q3);
    expect(r3).toBe(5); // synchronous, no promise
    expect(q3.reply).toBeNull();
    expect(q3.error!.message).toBe('concurrent queries exceeded maximum 2');
    expect(await metricValue('coredns_forward_max_concurrent_rejects_total')).toBe(before + 1);
    expect(await p1).toBe(0);
    expect(await p2).toBe(0);
    expect(fwd.inFlight).toBe(0);
    expect(fwd.proxies[0]!.fails).toBe(0);
    expect(await h.serve(makeQuery('slow.example', 'A'))).toBe(0);
  });
});

describe('forward: DNS over TLS', () => {
  const testdata = new URL('./testdata/', import.meta.url).pathname;

  it('forwards over TLS with tls_servername and the CA given by `tls`, reusing the connection', async () => {
    const u = await upstream();
    const port = await u.enableTls(readFileSync(`${testdata}dot.key`), readFileSync(`${testdata}dot.crt`));
    u.on('dot.example', { answers: [a('dot.example', '192.0.2.53')] });
    const { h } = await build(
      `forward . tls://127.0.0.1:${port} {\n tls ${testdata}dot.crt\n tls_servername dot.test\n}`,
    );
    const to = `127.0.0.1:${port}`;
    const hits0 = await metricValue('coredns_proxy_conn_cache_hits_total', { to, proto: 'tcp-tls' });
    for (const proto of ['udp', 'tcp'] as const) {
      const q = makeQuery('dot.example', 'A', { transport: { proto } });
      expect(await h.serve(q)).toBe(0);
      expect(rrLines(decode(q.reply!.wire()).answers)).toEqual(['dot.example. 300 IN A 192.0.2.53']);
    }
    expect(u.received.map((r) => r.proto)).toEqual(['tls', 'tls']);
    expect(await metricValue('coredns_proxy_conn_cache_hits_total', { to, proto: 'tcp-tls' })).toBe(hits0 + 1);
  });

  it('refuses an upstream whose certificate does not match the server name', async () => {
    const u = await upstream();
    const port = await u.enableTls(readFileSync(`${testdata}dot.key`), readFileSync(`${testdata}dot.crt`));
    const { h } = await build(
      `forward . tls://127.0.0.1%wrong.test:${port} {\n tls ${testdata}dot.crt\n max_fails 0\n max_connect_attempts 1\n}`,
    );
    const q = makeQuery('dot.example', 'A');
    expect(await h.serve(q)).toBe(2);
    expect(q.error!.message).toMatch(new RegExp(`^dial tcp 127\\.0\\.0\\.1:${port}: .*wrong\\.test`));
    expect(u.received).toEqual([]);
  });
});

describe('forward: shutdown', () => {
  it('a query in flight when the instance shuts down (reload) still gets its answer; no socket is left open', async () => {
    const u = await upstream();
    let release!: () => void;
    u.on('late.example', { hold: new Promise<void>((r) => (release = r)), answers: [a('late.example', '192.0.2.77')] });
    const ctx = setupContext();
    const factory = await forward.setup(dispenserFor(`forward . ${u.addr}`, 'forward'), ctx);
    ctx.seal();
    await ctx.start();
    const h = factory!(null, ctx.block) as ForwardHandler;
    const q = makeQuery('late.example', 'A');
    const pending = h.serve(q);
    await waitFor('the query at the upstream', () => u.count('late.example') === 1); // at the upstream, whose reply is held
    await ctx.stop();
    release();
    expect(await pending).toBe(0);
    expect(q.reply!.answerCount).toBe(1);
    expect(h.proxies[0]!.openSockets).toBe(0); // closed once the query was answered
    u.on('late.example', { answers: [a('late.example', '192.0.2.77')] });
    expect(await h.serve(makeQuery('late.example', 'A'))).toBe(0); // a straggler still works...
    expect(h.proxies[0]!.openSockets).toBe(0); // ...and leaves nothing open
  });
});

describe('forward: connection pools', () => {
  it('many concurrent UDP queries share a bounded set of sockets', async () => {
    const u = await upstream();
    u.defaultBehaviour = { delayMs: 20, answers: [] };
    const { h } = await build(`forward . ${u.addr}`);
    const fwd = h as ForwardHandler;
    const all = Array.from({ length: 200 }, (_, i) => h.serve(makeQuery(`p${i}.example`, 'A')));
    expect(fwd.proxies[0]!.openSockets).toBe(4); // 64 in flight per socket before another opens
    expect((await Promise.all(all)).every((rc) => rc === 0)).toBe(true);
    // UDP on loopback may still drop a datagram of such a burst; the retry covers it.
    expect(new Set(u.received.map((r) => r.name)).size).toBe(200);
    expect(fwd.proxies[0]!.openSockets).toBeLessThanOrEqual(4);
  });

  it('expire closes idle TCP connections: the next query dials again', async () => {
    const u = await upstream();
    const { h } = await build(`forward . ${u.addr} {\n force_tcp\n expire 50ms\n}`);
    const misses = () => metricValue('coredns_proxy_conn_cache_misses_total', { to: u.addr, proto: 'tcp' });
    const m0 = await misses();
    await h.serve(makeQuery('e1.example', 'A'));
    await h.serve(makeQuery('e2.example', 'A'));
    expect(await misses()).toBe(m0 + 1);
    await new Promise((r) => setTimeout(r, 200)); // well past `expire`
    await h.serve(makeQuery('e3.example', 'A'));
    expect(await misses()).toBe(m0 + 2);
  });

  it('max_idle_conns bounds the idle TCP connections kept', async () => {
    const u = await upstream();
    u.defaultBehaviour = { delayMs: 30, rcode: 3 };
    const { h } = await build(`forward . ${u.addr} {\n force_tcp\n max_idle_conns 2\n}`);
    const fwd = h as ForwardHandler;
    await Promise.all(Array.from({ length: 6 }, (_, i) => h.serve(makeQuery(`i${i}.example`, 'A'))));
    expect(fwd.proxies[0]!.openSockets).toBe(2);
  });
});

describe('forward: next_on_nodata', () => {
  it('hands NOERROR without answers to the next forwarder', async () => {
    const u1 = await upstream();
    const u2 = await upstream();
    u1.on('nd.example', { rcode: 0 });
    u2.on('nd.example', { answers: [a('nd.example', '192.0.2.99')] });
    const { h } = await build(`forward . ${u1.addr} {\n next_on_nodata\n}\nforward . ${u2.addr}`);
    const q = makeQuery('nd.example', 'A');
    expect(await h.serve(q)).toBe(0);
    expect(q.reply!.answerCount).toBe(1);
    expect(u1.count('nd.example')).toBe(1);
  });

  it('`next` does nothing when the next plugin is not a forwarder', async () => {
    const u1 = await upstream();
    u1.on('nx.example', { rcode: 3 });
    const next = new FakeNext(() => 5);
    const { h } = await build(`forward . ${u1.addr} {\n next NXDOMAIN\n}`, next);
    const q = makeQuery('nx.example', 'A');
    expect(await h.serve(q)).toBe(3);
    expect(next.calls).toBe(0);
  });
});

describe('forward: DNS over HTTPS', () => {
  const testdata = new URL('./testdata/', import.meta.url).pathname;

  for (const method of ['POST', 'GET'] as const) {
    it(`forwards with ${method} to /dns-query, id 0 on the wire, client id restored`, async () => {
      const u = await upstream();
      const port = await u.enableHttps(readFileSync(`${testdata}dot.key`), readFileSync(`${testdata}dot.crt`));
      u.on('doh.example', { answers: [a('doh.example', '192.0.2.80')] });
      const { h } = await build(
        `forward . https://127.0.0.1:${port} {\n tls ${testdata}dot.crt\n tls_servername dot.test\n doh_method ${method}\n}`,
      );
      for (let i = 0; i < 2; i++) {
        const q = makeQuery('doh.example', 'A', { id: 4000 + i });
        expect(await h.serve(q)).toBe(0);
        const m = decode(q.reply!.wire());
        expect(m.id).toBe(4000 + i);
        expect(rrLines(m.answers)).toEqual(['doh.example. 300 IN A 192.0.2.80']);
      }
      expect(u.received.map((r) => `${r.proto}/${r.id}`)).toEqual(['https/0', 'https/0']);
    });
  }

  it('an HTTP error or a dead DoH upstream is a failed attempt named after the upstream', async () => {
    const u = await upstream();
    const port = await u.enableHttps(readFileSync(`${testdata}dot.key`), readFileSync(`${testdata}dot.crt`));
    u.on('gone.example', { closeTcp: true });
    const { h } = await build(
      `forward . https://127.0.0.1:${port} {\n tls ${testdata}dot.crt\n tls_servername dot.test\n max_fails 0\n max_connect_attempts 1\n}`,
    );
    const q = makeQuery('gone.example', 'A');
    expect(await h.serve(q)).toBe(2);
    expect(q.error!.message).toMatch(new RegExp(`^https 127\\.0\\.0\\.1:${port}: `));
  });
});
