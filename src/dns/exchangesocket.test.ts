import * as dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers/wait.js';
import { Qtype } from './constants.js';
import { buildQuery } from './encode.js';
import { type ExchangeFailure, ExchangeSocket, type ExchangeSocketOptions } from './exchangesocket.js';
import { type PendingExchange, PendingExchanges } from './pendingexchanges.js';

interface Q extends PendingExchange {
  readonly n: number;
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A UDP server on 127.0.0.1 that hands every query to `answer` (which sends what it likes). */
async function server(answer: (q: Buffer, send: (m: Buffer) => void) => void): Promise<number> {
  const s = dgram.createSocket('udp4');
  s.on('message', (q, r) => answer(q, (m) => s.send(m, r.port, r.address)));
  await new Promise<void>((resolve) => s.bind(0, '127.0.0.1', () => resolve()));
  cleanups.push(() => s.close());
  return s.address().port;
}

/** `q` as its reply: QR set, one marker byte appended. */
function reply(q: Buffer, marker: number, id = q.readUInt16BE(0)): Buffer {
  const r = Buffer.concat([q, Buffer.from([marker])]);
  r.writeUInt16BE(id, 0);
  r.writeUInt16BE(r.readUInt16BE(2) | 0x8000, 2);
  return r;
}

/** What a socket's hooks saw. */
interface Seen {
  answered: [number, number][];
  failed: [number, ExchangeFailure, string | null][];
  unmatched: number;
  closed: number;
}

function open(
  port: number,
  o: Partial<ExchangeSocketOptions<Q>> = {},
): { conn: ExchangeSocket<Q>; seen: Seen; ask: (n: number, timeoutMs?: number) => void } {
  const seen: Seen = { answered: [], failed: [], unmatched: 0, closed: 0 };
  const conn = new ExchangeSocket<Q>({
    host: '127.0.0.1',
    port,
    sourceAddress: null,
    ids: { randomTries: 16, scan: true },
    unrefTimers: true,
    socketErrors: 'fail-socket',
    answered: (p, r) => seen.answered.push([p.n, r.at(-1)!]),
    unmatched: () => seen.unmatched++,
    failed: (p, why, err) => seen.failed.push([p.n, why, err?.message ?? null]),
    closed: () => seen.closed++,
    ...o,
  });
  cleanups.push(() => conn.close('closed', null));
  const ask = (n: number, timeoutMs = 30_000): void => {
    const id = conn.pending.freeId();
    conn.send(id, { n, timer: undefined }, buildQuery('example.org.', Qtype.A, true), timeoutMs);
  };
  return { conn, seen, ask };
}

/** Pretend the kernel reported an ICMP error for an earlier datagram on the connected socket. */
function icmpError(conn: ExchangeSocket<Q>): void {
  const sock = (conn as unknown as { sock: dgram.Socket }).sock;
  sock.emit('error', Object.assign(new Error('recv ECONNREFUSED'), { code: 'ECONNREFUSED' }));
}

describe('PendingExchanges', () => {
  it('finds a free id by random tries, then by scanning when asked to', () => {
    const scan = new PendingExchanges<Q>({ randomTries: 0, scan: true }, () => undefined, true);
    expect(scan.freeId()).toBe(0);
    scan.add(0, { n: 0, timer: undefined }, 60_000);
    expect(scan.freeId()).toBe(1);
    const none = new PendingExchanges<Q>({ randomTries: 0, scan: false }, () => undefined, true);
    expect(none.freeId()).toBe(-1);
    const random = new PendingExchanges<Q>({ randomTries: 1, scan: false }, () => undefined, true);
    expect(random.freeId()).toBeGreaterThanOrEqual(0);
    expect(scan.takeAll().map((p) => p.n)).toEqual([0]);
  });

  it('keeps send order for oldest() and removes a query once', () => {
    const t = new PendingExchanges<Q>({ randomTries: 16, scan: true }, () => undefined, true);
    t.add(7, { n: 1, timer: undefined }, 60_000);
    t.add(3, { n: 2, timer: undefined }, 60_000);
    expect(t.oldest()).toBe(7);
    expect(t.take(7)?.n).toBe(1);
    expect(t.take(7)).toBeUndefined();
    expect(t.oldest()).toBe(3);
    t.takeAll();
    expect(t.size).toBe(0);
  });
});

describe('ExchangeSocket', () => {
  it('hands each reply to the query whose id it carries', async () => {
    const port = await server((q, send) => send(reply(q, q.readUInt16BE(0) & 0xff)));
    const { conn, seen, ask } = open(port);
    ask(1);
    ask(2);
    ask(3);
    await waitFor('three answers', () => seen.answered.length === 3);
    expect(seen.answered.map(([n]) => n).sort()).toEqual([1, 2, 3]);
    expect(seen.failed).toEqual([]);
    expect(conn.pending.size).toBe(0);
  });

  it('reports a datagram with an unknown id as unmatched and keeps the query waiting', async () => {
    const port = await server((q, send) => {
      send(reply(q, 1, q.readUInt16BE(0) ^ 0x8000));
      send(reply(q, 2));
    });
    const { seen, ask } = open(port);
    ask(1);
    await waitFor('the answer', () => seen.answered.length === 1);
    expect(seen).toMatchObject({ answered: [[1, 2]], unmatched: 1 });
  });

  it('drops a reply that `accepts` refuses, silently, and takes the next one', async () => {
    const port = await server((q, send) => {
      send(reply(q, 1));
      send(reply(q, 2));
    });
    const { seen, ask } = open(port, { accepts: (r) => r.at(-1) === 2 });
    ask(1);
    await waitFor('the answer', () => seen.answered.length === 1);
    expect(seen).toMatchObject({ answered: [[1, 2]], unmatched: 0, failed: [] });
  });

  it('ends a query without a reply with `timeout`', async () => {
    const port = await server(() => undefined);
    const { conn, seen, ask } = open(port);
    ask(1, 20);
    await waitFor('the timeout', () => seen.failed.length === 1);
    expect(seen.failed).toEqual([[1, 'timeout', null]]);
    expect(conn.closed).toBe(false);
  });

  it('fail-socket: an ICMP error fails every query and closes the socket', async () => {
    const port = await server(() => undefined);
    const { conn, seen, ask } = open(port, { socketErrors: 'fail-socket' });
    await conn.ready;
    ask(1);
    ask(2);
    icmpError(conn);
    expect(seen.failed).toEqual([
      [1, 'icmp', 'recv ECONNREFUSED'],
      [2, 'icmp', 'recv ECONNREFUSED'],
    ]);
    expect(conn.closed).toBe(true);
    expect(seen.closed).toBe(1);
  });

  it('fail-oldest: an ICMP error is charged to the oldest query only', async () => {
    const port = await server(() => undefined);
    const { conn, seen, ask } = open(port, { socketErrors: 'fail-oldest' });
    await conn.ready;
    ask(1);
    ask(2);
    icmpError(conn);
    expect(seen.failed).toEqual([[1, 'icmp', 'recv ECONNREFUSED']]);
    expect(conn.pending.size).toBe(1);
    expect(conn.closed).toBe(false);
  });

  it('close fails what is in flight once, with the reason given', async () => {
    const port = await server(() => undefined);
    const { conn, seen, ask } = open(port);
    ask(1);
    conn.close('closed', new Error('stopped'));
    conn.close('closed', new Error('again'));
    expect(seen.failed).toEqual([[1, 'closed', 'stopped']]);
    expect(seen.closed).toBe(1);
  });

  it('sends queries registered before the socket connected once it is', async () => {
    const port = await server((q, send) => send(reply(q, 9)));
    const { seen, ask } = open(port);
    ask(1); // before `ready`
    await waitFor('the answer', () => seen.answered.length === 1);
    expect(seen.answered).toEqual([[1, 9]]);
  });
});
