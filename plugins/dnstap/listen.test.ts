/**
 * `dnstap listen SOCKET` (src/dnstap/listener.ts): the server listens, sinks connect and get the
 * writer's side of the Frame Streams handshake, then every record. The sink here is a test client
 * playing the reader's side, `connectSink` (golang-dnstap's command only listens, it cannot connect
 * to a listener).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCorefile } from '../../test/helpers/corefile.js';
import { encodeQuery } from '../../test/helpers/dns.js';
import { connectSink } from '../../test/helpers/framestream.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { freePort } from '../../test/helpers/net.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { waitFor } from '../../test/helpers/wait.js';
import { MAX_SINKS } from '../../src/dnstap/listener.js';
import { registry } from '../../src/metrics/registry.js';
import { dnstap } from './index.js';
import { parseDnstap } from './setup.js';

const dir = mkdtempSync(join(tmpdir(), 'dnstap-listen-'));
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('dnstap listen: setup', () => {
  it('reads listen SOCKET, full, the multiples and the tls line', () => {
    const [a, b] = parseDnstap(
      dispenserFor(
        'dnstap listen /tmp/l.sock\ndnstap listen tls://127.0.0.1:6000 full 2 3 {\n tls c.pem k.pem ca.pem\n skipverify\n identity id\n}',
        'dnstap',
      ),
    );
    expect(a).toMatchObject({ listen: true, network: 'unix', address: '/tmp/l.sock', full: false, tls: null });
    expect(b).toMatchObject({
      listen: true,
      network: 'tls',
      address: '127.0.0.1:6000',
      full: true,
      writeBufferMiB: 2,
      queueMultiple: 3,
      skipVerify: true,
      identity: 'id',
      tls: { cert: 'c.pem', key: 'k.pem', ca: 'ca.pem' },
    });
  });

  it("words a tls line without its key as CoreDNS 1.15.0's setup", () => {
    const text = 'dnstap listen tls://127.0.0.1:6000 {\n tls c.pem\n}';
    expect(configError(() => dnstap.setup(dispenserFor(text, 'dnstap'), setupContext()), text).describe()).toBe(
      'plugin/dnstap: Corefile:2 - Error during parsing: tls requires cert and key file paths',
    );
  });
});

describe('dnstap listen: sinks', () => {
  it('sends the records of each query to a sink on a unix socket, with full messages', async () => {
    const path = join(dir, 'l1.sock');
    const run = await runCorefile(`.:53 {\n  dnstap listen unix://${path} full {\n    identity lt\n  }\n  whoami\n}\n`);
    cleanups.push(() => run.stop());
    const s = connectSink(cleanups, { path });
    await waitFor('the handshake', () => s.started);
    const query = encodeQuery('example.org.', 'A', { id: 77 });
    const reply = await run.exchange(query, { remoteAddress: '127.0.0.9' });
    const [q, r] = await waitFor('two records', () => s.frames.length >= 2 && s.frames);
    expect(q).toMatchObject({ identity: 'lt', type: 1 });
    expect(q!.message).toMatchObject({ type: 5, queryAddress: Buffer.from([127, 0, 0, 9]), queryMessage: query });
    expect(r!.message).toMatchObject({ type: 6, responseMessage: reply });
  });

  it('sends to every sink on TCP; one that leaves does not stop the others; STOP at shutdown', async () => {
    const port = await freePort();
    const run = await runCorefile(`.:53 {\n  dnstap listen tcp://127.0.0.1:${port}\n  whoami\n}\n`);
    let stopped = false;
    cleanups.push(() => (stopped ? undefined : run.stop()));
    const a = connectSink(cleanups, { port });
    const b = connectSink(cleanups, { port });
    await waitFor('both handshakes', () => a.started && b.started);
    await run.exchange(encodeQuery('one.example.org.', 'A'));
    await waitFor('the records at both sinks', () => a.frames.length >= 2 && b.frames.length >= 2);
    expect(a.frames[0]!.message?.queryMessage).toBeUndefined();
    a.socket.destroy();
    await waitFor('the first sink gone', () => a.closed);
    await run.exchange(encodeQuery('two.example.org.', 'A'));
    await waitFor('the second query at the other sink', () => b.frames.length >= 4);
    await run.stop();
    stopped = true;
    await waitFor('STOP at the remaining sink', () => b.stopped);
  });

  it('logs a listener that cannot bind, and answers', async () => {
    const logs = captureLogs(cleanups);
    const path = join(dir, 'missing-dir', 'l.sock');
    const run = await runCorefile(`.:53 {\n  dnstap listen ${path}\n  whoami\n}\n`);
    cleanups.push(() => run.stop());
    await logs.waitFor(
      `[ERROR] plugin/dnstap: Failed to start dnstap listener: listen unix ${path}: bind: no such file or directory`,
    );
    expect(await run.exchange(encodeQuery('example.org.', 'A'))).not.toBeNull();
  });

  it('serves at most MAX_SINKS sinks: one more is closed, logged and counted; a freed place is taken again', async () => {
    const logs = captureLogs(cleanups);
    const port = await freePort();
    const run = await runCorefile(`.:53 {\n  dnstap listen tcp://127.0.0.1:${port}\n  whoami\n}\n`);
    cleanups.push(() => run.stop());
    const value = async (name: string): Promise<number> => {
      const m = await registry.getSingleMetric(name)?.get();
      return m?.values.find((v) => v.labels.endpoint === `tcp://127.0.0.1:${port}`)?.value ?? 0;
    };
    const refusedBefore = await value('clusterdns_dnstap_listen_refused_total');
    const sinks = Array.from({ length: MAX_SINKS }, () => connectSink(cleanups, { port }));
    await waitFor('every handshake', () => sinks.every((s) => s.started));
    const extra = connectSink(cleanups, { port });
    await waitFor('the sink beyond the limit closed', () => extra.closed);
    expect(extra.started).toBe(false);
    await logs.waitFor(`${MAX_SINKS} sinks connected to tcp://127.0.0.1:${port} already`);
    expect(await value('clusterdns_dnstap_listen_refused_total')).toBe(refusedBefore + 1);
    expect(await value('clusterdns_dnstap_listen_sinks')).toBe(MAX_SINKS);
    sinks[0]!.socket.destroy();
    await waitFor('a place freed', async () => (await value('clusterdns_dnstap_listen_sinks')) === MAX_SINKS - 1);
    const again = connectSink(cleanups, { port });
    await waitFor('the new sink started', () => again.started);
    await run.exchange(encodeQuery('example.org.', 'A'));
    await waitFor('its records', () => again.frames.length >= 2);
  });
});
