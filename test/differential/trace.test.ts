/**
 * Differential: *trace* against CoreDNS 1.15.0. Both servers run the same Corefile and export to
 * the same Zipkin collector (.bin/zipkin-collector); the same queries go to CoreDNS first, then to
 * clusterdns, and the traces each produced are compared span for span: names, kinds, the
 * parent/child tree, tags, local endpoint, which queries `every` sampled. Ids and times differ by
 * nature and are compared only for their shape (the root's id is its trace id, children share it).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { a } from '../helpers/upstream.js';
import { startCollector, type Collector, type ZipkinSpan } from '../helpers/zipkin.js';
import { encode, exchange, missingBinaries, startPair, type Pair } from './harness.js';

interface Step {
  readonly name: string;
  readonly type: string;
  readonly proto: 'udp' | 'tcp';
}

// With `every 2` the even steps are traced: a cache hit, a miss forwarded, a hit, an NXDOMAIN
// from the upstream, and a TCP query.
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
];
const TRACED = STEPS.filter((_, i) => (i + 1) % 2 === 0).length;

/** One span without its ids and times: what must be equal between the two servers. */
function shape(t: readonly ZipkinSpan[]): unknown[] {
  const byId = new Map(t.map((s) => [s.id, s]));
  const root = t.find((s) => s.parentId === undefined)!;
  const path = (s: ZipkinSpan): string =>
    s.parentId === undefined
      ? s.name
      : `${path(byId.get(s.parentId) ?? { ...s, name: '?', parentId: undefined })}/${s.name}`;
  return t
    .map((s) => {
      // Ids: 16 hex digits, one trace, the root's id is the trace id.
      expect(s.traceId).toBe(root.traceId);
      expect(s.id).toMatch(/^[0-9a-f]{16}$/);
      expect(s.duration).toBeGreaterThan(0);
      return {
        path: path(s),
        kind: s.kind ?? null,
        tags: s.tags ?? {},
        localEndpoint: s.localEndpoint ?? null,
        annotations: (s.annotations ?? []).map((x) => x.value),
        shared: s.shared ?? false,
        rootIsTrace: s === root ? s.id === s.traceId : null,
      };
    })
    .sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)));
}

describe('trace (differential)', () => {
  const missing = missingBinaries();
  let collector: Collector | null = null;
  let pair: Pair | null = null;
  afterAll(async () => {
    await pair?.stop();
    await collector?.stop();
  });

  it('both servers report the same spans for the same queries', async () => {
    if (missing) throw new Error(missing);
    collector = await startCollector();
    const corefile =
      `.:{{DNS}} {\n  trace ${collector.url} {\n    every 2\n    service dns-diff\n    zipkin_max_batch_interval 20ms\n  }\n` +
      '  errors\n  cache\n  forward . {{UPSTREAM}}\n}\n';
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
      const traces = await collector.waitTraces('dns-diff', seen + TRACED);
      seen = traces.length;
    }
    const all = await collector.traces('dns-diff');
    expect(all).toHaveLength(2 * TRACED);
    const ref = all.slice(0, TRACED);
    const cand = all.slice(TRACED);
    const names = (ts: ZipkinSpan[][]): string[] =>
      ts.map((t) => t.find((s) => s.name === 'servedns')!.tags!['coredns.io/name']!);
    expect(names(ref)).toEqual([
      'a.example.org.',
      'b.example.org.',
      'c.example.org.',
      'nosuch.example.org.',
      'e.example.org.',
    ]);
    expect(names(cand)).toEqual(names(ref));
    // CoreDNS's structure, which the comparison below then holds clusterdns to: a hit ends in
    // cache, a miss goes on to forward and one connect per attempt.
    const paths = (t: ZipkinSpan[]): string[] => (shape(t) as { path: string }[]).map((s) => s.path).sort();
    expect(paths(ref[0]!)).toEqual(['servedns', 'servedns/errors', 'servedns/errors/cache']);
    expect(paths(ref[1]!)).toEqual([
      'servedns',
      'servedns/errors',
      'servedns/errors/cache',
      'servedns/errors/cache/forward',
      'servedns/errors/cache/forward/connect',
    ]);
    for (let i = 0; i < TRACED; i++) expect(shape(cand[i]!), `trace ${i + 1}`).toEqual(shape(ref[i]!));
  });
});
