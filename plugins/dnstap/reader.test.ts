/**
 * dnstap against the real reader: golang-dnstap's `dnstap` command (built by
 * scripts/install-dnstap.sh into .bin/) reads clusterdns's frames from a unix socket (`-u`) and a
 * TCP port (`-l`) and prints them as JSON (`-j`): the handshake, the message types, identity,
 * version, addresses and both DNS messages as miekg/dns unpacks them. The reader also relays every
 * payload it read unchanged (`-U`) to a test collector, which checks the full messages byte for
 * byte against the query sent and the reply received.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeQuery, udpExchangeFrom } from '../../test/helpers/dns.js';
import { startCollector, type Collector, type TapFrame } from '../../test/helpers/framestream.js';
import { freePort } from '../../test/helpers/net.js';
import { startServer } from '../../test/helpers/server.js';
import { watchLines } from '../../test/helpers/spawn.js';
import { waitFor } from '../../test/helpers/wait.js';

/** dnstap.proto's Message.Type numbers. */
const CLIENT_QUERY = 5;
const CLIENT_RESPONSE = 6;

const DNSTAP = resolve(import.meta.dirname, '../../.bin/dnstap');

/** The reader's JSON form of a record (golang-dnstap's JsonFormat.go). */
interface ReaderRecord {
  type: string;
  identity?: string;
  version?: string;
  message: {
    type: string;
    socket_family?: string;
    socket_protocol?: string;
    query_address?: string;
    query_port?: number;
    query_time?: string;
    response_time?: string;
    query_message?: string;
    response_message?: string;
  };
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function dnstapBinary(): string {
  try {
    accessSync(DNSTAP, constants.X_OK);
  } catch {
    throw new Error(
      `${DNSTAP} is missing: run \`bash scripts/install-dnstap.sh\` (builds it through the Go module proxy)`,
    );
  }
  return DNSTAP;
}

/** Runs the reader with `input` (`-u PATH` or `-l ADDR`), JSON on stdout, payloads relayed to `relay`. */
interface Reader {
  records(): ReaderRecord[];
}

function startReader(input: string[], relay: string): Reader {
  const proc = spawn(dnstapBinary(), [...input, '-j', '-w', '-', '-U', relay], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = watchLines(proc, { label: 'dnstap reader', timeoutMs: 20_000 });
  cleanups.push(async () => {
    if (proc.exitCode === null) proc.kill('SIGTERM');
    await lines.exited;
  });
  return {
    records: () => lines.output.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as ReaderRecord),
  };
}

/** Resolves once something accepts TCP connections on 127.0.0.1:port (the reader's `-l`). */
async function tcpListening(port: number): Promise<void> {
  await waitFor(
    `the reader listening on 127.0.0.1:${port}`,
    () =>
      new Promise<boolean>((resolvePromise) => {
        const s = connect({ host: '127.0.0.1', port });
        s.once('connect', () => {
          s.destroy();
          resolvePromise(true);
        });
        s.once('error', () => resolvePromise(false));
      }),
  );
}

interface RoundTrip {
  /** The reader's CLIENT_QUERY and CLIENT_RESPONSE records of the query. */
  q: ReaderRecord;
  r: ReaderRecord;
  /** The relayed payloads of the same two records. */
  rq: TapFrame;
  rr: TapFrame;
  query: Buffer;
  reply: Buffer;
}

/**
 * Serves a query through a server tapping to `socket` and returns what the reader made of it. The
 * output dials at start, so a query may still find it unconnected (its records dropped): ask again
 * from a fresh client port until the records of one query (matched by that port) have arrived.
 */
async function tapRoundTrip(socket: string, reader: Reader, relay: Collector): Promise<RoundTrip> {
  const server = await startServer(
    `. {\n  dnstap ${socket} full {\n    identity reader-test\n    version v-reader-1\n  }\n  whoami\n}\n`,
  );
  cleanups.push(() => server.stop());
  const query = encodeQuery('tap.example.org.', 'A', { id: 4242 });
  return waitFor('the reader printing the records of one query', async () => {
    const { reply, localPort } = await udpExchangeFrom(server.port, query);
    const of = (type: string): ReaderRecord | undefined =>
      reader.records().find((x) => x.message.type === type && x.message.query_port === localPort);
    const relayed = (type: number): TapFrame | undefined =>
      relay.frames.find((f) => f.message?.type === type && f.message.queryPort === localPort);
    const done = await waitFor(
      'the records of this query',
      () => (of('CLIENT_RESPONSE') && relayed(CLIENT_RESPONSE) ? true : null),
      { timeoutMs: 3000 },
    ).catch(() => false);
    if (!done) return null;
    return {
      q: of('CLIENT_QUERY')!,
      r: of('CLIENT_RESPONSE')!,
      rq: relayed(CLIENT_QUERY)!,
      rr: relayed(CLIENT_RESPONSE)!,
      query,
      reply,
    };
  });
}

describe('dnstap: the real golang-dnstap reader', () => {
  it('reads the frames from a unix socket (`dnstap -u`): types, identity, version, full messages', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dnstap-reader-'));
    const relay = await startCollector(join(dir, 'relay.sock'));
    cleanups.push(() => relay.close());
    const sock = join(dir, 'tap.sock');
    const reader = startReader(['-u', sock], join(dir, 'relay.sock'));
    await waitFor('the reader creating its socket', () => existsSync(sock));
    const { q, r, rq, rr, query, reply } = await tapRoundTrip(`unix://${sock}`, reader, relay);
    expect(q).toMatchObject({
      type: 'MESSAGE',
      identity: 'reader-test',
      version: 'v-reader-1',
      message: { type: 'CLIENT_QUERY', socket_family: 'INET', socket_protocol: 'UDP', query_address: '127.0.0.1' },
    });
    expect(q.message.query_message).toContain('id: 4242');
    expect(q.message.query_message).toContain(';tap.example.org.\tIN\t A');
    expect(q.message.response_message).toBeUndefined();
    expect(r).toMatchObject({
      type: 'MESSAGE',
      identity: 'reader-test',
      version: 'v-reader-1',
      message: { type: 'CLIENT_RESPONSE', socket_family: 'INET', socket_protocol: 'UDP', query_address: '127.0.0.1' },
    });
    expect(r.message.response_message).toContain('status: NOERROR, id: 4242');
    expect(r.message.response_message).toMatch(/tap\.example\.org\.\t0\tIN\tA\t127\.0\.0\.1/);
    // The payloads the reader read, relayed unchanged: the full messages byte for byte.
    expect(rq.message?.queryMessage).toEqual(query);
    expect(rr.message?.responseMessage).toEqual(reply);
  });

  it('reads the frames from a TCP port (`dnstap -l`)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dnstap-reader-'));
    const relay = await startCollector(join(dir, 'relay.sock'));
    cleanups.push(() => relay.close());
    const port = await freePort();
    const reader = startReader(['-l', `127.0.0.1:${port}`], join(dir, 'relay.sock'));
    await tcpListening(port);
    const { q, r, rq, rr, query, reply } = await tapRoundTrip(`tcp://127.0.0.1:${port}`, reader, relay);
    expect(q).toMatchObject({
      identity: 'reader-test',
      version: 'v-reader-1',
      message: { type: 'CLIENT_QUERY', query_address: '127.0.0.1' },
    });
    expect(r).toMatchObject({
      identity: 'reader-test',
      version: 'v-reader-1',
      message: { type: 'CLIENT_RESPONSE', query_address: '127.0.0.1' },
    });
    expect(r.message.response_message).toContain('status: NOERROR, id: 4242');
    expect(rq.message?.queryMessage).toEqual(query);
    expect(rr.message?.responseMessage).toEqual(reply);
  });
});
