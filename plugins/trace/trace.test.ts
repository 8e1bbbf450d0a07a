/**
 * trace: options parsed as CoreDNS 1.15.0 parses them (errors worded alike), and spans read back
 * from a real Zipkin collector (.bin/zipkin-collector, scripts/install-zipkin-collector.sh) after
 * queries over real sockets: names, tags, parent/child structure, `every`, the reporter's
 * batching and its warnings. B3 continuation is checked on the handler with a recorder.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { Rcode } from '../../src/dns/constants.js';
import type { Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import type { SpanModel } from '../../src/tracing/span.js';
import { makeQuery } from '../../test/helpers/dns.js';
import { freePort } from '../../test/helpers/net.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { dispenserFor } from '../../test/helpers/setup.js';
import { waitFor } from '../../test/helpers/wait.js';
import { spanTree, startCollector, type Collector, type ZipkinSpan } from '../../test/helpers/zipkin.js';
import { udpQuery, tcpQuery } from '../../test/helpers/dns.js';
import { TraceHandler, TRACE_ID_LABEL } from './handler.js';
import { localEndpoint } from './index.js';
import { parseTrace } from './setup.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function describeError(text: string): string {
  try {
    parseTrace(dispenserFor(text, 'trace'));
  } catch (e) {
    if (e instanceof ConfigError) return e.describe();
    throw e;
  }
  throw new Error(`no error for ${text}`);
}

describe('trace setup', () => {
  it('defaults to zipkin on localhost:9411 and builds the spans URL', () => {
    expect(parseTrace(dispenserFor('trace'))).toMatchObject({
      endpointType: 'zipkin',
      endpoint: 'http://localhost:9411/api/v2/spans',
      serviceName: 'coredns',
      every: 1,
      clientServer: false,
    });
    expect(parseTrace(dispenserFor('trace tracinghost:9253')).endpoint).toBe('http://tracinghost:9253/api/v2/spans');
    expect(parseTrace(dispenserFor('trace ZIPKIN HTTPS://h/zipkin/api/v2/spans')).endpoint).toBe(
      'HTTPS://h/zipkin/api/v2/spans',
    );
    // One argument is always a Zipkin endpoint, even one spelled like a type.
    expect(parseTrace(dispenserFor('trace datadog')).endpoint).toBe('http://datadog/api/v2/spans');
    expect(parseTrace(dispenserFor('trace DataDog localhost:8126'))).toMatchObject({
      endpointType: 'datadog',
      endpoint: 'localhost:8126',
    });
  });

  it('reads every option, later values winning', () => {
    const cfg = parseTrace(
      dispenserFor(
        'trace h:1 {\n every 100\n service dnsproxy\n client_server\n datadog_analytics_rate 0.5\n' +
          ' zipkin_max_backlog_size 7\n zipkin_max_batch_size 3\n zipkin_max_batch_interval 250ms\n every 5\n client_server false\n}',
      ),
    );
    expect(cfg).toMatchObject({
      every: 5,
      serviceName: 'dnsproxy',
      clientServer: false,
      datadogAnalyticsRate: 0.5,
      zipkinMaxBacklogSize: 7,
      zipkinMaxBatchSize: 3,
      zipkinMaxBatchIntervalMs: 250,
    });
  });

  // Each text is what CoreDNS 1.15.0 prints for the same Corefile (checked against .bin/coredns).
  it.each([
    ['trace {\nevery x\n}', 'plugin/trace: strconv.ParseUint: parsing "x": invalid syntax'],
    [
      'trace a b c',
      "plugin/trace: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'c'",
    ],
    ['trace foo localhost', "plugin/trace: tracing endpoint type 'foo' is not supported"],
    ['trace {\nclient_server maybe\n}', 'plugin/trace: strconv.ParseBool: parsing "maybe": invalid syntax'],
    [
      'trace {\ndatadog_analytics_rate 2\n}',
      "plugin/trace: datadog analytics rate must be between 0 and 1, '2.000000' is not supported",
    ],
    ['trace {\nbogus\n}', "plugin/trace: Corefile:2 - Error during parsing: unknown property 'bogus'"],
    [
      'trace {\nevery\n}',
      "plugin/trace: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'every'",
    ],
    ['trace {\nzipkin_max_batch_interval 5\n}', 'plugin/trace: time: missing unit in duration "5"'],
    ['trace {\nzipkin_max_batch_size x\n}', 'plugin/trace: strconv.Atoi: parsing "x": invalid syntax'],
  ])('%j fails as CoreDNS does', (text, want) => {
    expect(describeError(text)).toBe(want);
  });

  it('puts the bind address and port in the local endpoint', () => {
    expect(localEndpoint('CoreDNS', [], 53)).toEqual({ serviceName: 'coredns' });
    expect(localEndpoint('dns', ['127.0.0.1'], 1053)).toEqual({ serviceName: 'dns', ipv4: '127.0.0.1', port: 1053 });
    expect(localEndpoint('dns', ['::1'], 53)).toEqual({ serviceName: 'dns', ipv6: '::1', port: 53 });
  });
});

/** A handler that writes an answer with `rcode`, or fails with SERVFAIL unwritten. */
function answering(rc: number, fail = false): Handler {
  return {
    name: 'whoami',
    serve(q: Query) {
      if (fail) return q.fail(new Error('plugin/whoami: boom'), Rcode.SERVFAIL);
      const buf = Buffer.from(q.raw);
      buf[2] = 0x84;
      buf[3] = rc;
      q.writeWire(buf, 'whoami');
      return rc;
    },
  };
}

function recorderHandler(
  o: { every?: number; clientServer?: boolean; metadata?: boolean },
  next: Handler,
): { h: TraceHandler; spans: SpanModel[] } {
  const spans: SpanModel[] = [];
  const h = new TraceHandler(
    {
      every: o.every ?? 1,
      clientServer: o.clientServer ?? false,
      metadata: o.metadata ?? false,
      tracer: { recorder: { record: (s) => void spans.push(s) }, localEndpoint: { serviceName: 'coredns' } },
    },
    next,
  );
  return { h, spans };
}

describe('trace handler', () => {
  it('tags the root span as CoreDNS does, with the written RCODE or the returned one', async () => {
    const { h, spans } = recorderHandler({}, answering(Rcode.NXDOMAIN));
    await h.serve(makeQuery('Www.Example.ORG.', 'AAAA', { transport: { remoteAddress: '192.0.2.7', proto: 'tcp' } }));
    expect(spans).toHaveLength(1);
    const s = spans[0]!;
    expect(s).toMatchObject({ name: 'servedns', kind: 'SERVER', localEndpoint: { serviceName: 'coredns' } });
    expect(s.id).toBe(s.traceId);
    expect(s.traceId).toMatch(/^[0-7][0-9a-f]{15}$/);
    expect(s.parentId).toBeUndefined();
    expect(s.tags).toEqual({
      'coredns.io/name': 'www.example.org.',
      'coredns.io/type': 'AAAA',
      'coredns.io/proto': 'tcp',
      'coredns.io/remote': '192.0.2.7',
      'coredns.io/rcode': 'NXDOMAIN',
    });

    const failing = recorderHandler({}, answering(0, true));
    await failing.h.serve(makeQuery('a.example.', 'A'));
    expect(failing.spans[0]!.tags).toMatchObject({ 'coredns.io/rcode': 'SERVFAIL', error: 'true' });
    expect(failing.spans[0]!.annotations?.map((a) => a.value)).toEqual([
      'event:error',
      'error.object:plugin/whoami: boom',
    ]);
  });

  it('traces one query in every N, and none with every 0', async () => {
    const { h, spans } = recorderHandler({ every: 3 }, answering(0));
    for (let i = 1; i <= 7; i++) await h.serve(makeQuery(`q${i}.example.`, 'A'));
    expect(spans.map((s) => s.tags?.['coredns.io/name'])).toEqual(['q3.example.', 'q6.example.']);
    const none = recorderHandler({ every: 0 }, answering(0));
    for (let i = 1; i <= 3; i++) await none.h.serve(makeQuery(`q${i}.example.`, 'A'));
    expect(none.spans).toEqual([]);
  });

  it('continues a DoH client B3 context: child by default, the same span with client_server', async () => {
    const headers = {
      'x-b3-traceid': '463ac35c9f6413ad48485a3953bb6124',
      'x-b3-spanid': 'a2fb4a1d1a96d312',
      'x-b3-sampled': '1',
    };
    const child = recorderHandler({}, answering(0));
    await child.h.serve(makeQuery('a.example.', 'A', { transport: { httpHeaders: headers } }));
    expect(child.spans[0]).toMatchObject({ traceId: '463ac35c9f6413ad48485a3953bb6124', parentId: 'a2fb4a1d1a96d312' });
    expect(child.spans[0]!.id).not.toBe('a2fb4a1d1a96d312');
    expect(child.spans[0]!.shared).toBeUndefined();

    const joined = recorderHandler({ clientServer: true }, answering(0));
    await joined.h.serve(
      makeQuery('a.example.', 'A', {
        transport: { httpHeaders: { b3: '80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1-05e3ac9a4f6e3b90' } },
      }),
    );
    expect(joined.spans[0]).toMatchObject({
      traceId: '80f198ee56343ba864fe8b2a57d3eff7',
      id: 'e457b5a2e4d86bd1',
      parentId: '05e3ac9a4f6e3b90',
      shared: true,
    });

    // Sampled 0: the client decided against recording; debug forces it.
    const unsampled = recorderHandler({}, answering(0));
    await unsampled.h.serve(makeQuery('a.example.', 'A', { transport: { httpHeaders: { b3: '0' } } }));
    expect(unsampled.spans).toEqual([]);
    const debug = recorderHandler({}, answering(0));
    await debug.h.serve(
      makeQuery('a.example.', 'A', { transport: { httpHeaders: { 'x-b3-flags': '1', 'x-b3-sampled': '0' } } }),
    );
    expect(debug.spans[0]).toMatchObject({ debug: true });
    // Malformed headers are ignored: a trace of its own.
    const bad = recorderHandler({}, answering(0));
    await bad.h.serve(
      makeQuery('a.example.', 'A', { transport: { httpHeaders: { 'x-b3-traceid': 'zz', 'x-b3-spanid': '1' } } }),
    );
    expect(bad.spans[0]!.parentId).toBeUndefined();
  });

  it('publishes trace/traceid for queries the metadata plugin collected for', async () => {
    const { h, spans } = recorderHandler({ metadata: true }, answering(0));
    const q = makeQuery('a.example.', 'A');
    q.meta.set(TRACE_ID_LABEL, '\u0000pending');
    await h.serve(q);
    expect(q.metaValue(TRACE_ID_LABEL)).toBe(spans[0]!.traceId);
    const outside = makeQuery('a.example.', 'A');
    await h.serve(outside);
    expect(outside.meta.has(TRACE_ID_LABEL)).toBe(false);
  });
});

describe('trace to a Zipkin collector', () => {
  let collector: Collector;
  let srv: TestServer;
  async function start(corefile: (url: string) => string): Promise<void> {
    collector = await startCollector();
    cleanups.push(() => collector.stop());
    srv = await startServer(corefile(collector.url));
    cleanups.push(() => srv.stop());
  }

  it('reports a servedns span with a child per plugin', async () => {
    await start(
      (url) =>
        `. {\n  trace ${url} {\n    service DNSTest\n    zipkin_max_batch_interval 20ms\n  }\n  errors\n  cache\n  whoami\n}\n`,
    );
    await udpQuery(srv.port, 'one.example.', 'A');
    await tcpQuery(srv.port, 'two.example.', 'AAAA');
    const traces = await collector.waitTraces('dnstest', 2, (t) => t.length === 4);
    expect(traces.map(spanTree)).toEqual(['servedns(errors(cache(whoami)))', 'servedns(errors(cache(whoami)))']);
    const root = (t: ZipkinSpan[]): ZipkinSpan => t.find((s) => s.name === 'servedns')!;
    expect(traces.map((t) => root(t).tags)).toEqual([
      {
        'coredns.io/name': 'one.example.',
        'coredns.io/type': 'A',
        'coredns.io/proto': 'udp',
        'coredns.io/remote': '127.0.0.1',
        'coredns.io/rcode': 'NOERROR',
      },
      {
        'coredns.io/name': 'two.example.',
        'coredns.io/type': 'AAAA',
        'coredns.io/proto': 'tcp',
        'coredns.io/remote': '127.0.0.1',
        'coredns.io/rcode': 'NOERROR',
      },
    ]);
    for (const t of traces) {
      const r = root(t);
      expect(r).toMatchObject({ kind: 'SERVER', localEndpoint: { serviceName: 'dnstest' } });
      expect(r.id).toBe(r.traceId);
      for (const s of t) {
        expect(s.traceId).toBe(r.traceId);
        expect(s.duration).toBeGreaterThan(0);
        if (s !== r) expect(s.kind).toBeUndefined();
      }
    }
  });

  it('samples one query in every N', async () => {
    await start((url) => `. {\n  trace ${url} {\n    every 3\n    zipkin_max_batch_interval 20ms\n  }\n  whoami\n}\n`);
    for (let i = 1; i <= 7; i++) await udpQuery(srv.port, `q${i}.example.`, 'A');
    await collector.waitTraces('coredns', 2);
    // Two more queries: the 9th is the next traced one; had any other been traced, it would show.
    for (let i = 8; i <= 9; i++) await udpQuery(srv.port, `q${i}.example.`, 'A');
    const traces = await collector.waitTraces('coredns', 3);
    expect(traces.map((t) => t.find((s) => s.name === 'servedns')!.tags!['coredns.io/name'])).toEqual([
      'q3.example.',
      'q6.example.',
      'q9.example.',
    ]);
  });

  it('adds a connect span per forward attempt, tagged with the upstream', async () => {
    collector = await startCollector();
    cleanups.push(() => collector.stop());
    const upstreamPort = await freePort();
    srv = await startServer(
      `. {\n  trace ${collector.url} {\n    zipkin_max_batch_interval 20ms\n  }\n  forward . 127.0.0.1:${upstreamPort}\n}\n` +
        `.:${upstreamPort} {\n  whoami\n}\n`,
    );
    cleanups.push(() => srv.stop());
    await udpQuery(srv.port, 'fwd.example.', 'A');
    const [t] = await collector.waitTraces('coredns', 1, (t) => t.length === 3);
    expect(spanTree(t!)).toBe('servedns(forward(connect))');
    expect(t!.find((s) => s.name === 'connect')!.tags).toEqual({ 'peer.address': `127.0.0.1:${upstreamPort}` });
  });

  it('sends a batch when it is full, and warns as zipkin-go when the collector is away', async () => {
    await start(
      (url) =>
        `. {\n  trace ${url} {\n    zipkin_max_batch_size 4\n    zipkin_max_batch_interval 1h\n  }\n  whoami\n}\n`,
    );
    // Two queries are four spans (servedns, whoami): one full batch, sent without the timer.
    await udpQuery(srv.port, 'a.example.', 'A');
    await udpQuery(srv.port, 'b.example.', 'A');
    await collector.waitTraces('coredns', 2, (t) => t.length === 2);
    expect((await collector.health()).posts).toBe(1);

    const dead = await freePort();
    await srv.reload(`. {\n  trace 127.0.0.1:${dead} {\n    zipkin_max_batch_interval 20ms\n  }\n  whoami\n}\n`);
    await udpQuery(srv.port, 'c.example.', 'A');
    await waitFor('the reporter warning', () =>
      srv.logs.find((l) =>
        l.startsWith(
          `[WARNING] plugin/trace: failed to send the request: Post "http://127.0.0.1:${dead}/api/v2/spans": dial tcp 127.0.0.1:${dead}: connect: connection refused`,
        ),
      ),
    );
  });
});
