/**
 * Catalog zones (RFC 9432) end to end: `bin/clusterdns -workers 2` consuming a catalog zone that
 * the real CoreDNS 1.15.0 serves (`file` + `transfer`) together with the member zones. The members
 * inside MEMBER-ZONES are pulled once per pod and answered by every thread, one outside is not; the
 * catalog changing (the primary reloads the file and sends NOTIFY) removes and adds members in every
 * thread; a member's own NOTIFY brings its new data. Requires `npm run build` and .bin/coredns.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../../src/dns/message.js';
import { udpQuery } from '../helpers/dns.js';
import { requireCoreDNS, startLines, type LineProcess } from '../helpers/lines.js';
import { freePort } from '../helpers/net.js';
import { rrLines } from '../helpers/records.js';
import { waitFor } from '../helpers/wait.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function catalogText(serial: number, members: Record<string, string>): string {
  const lines = [
    '$ORIGIN catalog.example.',
    '$TTL 0',
    `@ IN SOA invalid. hostmaster.invalid. ( ${serial} 3600 600 86400 0 )`,
    '  IN NS invalid.',
    'version IN TXT "2"',
  ];
  for (const [id, zone] of Object.entries(members)) lines.push(`${id}.zones IN PTR ${zone}`);
  return `${lines.join('\n')}\n`;
}

function memberText(origin: string, serial: number, www: string): string {
  // Refresh far away: only NOTIFY brings a change within the test.
  return `$ORIGIN ${origin}\n$TTL 3600\n@ IN SOA ns1 hostmaster ( ${serial} 3600 600 86400 300 )\n  IN NS ns1\nns1 A 192.0.2.53\nwww A ${www}\n`;
}

function start(which: 'coredns' | 'clusterdns', dir: string, corefile: string, args: string[] = []): LineProcess {
  const path = join(dir, `Corefile.${which}`);
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

/** Every thread answers `name` with `lines` (none: no answer records). */
async function everyThread(port: number, name: string, lines: string[]): Promise<void> {
  await waitFor(`every thread to answer ${name} with ${JSON.stringify(lines)}`, async () => {
    const ms = await askMany(port, name, 12);
    return ms.every((m) => JSON.stringify(rrLines(m.answers)) === JSON.stringify(lines));
  });
}

const S = '[INFO] plugin/secondary: ';

describe('secondary catalog, end to end', () => {
  it('follows a catalog served by CoreDNS 1.15.0: members added and removed in every thread', async () => {
    requireCoreDNS();
    const dir = mkdtempSync(join(tmpdir(), 'secondary-catalog-e2e-'));
    const zones: Record<string, string> = {
      'catalog.example.': catalogText(1, { m1: 'a.test.', m2: 'b.test.', m3: 'x.other.' }),
      'a.test.': memberText('a.test.', 1, '192.0.2.1'),
      'b.test.': memberText('b.test.', 1, '192.0.2.2'),
      'c.test.': memberText('c.test.', 1, '192.0.2.3'),
      'x.other.': memberText('x.other.', 1, '192.0.2.9'),
    };
    const primaryPort = await freePort();
    const secondaryPort = await freePort();
    const db = (origin: string): string => join(dir, `db.${origin}`);
    let primaryCorefile = '';
    for (const [origin, text] of Object.entries(zones)) {
      writeFileSync(db(origin), text);
      primaryCorefile += `${origin}:${primaryPort} {\n  file ${db(origin)} {\n    reload 1s\n  }\n  transfer {\n    to *\n    to 127.0.0.1:${secondaryPort}\n  }\n}\n`;
    }
    const primary = start('coredns', dir, primaryCorefile);
    await primary.waitFor(/^CoreDNS-/);
    const sec = start(
      'clusterdns',
      dir,
      `.:${secondaryPort} {\n  secondary catalog.example {\n    transfer from 127.0.0.1:${primaryPort}\n    catalog test\n  }\n}\n`,
      ['-workers', '2'],
    );
    const parsed = await sec.waitFor(/Parsed catalog zone catalog\.example\. with 3 member zones$/);
    expect(sec.lines.slice(0, parsed + 1).filter((l) => l.includes('plugin/secondary'))).toEqual([
      `${S}Added catalog member zone a.test. from catalog catalog.example.`,
      `${S}Added catalog member zone b.test. from catalog catalog.example.`,
      '[WARNING] plugin/secondary: Skipped 1 member zones from catalog catalog.example.: outside configured member zones',
      `${S}Parsed catalog zone catalog.example. with 3 member zones`,
    ]);
    await everyThread(secondaryPort, 'www.a.test', ['www.a.test. 3600 IN A 192.0.2.1']);
    await everyThread(secondaryPort, 'www.b.test', ['www.b.test. 3600 IN A 192.0.2.2']);
    expect(rrLines((await udpQuery(secondaryPort, 'www.x.other', 'A')).answers)).toEqual([]);
    // Each zone pulled once per pod, not once per thread.
    for (const z of ['catalog.example.', 'a.test.', 'b.test.'])
      expect(sec.lines.filter((l) => l.includes(`Transferred: ${z} from`))).toHaveLength(1);

    // The catalog changes: b.test leaves, c.test comes; the primary reloads it and notifies.
    writeFileSync(db('catalog.example.'), catalogText(2, { m1: 'a.test.', m3: 'x.other.', m4: 'c.test.' }));
    const second = await sec.waitFor(/Parsed catalog zone catalog\.example\. with 3 member zones$/, parsed + 1);
    expect(sec.lines.slice(parsed + 1, second + 1).filter((l) => l.includes('plugin/secondary'))).toEqual([
      `${S}Added catalog member zone c.test. from catalog catalog.example.`,
      `${S}Removed catalog member zone b.test. from catalog catalog.example.`,
      '[WARNING] plugin/secondary: Skipped 1 member zones from catalog catalog.example.: outside configured member zones',
      `${S}Parsed catalog zone catalog.example. with 3 member zones`,
    ]);
    await everyThread(secondaryPort, 'www.c.test', ['www.c.test. 3600 IN A 192.0.2.3']);
    await everyThread(secondaryPort, 'www.b.test', []);

    // A member changes: its NOTIFY (from the catalog's primary) brings the new data to every thread.
    writeFileSync(db('a.test.'), memberText('a.test.', 2, '192.0.2.11'));
    await sec.waitFor(/Notify from 127\.0\.0\.1 for a\.test\.: checking transfer$/, second);
    await everyThread(secondaryPort, 'www.a.test', ['www.a.test. 3600 IN A 192.0.2.11']);
    expect(sec.lines.filter((l) => l.includes('Transferred: a.test. from'))).toHaveLength(2);
  }, 120_000);
});
