/**
 * The shadow handler on its own: what it copies, what it leaves alone, and that the chain's
 * result (reply object, return value, exception) reaches the server unchanged.
 */
import * as dgram from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeMessage } from '../../src/dns/encode.js';
import { decode, replyTo, type Message } from '../../src/dns/message.js';
import { parseRequest } from '../../src/dns/wire.js';
import { logger } from '../../src/log.js';
import { Query } from '../../src/query.js';
import { encodeQuery, makeQuery, TEST_TRANSPORT } from '../../test/helpers/dns.js';
import { freePort } from '../../test/helpers/net.js';
import { a, FakeNext } from '../../test/helpers/upstream.js';
import { ShadowClient, type ExchangeHooks, type ShadowResult } from './exchange.js';
import { Sampler, ShadowHandler } from './handler.js';

describe('ShadowHandler', () => {
  let sink: dgram.Socket;
  const copies: Buffer[] = [];
  let client: ShadowClient;
  let waiting: (() => void) | null = null;
  const results: ShadowResult[] = [];

  beforeAll(async () => {
    const port = await freePort();
    sink = dgram.createSocket('udp4');
    sink.on('message', (m, rinfo) => {
      copies.push(m);
      waiting?.();
      if (m.includes(Buffer.from('mutate'))) {
        // Answer this one: the query with QR set (no records).
        const r = Buffer.from(m);
        r.writeUInt16BE(r.readUInt16BE(2) | 0x8000, 2);
        sink.send(r, rinfo.port, rinfo.address);
      }
    });
    await new Promise<void>((r) => sink.bind(port, '127.0.0.1', () => r()));
    const hooks: ExchangeHooks = {
      sent: () => undefined,
      reply: (r) => {
        results.push(r);
        waiting?.();
      },
      failed: () => undefined,
      unexpected: () => undefined,
    };
    client = new ShadowClient(
      {
        references: [{ host: '127.0.0.1', port, label: `127.0.0.1:${port}` }],
        timeoutMs: 60_000,
        maxOutstanding: 1000,
      },
      hooks,
    );
    await client.start(logger('shadow'));
  });

  afterAll(() => {
    client.stop();
    sink.close();
  });

  const copiesOf = (label: string): Buffer[] => copies.filter((c) => c.includes(Buffer.from(label)));

  /** Resolves once a copy of a query for `label` (a name's first label) reached the sink. */
  async function copyOf(label: string): Promise<Buffer> {
    while (copiesOf(label).length === 0) await new Promise<void>((resolve) => (waiting = resolve));
    return copiesOf(label)[0]!;
  }

  const noErrors = (e: unknown): void => {
    throw e;
  };

  it('copies the query (new id) after an asynchronous chain; the decoded reply stays as written', async () => {
    let written: Message | null = null;
    const next = new FakeNext(async (q) => {
      await Promise.resolve();
      const m = replyTo(q.request);
      m.answers = [a(q.name, '192.0.2.1')];
      q.write(m, 'fake');
      written = m;
      return 0;
    });
    const h = new ShadowHandler(next, new Sampler(1), client, noErrors);
    const q = makeQuery('www.example.org', 'A', { id: 77 });
    const r = h.serve(q);
    expect(r).toBeInstanceOf(Promise);
    expect(await r).toBe(0);
    expect(q.reply!.isWire).toBe(false);
    expect(q.reply!.peek()).toBe(written);
    const copy = await copyOf('www');
    expect(copy.readUInt16BE(0)).not.toBe(77);
    expect(copy.subarray(2).equals(q.raw.subarray(2))).toBe(true);
    expect(q.raw.readUInt16BE(0)).toBe(77);
  });

  it('a wire reply written synchronously is returned as the same buffer', async () => {
    let buf: Buffer | null = null;
    const next = new FakeNext((q) => {
      buf = encodeMessage(replyTo(q.request));
      q.writeWire(buf, 'fake');
      return 0;
    });
    const h = new ShadowHandler(next, new Sampler(1), client, noErrors);
    const q = makeQuery('wire.example.org', 'A');
    expect(h.serve(q)).toBe(0);
    expect(q.reply!.wire()).toBe(buf);
    await copyOf('wire');
  });

  it('errors from the chain propagate unchanged and reserve nothing', async () => {
    const boom = new Error('boom');
    const inFlight = client.inFlight;
    const sync = new ShadowHandler(
      new FakeNext(() => {
        throw boom;
      }),
      new Sampler(1),
      client,
      noErrors,
    );
    expect(() => sync.serve(makeQuery('boom.example', 'A'))).toThrow(boom);
    const asyncH = new ShadowHandler(new FakeNext(() => Promise.reject(boom)), new Sampler(1), client, noErrors);
    await expect(asyncH.serve(makeQuery('boom.example', 'A'))).rejects.toBe(boom);
    expect(client.inFlight).toBe(inFlight);
    expect(copiesOf('boom')).toEqual([]);
  });

  it('NOTIFY and zone transfers are never copied; the sample goes to the next plain query', async () => {
    const next = new FakeNext(() => 5);
    // Skips: 1, then 0 forever (random 0.5 with p=0.5 gives floor(ln 0.5 / ln 0.5) = 1).
    let first = true;
    const h = new ShadowHandler(next, new Sampler(0.5, () => (first ? ((first = false), 0.5) : 0)), client, noErrors);
    const raw = encodeQuery('zone.example', 'SOA');
    raw.writeUInt16BE((raw.readUInt16BE(2) & ~0x7800) | (4 << 11), 2);
    const parsed = parseRequest(raw);
    if (parsed.kind !== 'query') throw new Error('NOTIFY rejected');
    expect(h.serve(makeQuery('skipped.example', 'A'))).toBe(5); // the one skip
    expect(h.serve(new Query(raw, parsed.req, TEST_TRANSPORT))).toBe(5);
    expect(h.serve(makeQuery('zone.example', 'AXFR'))).toBe(5);
    expect(h.serve(makeQuery('plain.example', 'A'))).toBe(5);
    await copyOf('plain');
    expect(copiesOf('skipped')).toEqual([]);
    expect(copiesOf('zone')).toEqual([]);
    expect(next.calls).toBe(4);
  });

  it('the reply written for a sampled query is copied before the server changes it', async () => {
    const next = new FakeNext((q) => {
      q.write(replyTo(q.request), 'fake');
      return 0;
    });
    const h = new ShadowHandler(next, new Sampler(1), client, noErrors);
    const q = makeQuery('mutate.example', 'A');
    expect(h.serve(q)).toBe(0);
    // What the server does next to a decoded reply (fitting it): must not reach the copy.
    q.reply!.message().answers.push(a('mutate.example', '192.0.2.99'));
    while (results.length === 0) await new Promise<void>((resolve) => (waiting = resolve));
    const ours = decode(results[0]!.ours);
    expect(ours.answers).toEqual([]);
    expect(ours.id).toBe(q.id);
    expect(results[0]!.theirs.readUInt16BE(0)).toBe(q.id);
  });
});
