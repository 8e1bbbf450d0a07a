import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeTap, MessageType, type TapRecord } from '../../src/dnstap/message.js';
import { ProtoWriter } from '../../src/dnstap/protobuf.js';
import { TapOutput, type TapSink } from '../../src/dnstap/output.js';
import { Rcode } from '../../src/dns/constants.js';
import { replyTo } from '../../src/dns/message.js';
import type { Query } from '../../src/query.js';
import { logger } from '../../src/log.js';
import { runCorefile } from '../../test/helpers/corefile.js';
import { encodeQuery, makeQuery } from '../../test/helpers/dns.js';
import { FakeNext } from '../../test/helpers/upstream.js';
import { decodeTap, decodeTapMessage, startCollector, type Collector } from '../../test/helpers/framestream.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { waitFor } from '../../test/helpers/wait.js';
import { compileExtra, DnstapHandler } from './handler.js';
import { dnstap } from './index.js';
import { parseDnstap } from './setup.js';

const dir = mkdtempSync(join(tmpdir(), 'dnstap-'));
const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

function setupErr(text: string): string {
  return configError(() => dnstap.setup(dispenserFor(text, 'dnstap'), setupContext()), text).describe();
}

describe('dnstap: setup', () => {
  it('reads SOCKET, full, the write buffer and queue multiples, and the block', () => {
    const [a, b, c] = parseDnstap(
      dispenserFor(
        'dnstap /tmp/a.sock\ndnstap unix:///tmp/b.sock full 2 3 {\n identity id1\n version v1\n extra "x {/m}"\n}\n' +
          'dnstap tls://[::1]:6000 {\n skipverify\n}',
        'dnstap',
      ),
    );
    expect(a).toMatchObject({
      network: 'unix',
      address: '/tmp/a.sock',
      full: false,
      writeBufferMiB: 1,
      queueMultiple: 1,
    });
    expect(a!.identity).not.toBe('');
    expect(a!.version).toMatch(/^clusterdns-/);
    expect(a!.extra).toBeNull();
    expect(b).toMatchObject({
      network: 'unix',
      address: '/tmp/b.sock',
      full: true,
      writeBufferMiB: 2,
      queueMultiple: 3,
      identity: 'id1',
      version: 'v1',
      extra: 'x {/m}',
      skipVerify: false,
    });
    expect(c).toMatchObject({ network: 'tls', address: '[::1]:6000', skipVerify: true });
  });

  it('words errors as CoreDNS 1.15.0', () => {
    const pre = 'plugin/dnstap: Corefile:1 - Error during parsing: ';
    expect(setupErr('dnstap')).toBe(`${pre}Wrong argument count or unexpected line ending after 'dnstap'`);
    expect(setupErr('dnstap /tmp/x full abc')).toBe(
      `${pre}dnstap: invalid MultipleTcpWriteBuf "abc": strconv.Atoi: parsing "abc": invalid syntax`,
    );
    expect(setupErr('dnstap /tmp/x full 0')).toBe(
      `${pre}dnstap: MultipleTcpWriteBuf must be between 1 and 1024 (MiB units): 0`,
    );
    expect(setupErr('dnstap /tmp/x full 1 5000')).toBe(
      `${pre}dnstap: MultipleQueue must be between 1 and 4096 (x10k messages): 5000`,
    );
    expect(setupErr('dnstap listen')).toBe(`${pre}dnstap listen requires an endpoint argument`);
    const pre2 = 'plugin/dnstap: Corefile:2 - Error during parsing: ';
    expect(setupErr('dnstap /tmp/x {\n tls a b\n}')).toBe(`${pre2}tls directive only valid for listeners`);
    expect(setupErr('dnstap /tmp/x {\n foo\n}')).toBe(`${pre2}unknown property 'foo'`);
    expect(setupErr('dnstap /tmp/x {\n identity\n}')).toBe(
      `${pre2}Wrong argument count or unexpected line ending after 'identity'`,
    );
  });

  it('compiles extra once: literal text to its bytes, an empty one to none', () => {
    expect(compileExtra('')).toBeNull();
    expect(compileExtra('plain {unknown} {>ID}')).toEqual({ bytes: Buffer.from('plain {unknown} {>ID}') });
    expect(compileExtra('{type}')).toHaveProperty('template');
  });
});

describe('dnstap: extra', () => {
  /** The records one query through a DnstapHandler produced, with `next` answering it. */
  async function tapped(extra: string, q: Query, next: (q: Query) => number): Promise<TapRecord[]> {
    const records: TapRecord[] = [];
    const sink: TapSink = { start: async () => undefined, tap: (r) => void records.push(r), close: () => {} };
    const h = new DnstapHandler(new FakeNext(next), [{ output: sink, full: false, extra: compileExtra(extra) }]);
    await h.serve(q);
    // The response record is taken when the server sends the reply.
    q.onSend?.(Buffer.alloc(0));
    return records;
  }
  const ALL =
    '{type}|{name}|{class}|{proto}|{remote}|{local}|{port}|{size}|{>id}|{>opcode}|{>do}|{>bufsize}|{rcode}|{rsize}|{duration}|{>rflags}|{/a/b}|{/empty}|{/absent}|{common}|{/log/class}|{ {name} }';

  it("renders every placeholder of CoreDNS's replacer, the reply ones as - (no recorder)", async () => {
    const q = makeQuery('Www.Example.ORG', 'AAAA', {
      id: 7,
      edns: 1400,
      do: true,
      transport: { proto: 'tcp', remoteAddress: '2001:db8::9', remotePort: 5301, localAddress: '127.0.0.1' },
    });
    q.meta.set('a/b', 'meta-value');
    q.meta.set('empty', '');
    const records = await tapped(ALL, q, (q) => {
      q.write(replyTo(q.request), 'fake');
      return Rcode.NOERROR;
    });
    expect(records.map((r) => r.type)).toEqual([MessageType.CLIENT_QUERY, MessageType.CLIENT_RESPONSE]);
    const want = `AAAA|www.example.org.|IN|tcp|[2001:db8::9]|127.0.0.1|5301|${q.raw.length}|7|0|true|65535|-|-|-|-|meta-value||-|{common}|-|{ www.example.org. }`;
    for (const r of records) expect(r.extra?.toString()).toBe(want);
  });

  it('renders the same for the bare reply of a server-written RCODE', async () => {
    const q = makeQuery('x.example.org', 'A', { id: 9, transport: { remoteAddress: '192.0.2.1', remotePort: 1234 } });
    const records = await tapped('{>id} {remote}:{port} {rcode} {>rflags} {size}', q, () => Rcode.REFUSED);
    expect(records.map((r) => [r.type, r.extra?.toString()])).toEqual([
      [MessageType.CLIENT_QUERY, `9 192.0.2.1:1234 - - ${q.raw.length}`],
      [MessageType.CLIENT_RESPONSE, `9 192.0.2.1:1234 - - ${q.raw.length}`],
    ]);
  });

  it('shares one buffer for a literal extra and sends none without it', async () => {
    const q = makeQuery('example.org', 'A');
    const answer = (q: Query): number => {
      q.write(replyTo(q.request), 'fake');
      return Rcode.NOERROR;
    };
    const lit = await tapped('fixed', q, answer);
    expect(lit[0]!.extra?.toString()).toBe('fixed');
    expect(lit[1]!.extra).toBe(lit[0]!.extra);
    const none = await tapped('', makeQuery('example.org', 'A'), answer);
    expect(none.map((r) => r.extra)).toEqual([undefined, undefined]);
  });
});

describe('dnstap: encoding', () => {
  it('writes varints above 2^32 and fixed32 little-endian', () => {
    const b = new ProtoWriter(1)
      .uint(8, 2 ** 40 + 5)
      .fixed32(9, 0x01020304)
      .finish();
    const m = decodeTapMessage(b);
    expect(m.queryTimeSec).toBe(2 ** 40 + 5);
    expect(m.queryTimeNsec).toBe(0x01020304);
    // Above 2^31 (seconds after 2038, nanoseconds' top bit): the 32-bit paths must stay unsigned.
    for (const v of [0, 0x7f, 0x80, 2 ** 31 - 1, 2 ** 31, 3_000_000_000, 2 ** 32 - 1, 2 ** 32]) {
      const u = decodeTapMessage(
        new ProtoWriter(1)
          .uint(8, v)
          .fixed32(9, v % 2 ** 32)
          .finish(),
      );
      expect([u.queryTimeSec, u.queryTimeNsec]).toEqual([v, v % 2 ** 32]);
    }
  });

  it('encodes a record with Go proto.Marshal field order and IPv4-mapped addresses as IPv4', () => {
    const raw = encodeTap(
      { identity: Buffer.from('me'), version: Buffer.from('v') },
      {
        type: MessageType.CLIENT_RESPONSE,
        proto: 'tcp',
        address: '::ffff:10.1.2.3',
        port: 5353,
        queryTimeMs: 1_700_000_000_123.456,
        responseTimeMs: 1_700_000_000_124.5,
        responseMessage: Buffer.from([1, 2, 3]),
        extra: Buffer.from('e'),
      },
    );
    const f = decodeTap(raw);
    expect(f.fieldOrder).toEqual([1, 2, 3, 14, 15]);
    expect(f).toMatchObject({ identity: 'me', version: 'v', extra: 'e', type: 1 });
    expect(f.message).toMatchObject({
      type: 6,
      socketFamily: 1,
      socketProtocol: 2,
      queryAddress: Buffer.from([10, 1, 2, 3]),
      queryPort: 5353,
      queryTimeSec: 1_700_000_000,
      queryTimeNsec: 123_456_000,
      responseTimeSec: 1_700_000_000,
      responseTimeNsec: 124_500_000,
      responseMessage: Buffer.from([1, 2, 3]),
    });
    const v6 = decodeTap(
      encodeTap(
        { identity: Buffer.alloc(0), version: Buffer.alloc(0) },
        { type: MessageType.CLIENT_QUERY, proto: 'udp', address: '2001:db8::1', port: 1, queryTimeMs: 0 },
      ),
    );
    expect(v6.message?.socketFamily).toBe(2);
    expect(v6.message?.queryAddress?.length).toBe(16);
  });
});

async function collector(path?: string): Promise<Collector> {
  const c = await startCollector(path);
  cleanups.push(() => c.close());
  return c;
}

describe('dnstap: encoding in place', () => {
  /** The Message built aside and copied in, as a reference for the in-place encoding's bytes. */
  function builtAside(r: TapRecord, identity: Uint8Array, version: Uint8Array): Buffer {
    const addr = (a: string): Buffer =>
      a.includes(':')
        ? Buffer.from(
            a
              .split(':')
              .flatMap((h) => [
                parseInt(h.padStart(4, '0').slice(0, 2), 16),
                parseInt(h.padStart(4, '0').slice(2), 16),
              ]),
          )
        : Buffer.from(a.split('.').map(Number));
    const time = (w: ProtoWriter, field: number, ms: number): void => {
      const sec = Math.floor(ms / 1000);
      w.uint(field, sec).fixed32(field + 1, Math.min(999_999, Math.round((ms - sec * 1000) * 1000)) * 1000);
    };
    const m = new ProtoWriter(8);
    const family = (r.responseAddress ?? r.address ?? '').includes(':') ? 2 : 1;
    m.uint(1, r.type)
      .uint(2, family)
      .uint(3, r.proto === 'tcp' ? 2 : 1);
    if (r.address !== undefined) m.bytes(4, addr(r.address));
    if (r.responseAddress !== undefined) m.bytes(5, addr(r.responseAddress));
    if (r.address !== undefined) m.uint(6, r.port ?? 0);
    if (r.responseAddress !== undefined) m.uint(7, r.responsePort ?? 0);
    time(m, 8, r.queryTimeMs);
    if (r.queryMessage !== undefined) m.bytes(10, r.queryMessage);
    if (r.responseTimeMs !== undefined) time(m, 12, r.responseTimeMs);
    if (r.responseMessage !== undefined) m.bytes(14, r.responseMessage);
    const d = new ProtoWriter(8).bytes(1, identity).bytes(2, version);
    if (r.extra !== undefined) d.bytes(3, r.extra);
    return Buffer.from(d.bytes(14, m.finish()).uint(15, 1).finish());
  }

  it('sizes the embedded Message right for every mix of fields and lengths', () => {
    const wire = (n: number): Buffer => Buffer.alloc(n, n & 0xff);
    const ids = [
      { identity: Buffer.alloc(0), version: Buffer.alloc(0) },
      { identity: Buffer.from('node-a'), version: wire(200) },
    ];
    let checked = 0;
    for (const id of ids)
      for (const address of [undefined, '10.0.0.1', '2001:db8:0:0:0:0:0:1'])
        for (const responseAddress of [undefined, '192.0.2.53'])
          for (const port of [0, 127, 128, 53_000])
            for (const len of [undefined, 0, 12, 127, 128, 16_383, 16_384, 70_000])
              for (const extra of [undefined, wire(40)]) {
                const r: TapRecord = {
                  type: responseAddress !== undefined ? MessageType.FORWARDER_RESPONSE : MessageType.CLIENT_RESPONSE,
                  proto: port & 1 ? 'tcp' : 'udp',
                  address,
                  port,
                  responseAddress,
                  responsePort: responseAddress !== undefined ? port + 1 : undefined,
                  queryTimeMs: 1_700_000_000_123.456 + port,
                  responseTimeMs: len !== undefined ? 1_700_000_000_124.5 : undefined,
                  queryMessage: len !== undefined ? wire(len >> 1) : undefined,
                  responseMessage: len !== undefined ? wire(len) : undefined,
                  extra,
                };
                expect(encodeTap(id, r).equals(builtAside(r, id.identity, id.version))).toBe(true);
                checked++;
              }
    expect(checked).toBe(2 * 3 * 2 * 4 * 8 * 2);
  });
});

describe('dnstap: queries', () => {
  it('taps CLIENT_QUERY and CLIENT_RESPONSE with full messages to a unix socket', async () => {
    const col = await collector(join(dir, 'full.sock'));
    const run = await runCorefile(
      `.:53 {\n  dnstap unix://${col.address} full {\n    identity tap-test\n    version v9\n    extra "x"\n  }\n  whoami\n}\n`,
    );
    cleanups.push(() => run.stop());
    await waitFor('the handshake', () => col.started === 1);
    const query = encodeQuery('example.org.', 'A', { id: 4242 });
    const reply = await run.exchange(query, { remoteAddress: '127.0.0.5' });
    const frames = await waitFor('two frames', () => col.frames.length >= 2 && col.frames);
    const [q, r] = frames;
    expect(q).toMatchObject({ identity: 'tap-test', version: 'v9', extra: 'x', type: 1 });
    expect(q!.message).toMatchObject({
      type: 5,
      socketFamily: 1,
      socketProtocol: 1,
      queryAddress: Buffer.from([127, 0, 0, 5]),
      queryMessage: query,
    });
    expect(q!.message?.responseMessage).toBeUndefined();
    expect(r!.message).toMatchObject({ type: 6, responseMessage: reply, queryTimeSec: q!.message?.queryTimeSec });
    expect(r!.message?.responseTimeSec).toBeGreaterThanOrEqual(r!.message!.queryTimeSec!);
  });

  it('taps over TCP without messages unless full, and the bare reply of a server-written RCODE', async () => {
    const col = await collector();
    const run = await runCorefile(`example.org:53 {\n  dnstap ${col.address}\n  acl {\n    block\n  }\n}\n`);
    cleanups.push(() => run.stop());
    await waitFor('the handshake', () => col.started === 1);
    await run.exchange(encodeQuery('example.org.', 'A'), { proto: 'tcp' });
    const frames = await waitFor('two frames', () => col.frames.length >= 2 && col.frames);
    expect(frames.map((f) => f.message?.type)).toEqual([5, 6]);
    expect(frames[0]!.message).toMatchObject({ socketProtocol: 2 });
    expect(frames[0]!.message?.queryMessage).toBeUndefined();
    expect(frames[1]!.message?.responseMessage).toBeUndefined();
    expect(frames[0]!.extra).toBeUndefined();
  });

  it('answers while no collector listens, logs the dial error and counts the drops', async () => {
    const logs = captureLogs(cleanups);
    const path = join(dir, 'absent.sock');
    const run = await runCorefile(`.:53 {\n  dnstap ${path} full\n  whoami\n}\n`);
    cleanups.push(() => run.stop());
    await logs.waitFor(
      `[ERROR] plugin/dnstap: No connection to dnstap endpoint: dial unix ${path}: connect: no such file or directory`,
    );
    for (let i = 0; i < 20; i++) expect(await run.exchange(encodeQuery('example.org.', 'A'))).not.toBeNull();
  });
});

describe('dnstap: output queue', () => {
  function output(address: string, capacity: number, errorCheckIntervalMs = 60_000): TapOutput {
    const network = address.startsWith('tcp://') ? 'tcp' : 'unix';
    const o = new TapOutput({
      network,
      address: network === 'tcp' ? address.slice(6) : address,
      capacity,
      skipVerify: false,
      identity: { identity: Buffer.from('i'), version: Buffer.from('v') },
      log: logger('dnstap'),
      errorCheckIntervalMs,
    });
    cleanups.push(() => o.close());
    return o;
  }
  const rec = { type: MessageType.CLIENT_QUERY, proto: 'udp', address: '127.0.0.1', port: 1, queryTimeMs: 0 } as const;

  it('bounds the queue behind a collector that stops reading, and delivers once it reads again', async () => {
    const capacity = 1000;
    const col = await collector();
    const o = output(col.address, capacity);
    expect(await o.start()).toBeUndefined();
    await waitFor('the handshake', () => col.started === 1);
    col.pause();
    const payload = Buffer.alloc(4000);
    // Far more than the socket buffers hold: the queue fills and the rest is dropped, never blocking.
    let turns = 0;
    let tapped = 0;
    while (o.droppedTotal === 0) {
      for (let i = 0; i < capacity; i++) o.tap({ ...rec, queryMessage: payload });
      tapped += capacity;
      await new Promise((r) => setImmediate(r));
      expect(++turns).toBeLessThan(10_000);
    }
    const dropped = o.droppedTotal;
    col.resume();
    // Records tapped while the backlog drains may still be dropped (the bound holds until the
    // socket takes it); one tapped at each look gets through once it has, after the whole backlog.
    await waitFor('a record after the backlog', () => {
      o.tap(rec);
      return col.frames.at(-1)?.message?.queryMessage === undefined && col.frames.length > 0;
    });
    const delivered = col.frames.filter((f) => f.message?.queryMessage !== undefined).length;
    // Every record was delivered or counted as dropped, and no more than `capacity` waited in
    // memory: the write the socket had not taken yet counts against it too.
    expect(delivered + dropped).toBe(tapped);
    expect(delivered).toBeLessThanOrEqual(capacity);
  });

  it('redials on the error check, logs the drops, and sends STOP on close', async () => {
    const logs = captureLogs(cleanups);
    const path = join(dir, 'late.sock');
    const o = output(path, 10, 50);
    expect((await o.start())?.message).toBe(`dial unix ${path}: connect: no such file or directory`);
    o.tap(rec);
    await logs.waitFor('[WARNING] plugin/dnstap: Dropped dnstap messages: 1');
    const col = await collector(path);
    await waitFor('the redial', () => col.started === 1);
    o.tap(rec);
    await waitFor('the record', () => col.frames.length === 1);
    o.close();
    await waitFor('STOP', () => col.stopped === 1);
  });
});
