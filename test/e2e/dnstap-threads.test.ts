/**
 * `dnstap listen` with query threads (src/dnstap/listener.ts): the main thread binds the endpoint
 * and the query threads send their records to it over a BroadcastChannel, so one sink connected to
 * `bin/clusterdns -workers 2` gets the records of every query, whichever thread answered it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { udpExchangeFrom, encodeQuery } from '../helpers/dns.js';
import { connectSink } from '../helpers/framestream.js';
import { spawnServer } from '../helpers/spawn.js';
import { waitFor } from '../helpers/wait.js';

/** Queries from fresh client sockets: enough flows that both threads' sockets answer some. */
const FLOWS = 32;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('dnstap listen with query threads', () => {
  it('one sink gets both records of every query with -workers 2', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'dnstap-threads-')), 'l.sock');
    const s = await spawnServer(`. {\n  dnstap listen unix://${path}\n  whoami\n}\n`, ['-workers', '2']);
    cleanups.push(() => s.stop());
    await waitFor('the server answering', () => udpExchangeFrom(s.port, encodeQuery('up.example.org.', 'A')), {
      retry: () => true,
    });
    const sink = connectSink(cleanups, { path });
    await waitFor('the handshake', () => sink.started, { retry: () => true });
    const ports = new Set<number>();
    for (let i = 0; i < FLOWS; i++) {
      const { localPort } = await udpExchangeFrom(s.port, encodeQuery(`q${i}.example.org.`, 'A'));
      ports.add(localPort);
    }
    // Every flow's CLIENT_QUERY (5) and CLIENT_RESPONSE (6), by the client's port.
    await waitFor(
      () => `records of ${FLOWS} queries; have ${sink.frames.length} frames`,
      () =>
        [...ports].every(
          (p) =>
            sink.frames.some((f) => f.message?.type === 5 && f.message.queryPort === p) &&
            sink.frames.some((f) => f.message?.type === 6 && f.message.queryPort === p),
        ),
    );
    expect(ports.size).toBe(FLOWS);
  });
});
