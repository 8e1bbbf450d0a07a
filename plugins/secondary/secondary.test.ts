/**
 * The secondary plugin: setup errors, RFC 1982 serial order, and the zone's life against a primary
 * that is clusterdns in-process (file + transfer): SERVFAIL before the first transfer, answers after it,
 * NOTIFY from a primary and from a stranger, refresh on a new serial, expiry, transfer out, and the
 * threads' copies fed by the main thread's pulls.
 */
import { writeFileSync, mkdtempSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { Flag, Opcode } from '../../src/dns/constants.js';
import type { Message } from '../../src/dns/message.js';
import { parseRequest } from '../../src/dns/wire.js';
import type { Handler } from '../../src/plugin.js';
import { Query } from '../../src/query.js';
import { ReplicaClient, ReplicationHub, type ReplicationWire } from '../../src/server/replication.js';
import { TRANSFER, type TransferHub, transferAnswers } from '../../src/transfer.js';
import { encodeQuery, makeQuery, rcode, TEST_TRANSPORT, udpQuery } from '../../test/helpers/dns.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { rrLines } from '../../test/helpers/records.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { dispenserFor, setupContext, type TestContext } from '../../test/helpers/setup.js';
import { waitFor } from '../../test/helpers/wait.js';
import { SecondaryHandler } from './handler.js';
import { secondary } from './index.js';
import { parseSecondary, type SecondaryConfig } from './setup.js';
import { SecondaryZone, serialLess, type ZoneLogs } from './zone.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function setupError(text: string, zones = ['example.org.']): string {
  try {
    parseSecondary(dispenserFor(text, 'secondary'), zones);
  } catch (e) {
    if (e instanceof ConfigError) return e.describe();
    return (e as Error).message;
  }
  return 'no error';
}

describe('secondary setup', () => {
  it('reads zones, primaries in order (port 53 by default) and fallthrough', () => {
    const cfg = parseSecondary(
      dispenserFor(
        'secondary example.org example.net {\n transfer from 10.0.1.1 [2001:db8::1]:5300\n transfer from 10.1.2.1:53\n fallthrough example.org\n}',
        'secondary',
      ),
      ['.'],
    );
    expect(cfg.names).toEqual(['example.org.', 'example.net.']);
    expect(cfg.zones.get('example.net.')!.from).toEqual(['10.0.1.1:53', '[2001:db8::1]:5300', '10.1.2.1:53']);
    expect(cfg.fallthrough).toEqual(['example.org.']);
    const block = parseSecondary(dispenserFor('secondary {\n transfer from 127.0.0.1\n}', 'secondary'), ['a.test.']);
    expect(block.names).toEqual(['a.test.']);
    expect(block.fallthrough).toBeNull();
  });

  it("words CoreDNS's errors, with the Corefile line", () => {
    expect(setupError('secondary')).toBe(
      'plugin/secondary: Corefile:1 - Error during parsing: secondary zones require a transfer from property',
    );
    expect(setupError('secondary {\n fallthrough\n}')).toBe(
      'plugin/secondary: Corefile:3 - Error during parsing: secondary zones require a transfer from property',
    );
    expect(setupError('secondary {\n transfer\n}')).toBe(
      "plugin/secondary: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'transfer'",
    );
    expect(setupError('secondary {\n transfer from\n}')).toBe(
      "plugin/secondary: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'from'",
    );
    expect(setupError('secondary {\n transfer to 1.2.3.4\n}')).toBe(
      'plugin/secondary: Corefile:2 - Error during parsing: unknown property to',
    );
    expect(setupError('secondary {\n transfer from *\n}')).toBe(
      "plugin/secondary: Corefile:2 - Error during parsing: can't use '*' in transfer from",
    );
    expect(setupError('secondary {\n transfer from foo\n}')).toBe(
      "plugin/secondary: Corefile:2 - Error during parsing: must specify an IP address: `foo'",
    );
    expect(setupError('secondary {\n transfer from 127.0.0.1\n bogus\n}')).toBe(
      "plugin/secondary: Corefile:3 - Error during parsing: unknown property 'bogus'",
    );
    expect(setupError('secondary {\n transfer from 127.0.0.1\n catalog :\n}')).toBe(
      'plugin/secondary: Corefile:3 - Error during parsing: invalid catalog member zone ":"',
    );
  });
});

describe('serial arithmetic (RFC 1982)', () => {
  it('orders serials across the wrap', () => {
    expect(serialLess(1, 2)).toBe(true);
    expect(serialLess(2, 1)).toBe(false);
    expect(serialLess(2, 2)).toBe(false);
    expect(serialLess(0xfffffff0, 5)).toBe(true);
    expect(serialLess(5, 0xfffffff0)).toBe(false);
  });
});

/** A TCP server that accepts and never answers (a stalled primary). */
async function stalledPrimary(): Promise<string> {
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((sock) => {
    sockets.add(sock);
    sock.on('error', () => undefined);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        srv.close(() => r());
      }),
  );
  return `127.0.0.1:${(srv.address() as net.AddressInfo).port}`;
}

// ---- The zone's life against a real primary (clusterdns in-process) -----------------------------

const dir = mkdtempSync(join(tmpdir(), 'secondary-plugin-'));

function zoneText(serial: number, www: string, timers = '1 1 1'): string {
  return `$ORIGIN example.org.
$TTL 3600
@ IN SOA ns1 hostmaster ( ${serial} ${timers} 300 )
  IN NS ns1
ns1 A 192.0.2.53
www A ${www}
alias CNAME www
out CNAME www.example.net.
`;
}

async function primary(text: string, notifyTo?: number): Promise<{ srv: TestServer; db: string }> {
  const db = join(dir, `db.${Math.random().toString(36).slice(2)}`);
  writeFileSync(db, text);
  const to = notifyTo !== undefined ? `to 127.0.0.1:${notifyTo}` : 'to *';
  const srv = await startServer(`example.org {\n  file ${db} {\n    reload 0\n  }\n  transfer {\n    ${to}\n  }\n}\n`);
  cleanups.push(() => srv.stop());
  return { srv, db };
}

function logsOf(lines: string[]): ZoneLogs {
  const l = (prefix: string): ZoneLogs['file'] => ({
    info: (m) => lines.push(`[INFO] ${prefix}${m}`),
    warning: (m) => lines.push(`[WARNING] ${prefix}${m}`),
    error: (m) => lines.push(`[ERROR] ${prefix}${m}`),
    debug: () => undefined,
    raw: () => undefined,
  });
  return { secondary: l('plugin/secondary: '), file: l('plugin/file: ') };
}

const FAST = { firstRetryMs: 20, refreshJitterMs: 1, retryJitterMs: 1, timeoutMs: 500 };

function zoneAndHandler(
  from: string[],
  lines: string[],
  o: { fallthrough?: string[] | null; next?: Handler | null; replication?: ReplicationHub | ReplicaClient } = {},
): { z: SecondaryZone; h: SecondaryHandler } {
  const z = new SecondaryZone('example.org.', from, 'secondary:test', logsOf(lines), o.replication, FAST);
  cleanups.push(() => z.close());
  const cfg: SecondaryConfig = {
    names: ['example.org.'],
    zones: new Map([['example.org.', { origin: 'example.org.', from }]]),
    fallthrough: o.fallthrough ?? null,
    catalogs: new Map(),
  };
  const ctx = setupContext({ zones: ['example.org.'] });
  const h = new SecondaryHandler(
    cfg,
    { names: ['example.org.'], zones: new Map([['example.org.', z]]) },
    o.next ?? null,
    logsOf(lines).file,
    ctx.selfLookup,
  );
  return { z, h };
}

async function ask(h: Handler, name: string, type = 'A'): Promise<{ rc: number; m: Message | null }> {
  const q = makeQuery(name, type);
  const rc = await h.serve(q);
  return { rc, m: q.reply ? q.reply.peek() : null };
}

function notifyQuery(from: string): Query {
  const raw = encodeQuery('example.org', 'SOA');
  raw[2] = (raw[2]! & 0x87) | (Opcode.NOTIFY << 3) | 0x04; // opcode NOTIFY, AA
  const parsed = parseRequest(raw);
  if (parsed.kind !== 'query') throw new Error('NOTIFY not parsed as a query');
  return new Query(raw, parsed.req, { ...TEST_TRANSPORT, remoteAddress: from });
}

describe('secondary zone', () => {
  it('answers SERVFAIL until the first transfer, retrying with a doubling delay, then as file would', async () => {
    const port = (await primary(zoneText(1, '192.0.2.80'))).srv.port;
    const lines: string[] = [];
    const { z, h } = zoneAndHandler(['127.0.0.1:1', `127.0.0.1:${port}`], lines);
    expect((await ask(h, 'www.example.org')).rc).toBe(2);
    z.start();
    await waitFor('the first transfer', () => z.data.soa !== null);
    expect(lines.filter((l) => !l.includes('127.0.0.1:1'))).toEqual([
      `[INFO] plugin/file: Transferred: example.org. from 127.0.0.1:${port}`,
    ]);
    // The first primary was tried first (it refused the connection).
    expect(lines[0]).toBe(
      '[ERROR] plugin/file: Failed to setup transfer `example.org.\' with `"127.0.0.1:1"\': dial tcp 127.0.0.1:1: connect: connection refused',
    );
    const a = await ask(h, 'alias.example.org');
    expect(a.rc).toBe(0);
    expect(a.m!.flags! & Flag.AA).toBe(Flag.AA);
    expect(rrLines(a.m!.answers)).toEqual([
      'alias.example.org. 3600 IN CNAME www.example.org.',
      'www.example.org. 3600 IN A 192.0.2.80',
    ]);
    const nx = await ask(h, 'nosuch.example.org');
    expect(nx.rc).toBe(3);
    expect(nx.m!.authorities.map((r) => r.type)).toEqual(['SOA']);
    expect((await ask(h, 'example.org', 'AXFR')).rc).toBe(5);
  });

  it('logs the retries while no primary answers, and keeps answering queries meanwhile', async () => {
    const stalled = await stalledPrimary();
    const lines: string[] = [];
    const { z, h } = zoneAndHandler([stalled], lines);
    z.start();
    await waitFor('a retry', () => lines.find((l) => l.includes('masters failed')));
    // A transfer is waiting on the stalled primary: queries are answered all the same.
    expect((await ask(h, 'www.example.org')).rc).toBe(2);
    expect(lines.find((l) => l.includes('masters failed'))).toMatch(
      /^\[WARNING\] plugin\/secondary: All 'example\.org\.' masters failed to transfer, retrying in 20ms: read tcp 127\.0\.0\.1:\d+->127\.0\.0\.1:\d+: i\/o timeout$/,
    );
  });

  it('refreshes when the primary serial grows, and expires (SERVFAIL) when the primary is gone', async () => {
    const p = await primary(zoneText(1, '192.0.2.80'));
    const lines: string[] = [];
    const { z, h } = zoneAndHandler([`127.0.0.1:${p.srv.port}`], lines);
    z.start();
    await waitFor('the first transfer', () => z.data.soa !== null);
    writeFileSync(p.db, zoneText(2, '192.0.2.81'));
    await p.srv.reload(); // the primary reads the file again (its reload is 0)
    await waitFor('the refresh', () => z.data.serial === 2);
    expect(rrLines((await ask(h, 'www.example.org')).m!.answers)).toEqual(['www.example.org. 3600 IN A 192.0.2.81']);
    await p.srv.stop();
    await waitFor('the zone to expire', () => z.expired);
    expect(lines).toContain(
      '[WARNING] plugin/file: Failed refresh check dial tcp ' + `127.0.0.1:${p.srv.port}: connect: connection refused`,
    );
    expect((await ask(h, 'www.example.org')).rc).toBe(2);
    expect(lines.at(-1)).toBe('[ERROR] plugin/file: Zone example.org. is expired');
  });

  it('takes NOTIFY from a primary (answered, serial checked, transferred) and drops it from anyone else', async () => {
    // Refresh far away: only the NOTIFY brings the change.
    const p = await primary(zoneText(1, '192.0.2.80', '3600 600 86400'));
    const lines: string[] = [];
    const { z, h } = zoneAndHandler([`127.0.0.1:${p.srv.port}`], lines);
    z.start();
    await waitFor('the first transfer', () => z.data.soa !== null);
    const stranger = notifyQuery('192.0.2.99');
    expect(await h.serve(stranger)).toBe(0);
    expect(stranger.reply).toBeNull();
    expect(stranger.dropped).toBe(true);
    expect(lines.at(-1)).toBe('[INFO] plugin/file: Dropping notify from 192.0.2.99 for example.org.');
    const same = notifyQuery('127.0.0.1');
    expect(await h.serve(same)).toBe(0);
    const ack = same.reply!.peek();
    expect(ack.flags! & Flag.AA).toBe(Flag.AA);
    expect((ack.flags! >> 11) & 0xf).toBe(Opcode.NOTIFY);
    await waitFor('the serial check', () => lines.find((l) => l.includes('no SOA serial increase seen')));
    writeFileSync(p.db, zoneText(2, '192.0.2.81', '3600 600 86400'));
    await p.srv.reload();
    await h.serve(notifyQuery('127.0.0.1'));
    await waitFor('the notified transfer', () => z.data.serial === 2);
    expect(lines.filter((l) => l.includes('Notify from'))).toEqual([
      '[INFO] plugin/file: Notify from 127.0.0.1 for example.org.: checking transfer',
      '[INFO] plugin/file: Notify from 127.0.0.1 for example.org.: no SOA serial increase seen',
      '[INFO] plugin/file: Notify from 127.0.0.1 for example.org.: checking transfer',
    ]);
  });

  it('falls through on NXDOMAIN when asked to', async () => {
    const port = (await primary(zoneText(1, '192.0.2.80'))).srv.port;
    let passed = 0;
    const next: Handler = { name: 'next', serve: () => (passed++, 5) };
    const { z, h } = zoneAndHandler([`127.0.0.1:${port}`], [], { fallthrough: ['.'], next });
    z.start();
    await waitFor('the first transfer', () => z.data.soa !== null);
    await ask(h, 'nosuch.example.org');
    expect(passed).toBe(1);
    await ask(h, 'www.example.org', 'MX');
    expect(passed).toBe(1);
  });

  it('with threads: the main thread pulls once, the threads get the zone, a NOTIFY in a thread reaches the main thread', async () => {
    const p = await primary(zoneText(1, '192.0.2.80', '3600 600 86400'));
    let transfers = 0;
    const counted = net.createServer((c) => {
      transfers++;
      const up = net.connect(p.srv.port, '127.0.0.1');
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    await new Promise<void>((r) => counted.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => counted.close(() => r())));
    const from = [`127.0.0.1:${(counted.address() as net.AddressInfo).port}`];
    // The hub and two replicas, wired as src/server/threads.ts wires them (messages cloned).
    const hub = new ReplicationHub();
    const replicas: ReplicaClient[] = [];
    for (let i = 0; i < 2; i++) {
      const peer = {
        postMessage: (m: ReplicationWire) => queueMicrotask(() => replica.handle(structuredClone(m) as never)),
      };
      const replica: ReplicaClient = new ReplicaClient({
        postMessage: (m: unknown) => queueMicrotask(() => hub.handle(peer, structuredClone(m) as never)),
      });
      replicas.push(replica);
    }
    const lines: string[] = [];
    const main = zoneAndHandler(from, lines, { replication: hub });
    const threads = replicas.map((r) => zoneAndHandler(from, lines, { replication: r }));
    for (const t of threads) t.z.start();
    main.z.start();
    await waitFor('the threads to get the zone', () => threads.every((t) => t.z.data.serial === 1));
    expect(transfers).toBe(1);
    expect(rrLines((await ask(threads[1]!.h, 'www.example.org')).m!.answers)).toEqual([
      'www.example.org. 3600 IN A 192.0.2.80',
    ]);
    writeFileSync(p.db, zoneText(2, '192.0.2.81', '3600 600 86400'));
    await p.srv.reload();
    await threads[0]!.h.serve(notifyQuery('127.0.0.1'));
    await waitFor('the notified transfer in every thread', () =>
      [main, ...threads].every((t) => t.z.data.serial === 2),
    );
    // One serial check and one transfer, in the main thread.
    expect(transfers).toBe(3);
    expect(lines.filter((l) => l.includes('Transferred'))).toHaveLength(2);
    expect(rrLines((await ask(threads[0]!.h, 'www.example.org')).m!.answers)).toEqual([
      'www.example.org. 3600 IN A 192.0.2.81',
    ]);
  });
});

describe('secondary plugin', () => {
  const contexts: TestContext[] = [];
  afterEach(async () => {
    while (contexts.length) await contexts.pop()!.stop();
  });

  it('pulls at startup, offers the zone to transfer and notifies its secondaries after each transfer', async () => {
    const port = (await primary(zoneText(5, '192.0.2.80', '3600 600 86400'))).srv.port;
    const logs = captureLogs(cleanups);
    const ctx = setupContext({ zones: ['example.org.'] });
    contexts.push(ctx);
    const notified: string[] = [];
    const sources: Parameters<TransferHub['addSource']>[0][] = [];
    ctx.provide(TRANSFER, {
      addSource: (s) => void sources.push(s),
      notify: (zone) => (notified.push(zone), Promise.resolve(null)),
    } satisfies TransferHub);
    const f = await secondary.setup(
      dispenserFor(`secondary {\n  transfer from 127.0.0.1:${port}\n}`, 'secondary'),
      ctx,
    );
    ctx.seal();
    await ctx.start();
    const h = f!(null, ctx.block);
    await logs.waitFor('Transferred: example.org.');
    expect(notified).toEqual(['example.org.']);
    expect((await ask(h, 'ns1.example.org')).rc).toBe(0);
    const records = [...transferAnswers(sources[0]!.transfer('example.org.', 0)!)].flat();
    expect(records[0]!.type).toBe('SOA');
    expect(records.at(-1)!.type).toBe('SOA');
    expect(records.map((r) => r.name)).toContain('www.example.org');
    expect(sources[0]!.transfer('www.example.org.', 0)).toBeNull();
  });
});

describe('secondary over a Corefile reload', () => {
  it('keeps a zone whose origin and primaries stay, pulls anew when they change', async () => {
    const port = (await primary(zoneText(3, '192.0.2.80', '3600 600 86400'))).srv.port;
    const text = (extra: string): string =>
      `example.org {\n  secondary {\n    transfer from 127.0.0.1:${port}${extra}\n  }\n}\nother.test {\n  whoami\n}\n`;
    const srv = await startServer(text(''));
    cleanups.push(() => srv.stop());
    const transferred = (): number => srv.logs.filter((l) => l.includes('Transferred: example.org.')).length;
    await waitFor('the first transfer', () => transferred() === 1);
    expect(await srv.reload(`${text('')}# a comment changes the text\n`)).toBe(true);
    // Served at once by the new configuration, without a second transfer.
    expect(rrLines((await udpQuery(srv.port, 'www.example.org', 'A')).answers)).toEqual([
      'www.example.org. 3600 IN A 192.0.2.80',
    ]);
    expect(transferred()).toBe(1);
    // Another primary list: another zone, pulled again (the old one is stopped).
    expect(await srv.reload(text(` 127.0.0.1:${port}`))).toBe(true);
    await waitFor('the new zone to be pulled', () => transferred() === 2);
    expect(rcode(await udpQuery(srv.port, 'www.example.org', 'A'))).toBe(0);
  });
});
