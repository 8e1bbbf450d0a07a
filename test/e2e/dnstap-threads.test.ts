/**
 * `dnstap listen` with query threads (src/dnstap/listener.ts): the main thread binds the endpoint
 * and the query threads send their records to it over a BroadcastChannel, so one sink connected to
 * `bin/clusterdns -workers 2` gets the records of every query, whichever thread answered it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { decode } from '../../src/dns/message.js';
import { udpExchangeFrom, encodeQuery } from '../helpers/dns.js';
import { connectSink, type TapFrame } from '../helpers/framestream.js';
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
    const s = await spawnServer(`. {\n  dnstap listen unix://${path} full\n  whoami\n}\n`, ['-workers', '2']);
    cleanups.push(() => s.stop());
    await waitFor('the server answering', () => udpExchangeFrom(s.port, encodeQuery('up.example.org.', 'A')), {
      retry: () => true,
    });
    const sink = connectSink(cleanups, { path });
    await waitFor('the handshake', () => sink.started, { retry: () => true });
    const flows: { name: string; port: number }[] = [];
    for (let i = 0; i < FLOWS; i++) {
      const name = `q${i}.example.org`;
      const { localPort } = await udpExchangeFrom(s.port, encodeQuery(`${name}.`, 'A'));
      flows.push({ name, port: localPort });
    }
    // Every flow's CLIENT_QUERY (5) and CLIENT_RESPONSE (6), by its query name and the client's
    // port (the kernel may hand a port out again to a later socket, so the port alone is no key).
    const recorded = (f: TapFrame, type: number, flow: { name: string; port: number }): boolean => {
      const m = f.message;
      const wire = type === 5 ? m?.queryMessage : m?.responseMessage;
      return (
        m?.type === type &&
        m.queryPort === flow.port &&
        wire !== undefined &&
        decode(wire).questions[0]?.name === flow.name
      );
    };
    const unrecorded = () =>
      flows.filter(
        (flow) => !sink.frames.some((f) => recorded(f, 5, flow)) || !sink.frames.some((f) => recorded(f, 6, flow)),
      );
    await waitFor(
      () => `records of ${FLOWS} queries; have ${sink.frames.length} frames`,
      () => unrecorded().length === 0,
    );
    expect(unrecorded()).toEqual([]);
  });
});
