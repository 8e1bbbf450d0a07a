/**
 * Differential: `dnstap listen` against CoreDNS 1.15.0 — each server listens on a unix socket of
 * its own directory, a reader (the test's Frame Streams client, test/helpers/framestream.ts, playing
 * a sink that connects) completes the writer's handshake with each, and the same queries go to
 * both: the records each reader receives must agree in the Dnstap and Message fields (in Go
 * proto.Marshal's order), types, socket family and protocol, client address, identity and
 * version, and with `full` carry the query and response bytes that went over the wire. Then a
 * second reader joins: it gets the records from then on only, and the first keeps getting them.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectSink, type Sink, type TapFrame } from '../helpers/framestream.js';
import { waitFor } from '../helpers/wait.js';
import { encode, exchange, missingBinaries, startPair, type Pair, type Proc, type QuerySpec } from './harness.js';

const ZONE = `$ORIGIN example.org.
@ 3600 IN SOA ns1.example.org. hostmaster.example.org. 2024010101 7200 3600 1209600 300
  3600 IN NS ns1
ns1 3600 IN A 192.0.2.53
www 3600 IN A 192.0.2.80
`;

/** What must be equal between the two servers' records (times and the client port aside). */
function shape(f: TapFrame): Record<string, unknown> {
  const m = f.message ?? {};
  return {
    fieldOrder: f.fieldOrder,
    messageFields: Object.keys(m).sort(),
    identity: f.identity,
    version: f.version,
    extra: f.extra,
    type: f.type,
    messageType: m.type,
    family: m.socketFamily,
    protocol: m.socketProtocol,
    address: m.queryAddress?.toString('hex'),
    responseAddress: m.responseAddress?.toString('hex'),
  };
}

const skip = missingBinaries();
const cleanups: (() => unknown)[] = [];

describe.skipIf(skip !== null)('differential: dnstap listen', () => {
  let pair: Pair;
  const sinks = new Map<Proc, Sink>();

  const socketOf = (p: Proc): string => join(p.dir, 'tap.sock');

  async function sinkOf(p: Proc): Promise<Sink> {
    await waitFor(`${p.name}'s dnstap socket`, () => existsSync(socketOf(p)));
    const s = connectSink(cleanups, { path: socketOf(p) });
    await waitFor(`${p.name}'s handshake`, () => s.started);
    return s;
  }

  beforeAll(async () => {
    pair = await startPair(
      {
        corefile: `example.org:{{DNS}} {
  dnstap listen unix://{{DIR}}/tap.sock full {
    identity tap-listen
    version v-listen
  }
  file db.example.org
}
`,
        files: { 'db.example.org': ZONE },
        oneThread: true,
      },
      { name: 'www.example.org.', type: 'A' },
    );
    for (const p of [pair.ref, pair.cand]) sinks.set(p, await sinkOf(p));
  }, 60_000);

  afterAll(async () => {
    while (cleanups.length) await cleanups.pop()!();
    await pair?.stop();
  });

  /** The records of one query to `p` at `sink` (told apart by the message id in their `full` bytes). */
  async function tapOf(
    p: Proc,
    sink: Sink,
    q: QuerySpec,
  ): Promise<{ frames: TapFrame[]; query: Buffer; reply: Buffer | null }> {
    const query = encode(q);
    const reply = await exchange(p.dns, query, q.proto, 10_000);
    const ofQuery = (f: TapFrame): boolean =>
      (f.message?.queryMessage ?? f.message?.responseMessage)?.readUInt16BE(0) === q.id;
    const frames = await waitFor(`${p.name}'s records for ${q.name}`, () => {
      const f = sink.frames.filter(ofQuery);
      return f.at(-1)?.message?.type === 6 && f;
    });
    return { frames, query, reply };
  }

  function expectFull(t: { frames: TapFrame[]; query: Buffer; reply: Buffer | null }, who: string): void {
    expect(t.frames.map((f) => f.message?.type)).toEqual([5, 6]);
    expect(t.frames[0]!.message?.queryMessage?.toString('hex'), who).toEqual(t.query.toString('hex'));
    expect(t.reply).not.toBeNull();
    expect(t.frames[1]!.message?.responseMessage?.toString('hex'), who).toEqual(t.reply?.toString('hex'));
    expect(t.frames[1]!.message?.queryTimeSec).toBe(t.frames[0]!.message?.queryTimeSec);
    expect(t.frames[1]!.message?.queryTimeNsec).toBe(t.frames[0]!.message?.queryTimeNsec);
  }

  const cases: QuerySpec[] = [
    { name: 'www.example.org.', type: 'A', proto: 'udp', id: 201, edns: 1232 },
    { name: 'nope.example.org.', type: 'AAAA', proto: 'tcp', id: 202 },
    { name: 'example.org.', type: 'NS', proto: 'udp', id: 203, edns: 4096, do: true },
  ];
  for (const q of cases) {
    it(`${q.name} ${q.type} over ${q.proto}`, async () => {
      const ref = await tapOf(pair.ref, sinks.get(pair.ref)!, q);
      const cand = await tapOf(pair.cand, sinks.get(pair.cand)!, { ...q, id: q.id + 1000 });
      expect(cand.frames.map(shape)).toEqual(ref.frames.map(shape));
      expectFull(ref, 'coredns');
      expectFull(cand, 'clusterdns');
    }, 30_000);
  }

  it('a second reader gets the records from when it joined, and the first keeps getting them', async () => {
    const q: QuerySpec = { name: 'www.example.org.', type: 'A', proto: 'udp', id: 301 };
    for (const [p, id] of [
      [pair.ref, 301],
      [pair.cand, 1301],
    ] as const) {
      const second = await sinkOf(p);
      expect(second.frames).toEqual([]);
      const first = await tapOf(p, sinks.get(p)!, { ...q, id });
      const other = await tapOf(p, second, { ...q, id: id + 1 });
      expect(other.frames.map(shape)).toEqual(first.frames.map(shape));
      // The second reader saw the query made before it was asked for its own, and nothing older.
      const ids = second.frames.map((f) => (f.message?.queryMessage ?? f.message?.responseMessage)?.readUInt16BE(0));
      expect(ids).toEqual([id, id, id + 1, id + 1]);
    }
  }, 30_000);
});
