/**
 * The secondary plugin end to end: `bin/clusterdns -workers 2` pulling a zone from a primary that
 * is the real CoreDNS 1.15.0 (`file` + `transfer`), then one that is clusterdns itself — SERVFAIL
 * before the primary is up, the zone pulled once per pod and answered by every thread, NOTIFY from
 * the primary after the zone file's serial changed bringing the new data to every thread, transfer
 * out of the pulled zone; a stalled primary never holding queries; `-validate`'s error. Requires
 * `npm run build` and .bin/coredns.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tcpExchange } from '../../src/dns/client.js';
import { decode, type Message } from '../../src/dns/message.js';
import { encodeQuery, rcode, udpQuery } from '../helpers/dns.js';
import { requireCoreDNS, startLines, type LineProcess } from '../helpers/lines.js';
import { freePort } from '../helpers/net.js';
import { rrLines } from '../helpers/records.js';
import { runCommand } from '../helpers/spawn.js';
import { waitFor } from '../helpers/wait.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function zoneText(serial: number, www: string): string {
  // Refresh far away: only NOTIFY brings a change within the test.
  return `$ORIGIN example.org.
$TTL 3600
@ IN SOA ns1 hostmaster ( ${serial} 3600 600 86400 300 )
  IN NS ns1
ns1 A 192.0.2.53
www A ${www}
alias CNAME www
`;
}

function start(which: 'coredns' | 'clusterdns', dir: string, corefile: string, args: string[] = []): LineProcess {
  const path = join(dir, `Corefile.${which}.${Math.random().toString(36).slice(2)}`);
  writeFileSync(path, corefile);
  const p = startLines(which, ['-conf', path, ...args], dir);
  cleanups.push(() => p.stop());
  return p;
}

/** Ask `n` times, each from a fresh UDP socket (a new flow: the kernel spreads them over the threads). */
async function askMany(port: number, name: string, n: number): Promise<Message[]> {
  const out: Message[] = [];
  for (let i = 0; i < n; i++) out.push(await udpQuery(port, name, 'A'));
  return out;
}

async function axfr(port: number): Promise<string[]> {
  const replies = await tcpExchange([encodeQuery('example.org', 'AXFR')], { port }, (r) => {
    const soas = r.flatMap((m) => decode(m).answers.filter((a) => a.type === 'SOA'));
    return soas.length >= 2 || (r.length > 0 && rcode(decode(r[0]!)) !== 0);
  });
  return replies.flatMap((m) => rrLines(decode(m).answers)).sort();
}

/** Run the scenario against `primaryKind` as the primary. */
async function scenario(primaryKind: 'coredns' | 'clusterdns'): Promise<void> {
  if (primaryKind === 'coredns') requireCoreDNS();
  const dir = mkdtempSync(join(tmpdir(), 'secondary-e2e-'));
  const db = join(dir, 'db.example.org');
  writeFileSync(db, zoneText(1, '192.0.2.80'));
  const primaryPort = await freePort();
  const secondaryPort = await freePort();
  const sec = start(
    'clusterdns',
    dir,
    `example.org:${secondaryPort} {
  secondary {
    transfer from 127.0.0.1:${primaryPort}
  }
  transfer {
    to *
  }
}
`,
    ['-workers', '2'],
  );
  await sec.waitFor(/^clusterdns-/);
  // No primary yet: SERVFAIL from every thread, and the retries logged once (main thread).
  for (const m of await askMany(secondaryPort, 'www.example.org', 6)) expect(rcode(m)).toBe(2);
  await sec.waitFor(/All 'example\.org\.' masters failed to transfer, retrying in/);

  const primary = start(
    primaryKind,
    dir,
    `example.org:${primaryPort} {
  file ${db} {
    reload 1s
  }
  transfer {
    to *
    to 127.0.0.1:${secondaryPort}
  }
}
`,
  );
  await primary.waitFor(primaryKind === 'coredns' ? /^CoreDNS-/ : /^clusterdns-/);
  const first = await sec.waitFor(/Transferred: example\.org\. from 127\.0\.0\.1:\d+$/);
  expect(sec.lines[first]).toBe(`[INFO] plugin/file: Transferred: example.org. from 127.0.0.1:${primaryPort}`);
  await waitFor('every thread to answer from the pulled zone', async () => {
    const ms = await askMany(secondaryPort, 'alias.example.org', 12);
    return ms.every((m) => rcode(m) === 0 && m.answers.length === 2);
  });
  const answer = await udpQuery(secondaryPort, 'alias.example.org', 'A');
  expect(rrLines(answer.answers)).toEqual([
    'alias.example.org. 3600 IN CNAME www.example.org.',
    'www.example.org. 3600 IN A 192.0.2.80',
  ]);
  // Pulled once per pod, not once per thread.
  expect(sec.lines.filter((l) => l.includes('Transferred:'))).toHaveLength(1);
  // Transfer out of the pulled zone: the primary's records.
  expect(await axfr(secondaryPort)).toEqual(await axfr(primaryPort));

  // The zone file changes: the primary reloads it and sends NOTIFY; the secondary pulls again.
  writeFileSync(db, zoneText(2, '192.0.2.81'));
  const notified = await sec.waitFor(/Notify from 127\.0\.0\.1 for example\.org\.: checking transfer$/, first);
  await sec.waitFor(/Transferred: example\.org\./, notified);
  await waitFor('every thread to answer the new address', async () => {
    const ms = await askMany(secondaryPort, 'www.example.org', 12);
    return ms.every((m) => rrLines(m.answers)[0] === 'www.example.org. 3600 IN A 192.0.2.81');
  });
  expect(sec.lines.filter((l) => l.includes('Transferred:'))).toHaveLength(2);
}

/** A TCP server that accepts connections and never answers. */
async function stalledPrimary(): Promise<number> {
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        srv.close(() => r());
      }),
  );
  return (srv.address() as net.AddressInfo).port;
}

describe('secondary, end to end', () => {
  it('pulls from CoreDNS 1.15.0 once per pod, serves every thread, follows its NOTIFY', async () => {
    await scenario('coredns');
  }, 90_000);

  it('pulls from clusterdns itself the same way', async () => {
    await scenario('clusterdns');
  }, 90_000);

  it('a stalled primary never holds queries: they are answered while the transfer waits', async () => {
    const stalled = await stalledPrimary();
    const dir = mkdtempSync(join(tmpdir(), 'secondary-e2e-'));
    const port = await freePort();
    const sec = start(
      'clusterdns',
      dir,
      `example.org:${port} {
  secondary {
    transfer from 127.0.0.1:${stalled}
  }
}
other.test:${port} {
  whoami
}
`,
      ['-workers', '2'],
    );
    await sec.waitFor(/^clusterdns-/);
    // While the first transfer waits on the stalled primary, both zones keep answering.
    for (let i = 0; i < 5; i++) {
      expect(rcode(await udpQuery(port, 'www.example.org', 'A'))).toBe(2);
      expect(rcode(await udpQuery(port, 'x.other.test', 'A'))).toBe(0);
    }
    const line = sec.lines[await sec.waitFor(/masters failed to transfer/)]!;
    expect(line).toMatch(
      /^\[WARNING\] plugin\/secondary: All 'example\.org\.' masters failed to transfer, retrying in 250ms: read tcp 127\.0\.0\.1:\d+->127\.0\.0\.1:\d+: i\/o timeout$/,
    );
  }, 60_000);

  it('-validate reports a secondary without primaries with its Corefile line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'secondary-e2e-'));
    const conf = join(dir, 'Corefile');
    writeFileSync(conf, 'example.org {\n  secondary\n}\nexample.net {\n  secondary {\n    transfer from foo\n  }\n}\n');
    const r = runCommand(['-validate', '-conf', conf]);
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([
      `plugin/secondary: ${conf}:2 - Error during parsing: secondary zones require a transfer from property`,
      `plugin/secondary: ${conf}:6 - Error during parsing: must specify an IP address: \`foo'`,
      `Configuration has 2 errors: ${conf}`,
    ]);
  });
});
