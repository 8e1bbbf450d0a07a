import * as dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { parseRequest } from '../../src/dns/wire.js';
import type { Handler } from '../../src/plugin.js';
import { Query } from '../../src/query.js';
import { makeQuery, TEST_TRANSPORT } from '../../test/helpers/dns.js';
import { freePort } from '../../test/helpers/net.js';
import { dispenserFor, setupContext, type TestContext } from '../../test/helpers/setup.js';
import { FakeNext } from '../../test/helpers/upstream.js';
import { loop, LoopHandler, probeTarget } from './index.js';
import { loopHooks, random62 } from './loop.js';
import { waitFor } from '../../test/helpers/wait.js';
import { captureLogs } from '../../test/helpers/logs.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A UDP socket standing in for the server's listener; `onProbe` gets each packet. */
async function listener(onProbe: (pkt: Buffer, reply: (b: Buffer) => void) => void): Promise<number> {
  const port = await freePort();
  const sock = dgram.createSocket('udp4');
  sock.on('message', (msg, rinfo) => onProbe(msg, (b) => sock.send(b, rinfo.port, rinfo.address)));
  await new Promise<void>((r) => sock.bind(port, '127.0.0.1', () => r()));
  cleanups.push(() => new Promise<void>((r) => sock.close(() => r())));
  return port;
}

async function setup(
  port: number,
  zones = ['example.org.'],
): Promise<{ h: LoopHandler; ctx: TestContext; next: FakeNext }> {
  const ctx = setupContext({ zones, port });
  const f = await loop.setup(dispenserFor('loop', 'loop'), ctx);
  const next = new FakeNext(() => 5);
  const h = f!(next, ctx.block) as LoopHandler;
  cleanups.push(() => ctx.stop());
  return { h, ctx, next };
}

function queryFrom(pkt: Buffer): Query {
  const p = parseRequest(pkt);
  if (p.kind !== 'query') throw new Error('bad probe');
  return new Query(pkt, p.req, {
    ...TEST_TRANSPORT,
    remoteAddress: '127.0.0.1',
    remotePort: 5353,
    localAddress: '127.0.0.1',
    localPort: 53,
  });
}

describe('loop', () => {
  it('rejects arguments', async () => {
    let err: unknown;
    try {
      await loop.setup(dispenserFor('\nloop extra', 'loop'), setupContext());
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toBe("Wrong argument count or unexpected line ending after 'extra'");
    expect((err as ConfigError).line).toBe(2);
  });

  it('builds probe names below the first zone from two random integers below 2^62', async () => {
    const { h } = await setup(1);
    expect(h.state.qname).toMatch(/^\d+\.\d+\.example\.org\.$/);
    for (let i = 0; i < 20; i++) expect(BigInt(random62()) < 1n << 62n).toBe(true);
    expect(probeTarget([])).toBe('127.0.0.1');
    expect(probeTarget(['::'])).toBe('::1');
    expect(probeTarget(['10.1.2.3'])).toBe('10.1.2.3');
  });

  it('a probe seen a third time logs the FATAL line and exits with status 1', async () => {
    const exits: number[] = [];
    const prevExit = loopHooks.exit;
    loopHooks.exit = (code) => {
      exits.push(code);
    };
    cleanups.push(() => {
      loopHooks.exit = prevExit;
    });
    const lines = captureLogs(cleanups).lines;
    let handler: Handler | null = null;
    const port = await listener((pkt) => {
      // The "forwarder" sends the probe back into the chain three times (a loop).
      for (let i = 0; i < 3; i++) void handler!.serve(queryFrom(pkt));
    });
    const { h, ctx, next } = await setup(port);
    handler = h;
    await ctx.start();
    await waitFor('the loop plugin to exit', () => exits.length > 0);
    expect(exits).toEqual([1]);
    expect(lines).toContain(
      `[FATAL] plugin/loop: Loop (127.0.0.1:5353 -> 127.0.0.1:53) detected for zone "example.org.", see https://coredns.io/plugins/loop#troubleshooting. Query: "HINFO ${h.state.qname}"`,
    );
    expect(next.calls).toBe(3); // everything is passed on
  });

  it('once the probe is answered the plugin disables itself and only passes queries on', async () => {
    const port = await listener((pkt, reply) => {
      const out = Buffer.from(pkt);
      out.writeUInt16BE(out.readUInt16BE(2) | 0x8000 | 2, 2); // any reply, even SERVFAIL
      reply(out);
    });
    const { h, ctx, next } = await setup(port);
    await ctx.start();
    await waitFor('the plugin to disable itself', () => h.state.disabled);
    expect(h.state.disabled).toBe(true);
    for (let i = 0; i < 5; i++) await h.serve(makeQuery(h.state.qname, 'HINFO'));
    expect(h.state.seen).toBe(0);
    expect(next.calls).toBe(5);
  });

  it('counts only HINFO queries for the probe name', async () => {
    const { h } = await setup(1);
    await h.serve(makeQuery(h.state.qname, 'A'));
    await h.serve(makeQuery(`x.${h.state.qname}`, 'HINFO'));
    expect(h.state.seen).toBe(0);
    await h.serve(makeQuery(h.state.qname.toUpperCase(), 'HINFO'));
    expect(h.state.seen).toBe(1);
  });
});
