/**
 * trace datadog: spans read back from the stand-in Datadog agent (.bin/datadog-agent,
 * scripts/install-datadog-agent.sh), which decodes them with the agent's own msgpack code, after
 * queries over real sockets; the encoder's edge cases through the same decoder; dd-trace-go's
 * sampling arithmetic, process tags and warnings.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startDatadogAgent, type DatadogAgent } from '../../test/helpers/datadog.js';
import { tcpQuery, udpQuery } from '../../test/helpers/dns.js';
import { freePort } from '../../test/helpers/net.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { waitFor } from '../../test/helpers/wait.js';
import {
  currentTracer,
  DATADOG_DEFAULTS,
  DatadogReporter,
  type DatadogSpan,
  processTags,
  sampledByRate,
  startTracer,
  stopTracer,
} from './datadog.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function agentAndServer(corefile: (addr: string) => string): Promise<{ agent: DatadogAgent; srv: TestServer }> {
  const agent = await startDatadogAgent();
  cleanups.push(() => agent.stop());
  const srv = await startServer(corefile(agent.addr));
  cleanups.push(() => srv.stop());
  return { agent, srv };
}

function span(over: Partial<DatadogSpan> = {}): DatadogSpan {
  return {
    service: 'svc',
    name: 'servedns',
    resource: 'servedns',
    traceId: 1n,
    spanId: 1n,
    parentId: 0n,
    start: 1_700_000_000_000_000_000n,
    duration: 5,
    error: false,
    meta: new Map(),
    metrics: new Map(),
    type: '',
    ...over,
  };
}

describe('dd-trace-go arithmetic', () => {
  it('keeps a trace by rate on its id as sampledByRate does', () => {
    // From dd-trace-go v2.10.1's sampledByRate, run on these ids and rates.
    const cases: [bigint, number, boolean][] = [
      [1n, 0.1, true],
      [12345n, 0.1, false],
      [12345n, 0.5, false],
      [12345n, 0.9, true],
      [6923008525172486095n, 0.9, false],
      [2649767108640611019n, 0.1, false],
      [2649767108640611019n, 0.5, true],
      [9223372036854775807n, 0.1, false],
      [9223372036854775807n, 0.5, true],
      [4611686018427387904n, 0.5, false],
      [4611686018427387904n, 0.9, true],
    ];
    for (const [id, rate, keep] of cases) expect(sampledByRate(id, rate), `${id} at ${rate}`).toBe(keep);
    expect(sampledByRate(6923008525172486095n, 1)).toBe(true);
    expect(sampledByRate(1n, 0)).toBe(false);
  });

  it('names the process as dd-trace-go names it, the script for the executable', () => {
    expect(processTags('/opt/clusterdns/bin/clusterdns', '/srv/Work Dir')).toBe(
      'entrypoint.name:clusterdns,entrypoint.type:script,entrypoint.workdir:work_dir,svc.user:true',
    );
    expect(processTags('/app/dist/main.js', '/')).toBe(
      'entrypoint.basedir:dist,entrypoint.name:main,entrypoint.type:script,svc.user:true',
    );
  });
});

describe('trace datadog to an agent', () => {
  it('sends one servedns span per traced query, tagged as CoreDNS tags it', async () => {
    const { agent, srv } = await agentAndServer(
      (addr) => `. {\n  trace datadog ${addr} {\n    service DNSTest\n  }\n  errors\n  cache\n  whoami\n}\n`,
    );
    await udpQuery(srv.port, 'one.example.', 'A');
    await tcpQuery(srv.port, 'two.example.', 'AAAA');
    const traces = await agent.waitTraces(2);
    expect(traces.map((t) => t.length)).toEqual([1, 1]);
    const [a, b] = traces.map((t) => t[0]!);
    for (const s of [a!, b!]) {
      expect(s).toMatchObject({ name: 'servedns', resource: 'servedns', service: 'DNSTest', type: '', error: 0 });
      expect(s.parent_id).toBe('0');
      expect(s.trace_id).toBe(s.span_id);
      expect(s.metrics).toMatchObject({
        '_dd.agent_psr': 1,
        '_dd.top_level': 1,
        _sampling_priority_v1: 1,
        process_id: process.pid,
      });
      expect(s.meta).toMatchObject({ dns: 'true', '_dd.p.dm': '-1', 'coredns.io@remote': '127.0.0.1' });
    }
    expect([a!.meta['coredns.io@name'], a!.meta['coredns.io@type'], a!.meta['coredns.io@proto']]).toEqual([
      'one.example.',
      'A',
      'udp',
    ]);
    expect([b!.meta['coredns.io@name'], b!.meta['coredns.io@type'], b!.meta['coredns.io@proto']]).toEqual([
      'two.example.',
      'AAAA',
      'tcp',
    ]);
    expect(a!.meta['coredns.io@rcode']).toBe('NOERROR');
    const { traces: reqs } = await agent.requests();
    expect(reqs[0]).toMatchObject({ method: 'POST', path: '/v0.4/traces' });
    expect(reqs[0]!.headers).toMatchObject({ 'Content-Type': 'application/msgpack', 'Datadog-Meta-Lang': 'nodejs' });
  });

  it('publishes the 128-bit trace id as trace/traceid', async () => {
    const { agent, srv } = await agentAndServer(
      (addr) => `. {\n  metadata\n  log . "traceid {/trace/traceid}"\n  trace datadog ${addr}\n  whoami\n}\n`,
    );
    await udpQuery(srv.port, 'one.example.', 'A');
    const s = (await agent.waitTraces(1))[0]![0]!;
    const line = await waitFor('the log line', () => srv.logs.find((l) => l.includes('traceid ')));
    expect(line).toContain(`traceid ${s.meta['_dd.p.tid']}${BigInt(s.span_id).toString(16).padStart(16, '0')}`);
  });

  it('carries every msgpack form the agent decodes: long strings, big maps, 64-bit ids', async () => {
    const agent = await startDatadogAgent();
    cleanups.push(() => agent.stop());
    const reporter = new DatadogReporter({ agent: agent.addr, warn: () => undefined });
    const meta = new Map<string, string>();
    for (let i = 0; i < 20; i++) meta.set(`k${i}`, `v${i}`);
    meta.set('s8', 'x'.repeat(200));
    meta.set('s16', 'é'.repeat(300));
    meta.set('s32', 'y'.repeat(70_000));
    const metrics = new Map<string, number>([
      ['f', 0.25],
      ['neg', -3],
    ]);
    reporter.record([
      span({ traceId: 2n ** 64n - 1n, spanId: 2n ** 63n - 1n, parentId: 0n, meta, metrics }),
      span({ spanId: 200n, parentId: 2n ** 63n - 1n, traceId: 2n ** 64n - 1n, duration: 70_000, error: true }),
    ]);
    await reporter.close();
    const [t] = await agent.waitTraces(1);
    expect(t).toHaveLength(2);
    expect(t![0]).toMatchObject({
      trace_id: '18446744073709551615',
      span_id: '9223372036854775807',
      parent_id: '0',
      start: 1_700_000_000_000_000_000,
      metrics: { f: 0.25, neg: -3 },
    });
    expect(t![0]!.meta).toEqual(Object.fromEntries(meta));
    expect(t![1]).toMatchObject({ span_id: '200', parent_id: '9223372036854775807', duration: 70_000, error: 1 });
  });

  it('takes the sampling rates the agent answers with', async () => {
    const answers: string[] = [];
    const fake = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        answers.push(String(req.headers['x-datadog-trace-count']));
        res.end(JSON.stringify({ rate_by_service: { 'service:svc,env:': 0, 'service:,env:': 1 } }));
      });
    });
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => fake.close(r)));
    const reporter = new DatadogReporter({
      agent: `127.0.0.1:${(fake.address() as AddressInfo).port}`,
      warn: () => undefined,
      flushIntervalMs: 10,
    });
    cleanups.push(() => reporter.close());
    expect(reporter.priority('svc', 12345n)).toEqual({ rate: 1, keep: true });
    reporter.record([span()]);
    await waitFor('the agent rates', () => reporter.priority('svc', 12345n).rate === 0);
    expect(reporter.priority('svc', 12345n)).toEqual({ rate: 0, keep: false });
    expect(reporter.priority('other', 12345n)).toEqual({ rate: 1, keep: true });
    expect(answers).toEqual(['1']);
  });

  it('a reload that fails after its blocks started gives the spans back to the old tracer', async () => {
    const dead = await freePort();
    const tracer = (service: string) => ({
      reporter: new DatadogReporter({ agent: `127.0.0.1:${dead}`, warn: () => undefined }),
      service,
    });
    const old = tracer('old');
    const next = tracer('next');
    startTracer(old);
    startTracer(next); // the new configuration's startup
    expect(currentTracer()).toBe(next);
    await stopTracer(next); // its shutdown, as the reload fails before it serves
    expect(currentTracer()).toBe(old);
    await stopTracer(old);
    expect(currentTracer()).toBe(null);
  });

  it('gives up a send whose reply trickles past the deadline, so close() returns', async () => {
    // An agent that reads the payload, then sends its reply one byte every 50 ms, never ending.
    const timers: NodeJS.Timeout[] = [];
    const slow = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        timers.push(setInterval(() => res.write(' '), 50));
      });
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    cleanups.push(() => {
      for (const t of timers) clearInterval(t);
      slow.closeAllConnections();
      return new Promise<void>((r) => slow.close(() => r()));
    });
    const warnings: string[] = [];
    const saved = DATADOG_DEFAULTS.timeoutMs;
    DATADOG_DEFAULTS.timeoutMs = 300;
    try {
      const reporter = new DatadogReporter({
        agent: `127.0.0.1:${(slow.address() as AddressInfo).port}`,
        warn: (m) => warnings.push(m),
      });
      reporter.record([span()]);
      // Without a deadline on the whole exchange this never resolves (the test times out).
      await reporter.close();
    } finally {
      DATADOG_DEFAULTS.timeoutMs = saved;
    }
    expect(warnings.join('\n')).toContain('context deadline exceeded');
  });

  it('logs the traces it loses when the agent is away, at most once a minute', async () => {
    const dead = await freePort();
    const warnings: string[] = [];
    const reporter = new DatadogReporter({
      agent: `127.0.0.1:${dead}`,
      warn: (m) => warnings.push(m),
      flushIntervalMs: 10,
    });
    reporter.record([span()]);
    reporter.record([span()]);
    await waitFor('the warning', () => warnings.length > 0);
    reporter.record([span()]);
    await reporter.close();
    expect(warnings).toEqual([
      `Datadog exporter ERROR: lost 2 traces: Post "http://127.0.0.1:${dead}/v0.4/traces": dial tcp 127.0.0.1:${dead}: connect: connection refused`,
    ]);
  });

  it('sends with the new configuration after a reload, the old traces first', async () => {
    const { agent, srv } = await agentAndServer((addr) => `. {\n  trace datadog ${addr}\n  whoami\n}\n`);
    await udpQuery(srv.port, 'one.example.', 'A');
    await srv.reload(`. {\n  trace datadog ${agent.addr} {\n    service after\n  }\n  whoami\n}\n`);
    await udpQuery(srv.port, 'two.example.', 'A');
    const traces = await agent.waitTraces(2);
    expect(traces.map((t) => [t[0]!.service, t[0]!.meta['coredns.io@name']])).toEqual([
      ['coredns', 'one.example.'],
      ['after', 'two.example.'],
    ]);
  });
});
