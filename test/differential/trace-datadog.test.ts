/**
 * Differential: `trace datadog` against CoreDNS 1.15.0 (dd-trace-go v2.10.1). Both servers run the
 * same Corefile and send to the same stand-in Datadog agent (.bin/datadog-agent, which decodes
 * with the agent's own msgpack code); the same queries go to CoreDNS first, then to clusterdns,
 * and the traces each produced are compared span for span: name, resource, service, type, error,
 * meta and metrics, the parent/child structure, which queries `every` sampled, the requests' path
 * and headers. Ids, times and what names the process (runtime-id, pid, process tags, language)
 * differ by nature and are compared only for their shape.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startDatadogAgent, type DatadogAgent, type DatadogSpan } from '../helpers/datadog.js';
import { a } from '../helpers/upstream.js';
import { encode, exchange, missingBinaries, startPair, type Pair } from './harness.js';

interface Step {
  readonly name: string;
  readonly type: string;
  readonly proto: 'udp' | 'tcp';
}

// In the `.` block (`every 2`) the even steps are traced: a cache hit, a miss forwarded, a hit,
// an NXDOMAIN from the upstream, a TCP query. Every query to `dead.test.` is traced and fails:
// its upstream is a closed port (forward's error, SERVFAIL).
const STEPS: Step[] = [
  { name: 'a.example.org.', type: 'A', proto: 'udp' },
  { name: 'a.example.org.', type: 'A', proto: 'udp' },
  { name: 'b.example.org.', type: 'A', proto: 'udp' },
  { name: 'b.example.org.', type: 'AAAA', proto: 'udp' },
  { name: 'c.example.org.', type: 'A', proto: 'tcp' },
  { name: 'c.example.org.', type: 'A', proto: 'tcp' },
  { name: 'x.example.org.', type: 'A', proto: 'udp' },
  { name: 'nosuch.example.org.', type: 'MX', proto: 'udp' },
  { name: 'd.example.org.', type: 'A', proto: 'udp' },
  { name: 'e.example.org.', type: 'TXT', proto: 'tcp' },
  { name: 'x.dead.test.', type: 'A', proto: 'udp' },
];
const TRACED = STEPS.filter((s, i) => s.name.endsWith('.dead.test.') || (i + 1) % 2 === 0).length;

/** What names the process, not the trace: checked for its shape, then left out of the comparison. */
const PROCESS_META = ['runtime-id', '_dd.p.tid', '_dd.tags.process', 'language'];

/** One trace without its ids, times and process names: what must be equal between the servers. */
function shape(t: readonly DatadogSpan[]): unknown[] {
  const ids = new Set(t.map((s) => s.span_id));
  return t
    .map((s) => {
      // The root's id is the trace's low 64 bits; the high 64 are the start's Unix seconds.
      const root = s.parent_id === '0';
      if (root) expect(s.trace_id).toBe(s.span_id);
      expect(s.span_id).toMatch(/^[1-9]\d*$/);
      expect(BigInt(s.span_id)).toBeLessThan(2n ** 63n);
      expect(s.duration).toBeGreaterThan(0);
      expect(Math.abs(s.start / 1e9 - Date.now() / 1e3)).toBeLessThan(3600);
      expect(s.meta['_dd.p.tid']).toBe(`${Math.floor(s.start / 1e9).toString(16)}00000000`);
      expect(s.meta['runtime-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(s.meta['_dd.tags.process']).toMatch(/^entrypoint\.[^,]+(,[^,]+)*,svc\.user:true$/);
      expect(s.meta.language).toMatch(/^[a-z]+$/);
      expect(Number.isInteger(s.metrics.process_id) && s.metrics.process_id! > 0).toBe(true);
      const meta = Object.fromEntries(Object.entries(s.meta).filter(([k]) => !PROCESS_META.includes(k)));
      // forward's error names the local port it read from.
      if (meta['error.message'] !== undefined)
        meta['error.message'] = meta['error.message'].replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:PORT');
      const { process_id: _, ...metrics } = s.metrics;
      return {
        parent: root ? null : ids.has(s.parent_id) ? 'in trace' : 'outside',
        name: s.name,
        resource: s.resource,
        service: s.service,
        type: s.type,
        error: s.error,
        meta,
        metrics,
      };
    })
    .sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)));
}

describe('trace datadog (differential)', () => {
  const missing = missingBinaries();
  let agent: DatadogAgent | null = null;
  let pair: Pair | null = null;
  afterAll(async () => {
    await pair?.stop();
    await agent?.stop();
  });

  it('both servers send the Datadog agent the same traces for the same queries', async () => {
    if (missing) throw new Error(missing);
    agent = await startDatadogAgent();
    const corefile =
      `.:{{DNS}} {\n  trace datadog ${agent.addr} {\n    every 2\n    service dns-diff\n    datadog_analytics_rate 0.5\n  }\n` +
      '  errors\n  cache\n  forward . {{UPSTREAM}}\n}\n' +
      `dead.test.:{{DNS}} {\n  trace DataDog ${agent.addr} {\n    service dns-dead\n  }\n  errors\n  forward . {{DEAD}}\n}\n`;
    pair = await startPair({
      corefile,
      // `every` counts per query thread in clusterdns (docs/plugins.md, trace): one thread, as
      // CoreDNS counts once per process.
      oneThread: true,
      upstream: (u) => {
        for (const n of ['a', 'b', 'c', 'd', 'x'])
          u.on(`${n}.example.org`, { answers: [a(`${n}.example.org`, '192.0.2.1', 300)] });
        u.on('e.example.org', { rcode: 0 });
      },
    });
    let seen = 0;
    for (const p of [pair.ref, pair.cand]) {
      for (const [i, s] of STEPS.entries()) {
        const reply = await exchange(p.dns, encode({ ...s, id: i + 1 }), s.proto);
        expect(reply, `${p.name} answers ${s.name} ${s.type}`).not.toBeNull();
      }
      // The other server's traces come after these: wait until this one's are all in.
      seen = (await agent.waitTraces(seen + TRACED)).length;
    }
    const all = await agent.traces();
    expect(all).toHaveLength(2 * TRACED);
    const byQuery = (ts: DatadogSpan[][]): DatadogSpan[][] =>
      [...ts].sort((x, y) =>
        `${x[0]!.meta['coredns.io@name']} ${x[0]!.meta['coredns.io@type']}`.localeCompare(
          `${y[0]!.meta['coredns.io@name']} ${y[0]!.meta['coredns.io@type']}`,
        ),
      );
    const ref = byQuery(all.slice(0, TRACED));
    const cand = byQuery(all.slice(TRACED));
    const names = (ts: DatadogSpan[][]): string[] => ts.map((t) => t[0]!.meta['coredns.io@name']!);
    expect(names(ref)).toEqual([
      'a.example.org.',
      'b.example.org.',
      'c.example.org.',
      'e.example.org.',
      'nosuch.example.org.',
      'x.dead.test.',
    ]);
    expect(names(cand)).toEqual(names(ref));
    // CoreDNS's structure, which the comparison below then holds clusterdns to: one root span
    // `servedns` per query (no per-plugin spans on the Datadog path), the failing one an error.
    for (const t of ref) expect(t.map((s) => [s.name, s.parent_id])).toEqual([['servedns', '0']]);
    expect(ref[5]![0]!.error).toBe(1);
    expect(ref[5]![0]!.meta['error.type']).toBe('dns_error');
    for (let i = 0; i < TRACED; i++) expect(shape(cand[i]!), `trace ${i + 1}`).toEqual(shape(ref[i]!));

    // The requests: v0.4 msgpack with the trace count (the agent checked it against the body).
    const { traces: reqs } = await agent.requests();
    for (const r of reqs.filter((x) => x.traces > 0)) {
      expect(r.method).toBe('POST');
      expect(r.path).toBe('/v0.4/traces');
      expect(r.headers['Content-Type']).toBe('application/msgpack');
      expect(r.headers['X-Datadog-Trace-Count']).toBe(String(r.traces));
      expect(r.headers['Datadog-Client-Computed-Top-Level']).toBe('t');
      for (const h of ['Datadog-Meta-Lang', 'Datadog-Meta-Lang-Version', 'Datadog-Meta-Tracer-Version'])
        expect(r.headers[h], h).toMatch(/\S/);
    }
    const langs = new Set(reqs.filter((x) => x.traces > 0).map((r) => r.headers['Datadog-Meta-Lang']));
    expect(langs).toEqual(new Set(['go', 'nodejs']));
  });
});
