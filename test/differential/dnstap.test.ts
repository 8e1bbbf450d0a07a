/**
 * Differential: dnstap against CoreDNS 1.15.0 — both servers tap to one collector (a TCP port of
 * the test's own Frame Streams reader, test/helpers/framestream.ts), queried one after the other:
 * the handshake, the Dnstap and Message fields in Go proto.Marshal's order, the socket family and
 * protocol, the client address, identity/version/extra, and with `full` the query and response
 * bytes (each equal to what went over the wire), for an answer from *file*, a TCP query, *forward*'s
 * FORWARDER_QUERY/FORWARDER_RESPONSE records (upstream and local addresses, one pair per attempt),
 * and a SERVFAIL the chain returned without writing (a dead upstream: the bare reply is tapped).
 * `extra` runs through CoreDNS's replacer with every placeholder it knows (and some it does not),
 * for client and forwarder records alike; the client port and message id in it are the only parts
 * that differ between the two servers' queries, so they are compared as PORT and ID.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCollector, type Collector, type TapFrame } from '../helpers/framestream.js';
import { a } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';
import { encode, exchange, missingBinaries, startPair, type Pair, type Proc, type QuerySpec } from './harness.js';

const ZONE = `$ORIGIN example.org.
@ 3600 IN SOA ns1.example.org. hostmaster.example.org. 2024010101 7200 3600 1209600 300
  3600 IN NS ns1
ns1 3600 IN A 192.0.2.53
www 3600 IN A 192.0.2.80
`;

const LIT_ZONE = ZONE.replaceAll('example.org.', 'lit.test.');

/** Every placeholder of CoreDNS 1.15.0's replacer, a metadata label none sets, and unknown ones. */
const EXTRA =
  '|{type}|{name}|{class}|{proto}|{remote}|{port}|{size}|{>id}|{>opcode}|{>do}|{>bufsize}|{rcode}|{rsize}|{duration}|{>rflags}|{/absent}|{unknown}|{>ID}|{}|';
/**
 * With `{local}`, in the block only queried over UDP: over TCP clusterdns's transport has the
 * listener's address where CoreDNS has the connection's (plugins/dnstap/README.md, Bugs).
 */
const EXTRA_UDP = `${EXTRA}{local}|`;

/**
 * What must be equal between the two servers' frames (times and the client port aside): in
 * `extra`, the query's `id` and the client's `port` are written as ID and PORT.
 */
function shape(f: TapFrame, id: number, port: number | undefined): Record<string, unknown> {
  const m = f.message ?? {};
  const fields = f.extra?.split('|');
  return {
    fieldOrder: f.fieldOrder,
    messageFields: Object.keys(m).sort(),
    identity: f.identity,
    version: f.version,
    extra:
      fields === undefined || fields.length === 1
        ? f.extra
        : fields.map((x) => (x === String(id) ? 'ID' : x === String(port) ? 'PORT' : x)).join('|'),
    type: f.type,
    messageType: m.type,
    family: m.socketFamily,
    protocol: m.socketProtocol,
    address: m.queryAddress?.toString('hex'),
    responseAddress: m.responseAddress?.toString('hex'),
    timesOrdered:
      m.responseTimeSec === undefined ||
      m.responseTimeSec * 1e9 + (m.responseTimeNsec ?? 0) >= (m.queryTimeSec ?? 0) * 1e9 + (m.queryTimeNsec ?? 0),
  };
}

const skip = missingBinaries();

describe.skipIf(skip !== null)('differential: dnstap', () => {
  let pair: Pair;
  let col: Collector;

  beforeAll(async () => {
    col = await startCollector();
    pair = await startPair(
      {
        corefile: `example.org:{{DNS}} {
  dnstap ${col.address} full {
    identity tap-diff
    version v-diff
    extra "${EXTRA}"
  }
  file db.example.org
}
lit.test:{{DNS}} {
  dnstap ${col.address} full {
    identity tap-diff
    version v-diff
    extra "some extra {unknown}"
  }
  file db.lit.test
}
up.test:{{DNS}} {
  dnstap ${col.address} full {
    identity tap-diff
    version v-diff
    extra "${EXTRA}"
  }
  forward . {{UPSTREAM}}
}
noextra.test:{{DNS}} {
  dnstap ${col.address} full {
    identity tap-diff
    version v-diff
  }
  forward . {{UPSTREAM}}
}
dead.test:{{DNS}} {
  dnstap ${col.address} full {
    identity tap-diff
    version v-diff
    extra "${EXTRA_UDP}"
  }
  forward . {{DEAD}} {
    max_fails 0
  }
}
`,
        files: { 'db.example.org': ZONE, 'db.lit.test': LIT_ZONE },
        upstream: (u) => {
          u.on('www.up.test', { answers: [a('www.up.test', '192.0.2.9', 60)] });
          u.on('www.noextra.test', { answers: [a('www.noextra.test', '192.0.2.10', 60)] });
        },
        oneThread: true,
      },
      { name: 'www.example.org.', type: 'A' },
    );
    // Both servers connected (five dnstap outputs each: one per block).
    await waitFor('both servers to finish the handshake', () => col.started >= 10);
  }, 60_000);

  afterAll(async () => {
    await pair?.stop();
    await col?.close();
  });

  /**
   * The frames one query to `p` produced (told apart by the message id in their `full` bytes: the
   * start-up probes are tapped too, and CoreDNS flushes its writer only once a second), and the
   * reply it got.
   */
  async function tapOf(p: Proc, q: QuerySpec): Promise<{ frames: TapFrame[]; query: Buffer; reply: Buffer | null }> {
    const query = encode(q);
    const reply = await exchange(p.dns, query, q.proto, 10_000);
    const ofQuery = (f: TapFrame): boolean =>
      (f.message?.queryMessage ?? f.message?.responseMessage)?.readUInt16BE(0) === q.id;
    // CLIENT_RESPONSE is the last record of a query.
    const frames = await waitFor(`${p.name}'s frames for ${q.name}`, () => {
      const f = col.frames.filter(ofQuery);
      return f.at(-1)?.message?.type === 6 && f;
    });
    return { frames, query, reply };
  }

  const cases: QuerySpec[] = [
    { name: 'www.example.org.', type: 'A', proto: 'udp', id: 101, edns: 1232 },
    { name: 'nope.example.org.', type: 'AAAA', proto: 'tcp', id: 102 },
    { name: 'www.up.test.', type: 'A', proto: 'udp', id: 103 },
    { name: 'www.up.test.', type: 'A', proto: 'tcp', id: 104 },
    { name: 'www.lit.test.', type: 'A', proto: 'udp', id: 106 },
    { name: 'www.noextra.test.', type: 'A', proto: 'udp', id: 107, edns: 4096 },
    { name: 'WwW.Up.Test.', type: 'TXT', proto: 'udp', id: 108, edns: 1400, do: true },
    { name: 'x.dead.test.', type: 'A', proto: 'udp', id: 105 },
  ];
  for (const q of cases) {
    it(`${q.name} ${q.type} over ${q.proto}`, async () => {
      const ref = await tapOf(pair.ref, q);
      const cand = await tapOf(pair.cand, { ...q, id: q.id + 1000 });
      const port = (t: typeof ref): number | undefined =>
        t.frames.find((f) => f.message?.type === 5)?.message?.queryPort;
      expect(cand.frames.map((f) => shape(f, q.id + 1000, port(cand)))).toEqual(
        ref.frames.map((f) => shape(f, q.id, port(ref))),
      );
      // The forwarded queries did produce FORWARDER records (not only client ones).
      const types = ref.frames.map((f) => f.message?.type);
      if (/up\.test\.$|noextra\.test\.$/i.test(q.name)) expect(types).toEqual([5, 7, 8, 6]);
      // The template was rendered (not copied), the same for the query and the response.
      if (/(example\.org|up\.test|dead\.test)\.$/i.test(q.name)) {
        const extras = new Set(ref.frames.map((f) => f.extra));
        expect(extras.size).toBe(1);
        expect(ref.frames[0]!.extra).toContain(`|${q.name.toLowerCase()}|IN|${q.proto}|127.0.0.1|`);
        // {local} on a listener without `bind`: the wildcard address.
        if (q.name.endsWith('dead.test.')) expect(ref.frames[0]!.extra).toMatch(/\{\}\|\[::\]\|$/);
      }
      if (q.name.endsWith('dead.test.')) expect(types.filter((t) => t === 7).length).toBeGreaterThan(0);
      for (const t of [ref, cand]) {
        const who = t === ref ? 'coredns' : 'clusterdns';
        const client = t.frames.filter((f) => f.message?.type === 5 || f.message?.type === 6);
        expect(client.map((f) => f.message?.type)).toEqual([5, 6]);
        expect(client[0]!.message?.queryMessage?.toString('hex'), who).toEqual(t.query.toString('hex'));
        expect(t.reply).not.toBeNull();
        expect(client[1]!.message?.responseMessage?.toString('hex'), who).toEqual(t.reply?.toString('hex'));
        expect(client[1]!.message?.queryTimeSec).toBe(client[0]!.message?.queryTimeSec);
        expect(client[1]!.message?.queryTimeNsec).toBe(client[0]!.message?.queryTimeNsec);
        // FORWARDER_QUERY carries the client's query as sent; FORWARDER_RESPONSE the upstream's reply with the client's id.
        for (const f of t.frames) {
          if (f.message?.type === 7)
            expect(f.message.queryMessage?.toString('hex'), who).toEqual(t.query.toString('hex'));
          if (f.message?.type === 8)
            expect(f.message.responseMessage?.readUInt16BE(0), who).toBe(t.query.readUInt16BE(0));
        }
      }
    }, 30_000);
  }
});
