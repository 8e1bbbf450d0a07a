/**
 * Catalog zones (RFC 9432) in the secondary plugin: CoreDNS 1.15.0's parse of a catalog and its
 * errors, the `catalog [MEMBER-ZONES...]` option, and a consumer against a primary that is
 * clusterdns in-process (file + transfer): members added, reset, removed and restricted after each
 * transfer of the catalog (brought by NOTIFY), and a member moving between catalogs by `coo`.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { Opcode } from '../../src/dns/constants.js';
import type { ZoneRecord } from '../../src/dns/zonefile/record.js';
import { parseZoneText } from '../../src/dns/zonefile/parser.js';
import { encodeQuery, udpExchange, udpQuery } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { dispenserFor } from '../../test/helpers/setup.js';
import { waitFor } from '../../test/helpers/wait.js';
import { parseCatalog } from './catalog.js';
import { parseSecondary } from './setup.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A catalog zone's text: `members` maps node label to member zone; `extra` adds lines. */
function catalogText(origin: string, serial: number, members: Record<string, string>, extra = ''): string {
  const lines = [
    `$ORIGIN ${origin}`,
    '$TTL 0',
    `@ IN SOA invalid. hostmaster.invalid. ( ${serial} 3600 600 86400 0 )`,
    '  IN NS invalid.',
    'version IN TXT "2"',
  ];
  for (const [id, zone] of Object.entries(members)) lines.push(`${id}.zones IN PTR ${zone}`);
  return `${lines.join('\n')}\n${extra}`;
}

function memberText(origin: string, www: string): string {
  return `$ORIGIN ${origin}\n$TTL 3600\n@ IN SOA ns1 hostmaster ( 1 3600 600 86400 300 )\n  IN NS ns1\nns1 A 192.0.2.53\nwww A ${www}\n`;
}

function records(text: string, origin: string): ZoneRecord[] {
  return parseZoneText(text, { origin, file: 'stdin' });
}

function catalogError(text: string): string {
  try {
    parseCatalog('catalog.example.', records(text, 'catalog.example.'));
  } catch (e) {
    return (e as Error).message;
  }
  return 'no error';
}

describe('catalog parse (RFC 9432, as CoreDNS 1.15.0)', () => {
  it('reads members sorted by node label, with coo and groups; other records are ignored', () => {
    const text = catalogText(
      'catalog.example.',
      1,
      { m2: 'B.test.', m1: 'a.test.' },
      'coo.m1.zones IN PTR other.example.\ngroup.m2.zones IN TXT "z"\ngroup.m2.zones IN TXT "a"\nfoo.bar.zones IN TXT "x"\nx IN A 192.0.2.1\n',
    );
    expect(parseCatalog('Catalog.Example', records(text, 'catalog.example.'))).toEqual({
      origin: 'catalog.example.',
      members: [
        { id: 'm1', zone: 'a.test.', groups: [], changeOfOwnership: 'other.example.' },
        { id: 'm2', zone: 'b.test.', groups: ['a', 'z'], changeOfOwnership: '' },
      ],
    });
  });

  it("gives CoreDNS's errors for a catalog it does not take", () => {
    const base = '$ORIGIN catalog.example.\n@ 0 IN SOA invalid. hostmaster.invalid. 1 3600 600 86400 0\n';
    expect(catalogError(`${base}version TXT "2"\n`)).toBe('catalog zone catalog.example. has no NS record');
    expect(catalogError(`${base}@ NS invalid.\n`)).toBe(
      'catalog zone catalog.example. must have exactly one version TXT record',
    );
    expect(catalogError(`${base}@ NS invalid.\nversion TXT "1"\n`)).toBe(
      'catalog zone catalog.example. has unsupported version "1"',
    );
    expect(catalogError(catalogText('catalog.example.', 1, { m1: 'a.test.' }, 'm1.zones PTR b.test.\n'))).toBe(
      'catalog member m1.zones.catalog.example. must have exactly one PTR record',
    );
    expect(catalogError(catalogText('catalog.example.', 1, { m1: 'a.test.', m2: 'a.test.' }))).toBe(
      'catalog member zone a.test. is listed by both m1 and m2',
    );
    expect(
      catalogError(catalogText('catalog.example.', 1, { m1: 'a.test.' }, 'coo.m1.zones PTR x.\ncoo.m1.zones PTR y.\n')),
    ).toBe('catalog member m1 has more than one coo PTR record');
    expect(catalogError('$ORIGIN catalog.example.\n@ 0 IN NS invalid.\n')).toBe(
      'catalog zone catalog.example. has no SOA record',
    );
  });
});

function setupError(text: string): string {
  try {
    parseSecondary(dispenserFor(text, 'secondary'), ['catalog.example.']);
  } catch (e) {
    if (e instanceof ConfigError) return e.describe();
    return (e as Error).message;
  }
  return 'no error';
}

describe('catalog option', () => {
  it('reads MEMBER-ZONES as CoreDNS does (normalised, merged; a bare line accepts all)', () => {
    const parse = (body: string): Map<string, string[]> =>
      parseSecondary(dispenserFor(`secondary catalog.example {\n transfer from 10.0.0.1\n${body}}`, 'secondary'), ['.'])
        .catalogs;
    expect(parse('')).toEqual(new Map());
    expect(parse(' catalog\n')).toEqual(new Map([['catalog.example.', []]]));
    expect(parse(' catalog EXAMPLE.ORG internal.example\n')).toEqual(
      new Map([['catalog.example.', ['example.org.', 'internal.example.']]]),
    );
    expect(parse(' catalog example.org EXAMPLE.ORG\n catalog internal.example\n')).toEqual(
      new Map([['catalog.example.', ['example.org.', 'internal.example.']]]),
    );
    expect(parse(' catalog example.org\n catalog\n')).toEqual(new Map([['catalog.example.', []]]));
    expect(setupError('secondary {\n transfer from 127.0.0.1\n catalog :\n}')).toBe(
      'plugin/secondary: Corefile:3 - Error during parsing: invalid catalog member zone ":"',
    );
  });
});

// ---- A consumer against a primary (clusterdns in-process) ---------------------------------------

const dir = mkdtempSync(join(tmpdir(), 'secondary-catalog-'));

/** A primary serving each zone of `zones` (origin → text) from a file, with transfer to anyone. */
async function primary(
  zones: Record<string, string>,
): Promise<{ srv: TestServer; write: (o: string, t: string) => void }> {
  const path = (o: string): string => join(dir, `db.${o}${Math.random().toString(36).slice(2)}`);
  const files = new Map<string, string>();
  let corefile = '';
  for (const [origin, text] of Object.entries(zones)) {
    const p = path(origin);
    files.set(origin, p);
    writeFileSync(p, text);
    corefile += `${origin} {\n  file ${p} {\n    reload 0\n  }\n  transfer {\n    to *\n  }\n}\n`;
  }
  const srv = await startServer(corefile);
  cleanups.push(() => srv.stop());
  return { srv, write: (o, t) => writeFileSync(files.get(o)!, t) };
}

async function secondaryServer(primaryPort: number, catalogs: string): Promise<TestServer> {
  const srv = await startServer(`. {\n${catalogs.replaceAll('PRIMARY', `127.0.0.1:${primaryPort}`)}}\n`);
  cleanups.push(() => srv.stop());
  return srv;
}

/** NOTIFY for `zone` to the secondary, from 127.0.0.1 (its primary's address). */
async function notify(port: number, zone: string): Promise<void> {
  const raw = encodeQuery(zone, 'SOA');
  raw[2] = (raw[2]! & 0x87) | (Opcode.NOTIFY << 3) | 0x04;
  await udpExchange(port, raw);
}

async function www(port: number, zone: string): Promise<string[]> {
  return rrLines((await udpQuery(port, `www.${zone}`, 'A')).answers);
}

const S = '[INFO] plugin/secondary: ';

describe('catalog consumer', () => {
  it('adds, resets and removes members after each catalog transfer, within MEMBER-ZONES', async () => {
    const p = await primary({
      'catalog.example.': catalogText('catalog.example.', 1, { m1: 'a.test.', m2: 'b.test.', m3: 'x.other.' }),
      'a.test.': memberText('a.test.', '192.0.2.1'),
      'b.test.': memberText('b.test.', '192.0.2.2'),
      'c.test.': memberText('c.test.', '192.0.2.3'),
      'x.other.': memberText('x.other.', '192.0.2.9'),
    });
    const sec = await secondaryServer(
      p.srv.port,
      '  secondary catalog.example {\n    transfer from PRIMARY\n    catalog test\n  }\n',
    );
    const parsed = (n: number): string[] => sec.logs.filter((l) => l.includes('Parsed catalog zone')).slice(n - 1, n);
    await waitFor('the catalog', () => parsed(1).length === 1);
    const first = sec.logs.filter((l) => l.includes('plugin/secondary'));
    expect(first).toEqual([
      `${S}Added catalog member zone a.test. from catalog catalog.example.`,
      `${S}Added catalog member zone b.test. from catalog catalog.example.`,
      '[WARNING] plugin/secondary: Skipped 1 member zones from catalog catalog.example.: outside configured member zones',
      `${S}Parsed catalog zone catalog.example. with 3 member zones`,
    ]);
    await waitFor('the members', async () => (await www(sec.port, 'b.test.')).length === 1);
    expect(await www(sec.port, 'a.test.')).toEqual(['www.a.test. 3600 IN A 192.0.2.1']);
    expect(await www(sec.port, 'x.other.')).toEqual([]);
    // The catalog zone itself is served too, as CoreDNS serves it.
    expect(rrLines((await udpQuery(sec.port, 'version.catalog.example', 'TXT')).answers)).toEqual([
      'version.catalog.example. 0 IN TXT "2"',
    ]);

    // b.test leaves, c.test comes, a.test gets another node label.
    p.write('catalog.example.', catalogText('catalog.example.', 2, { m5: 'a.test.', m3: 'x.other.', m4: 'c.test.' }));
    expect(await p.srv.reload()).toBe(true);
    const mark = sec.logs.length;
    await notify(sec.port, 'catalog.example.');
    await waitFor('the new catalog', () => parsed(2).length === 1);
    expect(sec.logs.slice(mark).filter((l) => l.includes('catalog member') || l.includes('Parsed'))).toEqual([
      `${S}Added catalog member zone c.test. from catalog catalog.example.`,
      `${S}Reset catalog member zone a.test. from catalog.example. after member ID changed from m1 to m5`,
      `${S}Removed catalog member zone b.test. from catalog catalog.example.`,
      `${S}Parsed catalog zone catalog.example. with 3 member zones`,
    ]);
    await waitFor('c.test', async () => (await www(sec.port, 'c.test.')).length === 1);
    await waitFor('a.test again', async () => (await www(sec.port, 'a.test.')).length === 1);
    expect(await www(sec.port, 'b.test.')).toEqual([]);
    // A member answers NOTIFY from the catalog's primaries, as a configured zone.
    const m = sec.logs.length;
    await notify(sec.port, 'c.test.');
    await waitFor('the member NOTIFY', () =>
      sec.logs.slice(m).some((l) => l.includes('Notify from 127.0.0.1 for c.test.: no SOA serial increase seen')),
    );
  });

  it('keeps a catalog that fails to parse from changing anything', async () => {
    const p = await primary({
      'catalog.example.': catalogText('catalog.example.', 1, { m1: 'a.test.' }),
      'a.test.': memberText('a.test.', '192.0.2.1'),
    });
    const sec = await secondaryServer(
      p.srv.port,
      '  secondary catalog.example {\n    transfer from PRIMARY\n    catalog\n  }\n',
    );
    await waitFor('a.test', async () => (await www(sec.port, 'a.test.')).length === 1);
    p.write('catalog.example.', catalogText('catalog.example.', 2, {}, 'version IN TXT "3"\n'));
    expect(await p.srv.reload()).toBe(true);
    const mark = sec.logs.length;
    await notify(sec.port, 'catalog.example.');
    await waitFor('the failed transfer', () =>
      sec.logs.slice(mark).some((l) => l.includes('Notify from 127.0.0.1 for catalog.example.: transfer failed')),
    );
    expect(sec.logs.slice(mark).filter((l) => l.includes('Notify from'))).toEqual([
      '[INFO] plugin/file: Notify from 127.0.0.1 for catalog.example.: checking transfer',
      '[WARNING] plugin/file: Notify from 127.0.0.1 for catalog.example.: transfer failed: catalog zone catalog.example. must have exactly one version TXT record',
    ]);
    expect(await www(sec.port, 'a.test.')).toEqual(['www.a.test. 3600 IN A 192.0.2.1']);
    expect(rrLines((await udpQuery(sec.port, 'catalog.example', 'SOA')).answers)[0]).toContain(' 1 3600 600 86400 0');
  });

  it('moves a member to the catalog its coo names, keeping its data under the same node label', async () => {
    const p = await primary({
      'cat1.example.': catalogText('cat1.example.', 1, { m1: 'a.test.' }),
      'cat2.example.': catalogText('cat2.example.', 1, {}),
      'a.test.': memberText('a.test.', '192.0.2.1'),
    });
    const sec = await secondaryServer(
      p.srv.port,
      '  secondary cat1.example cat2.example {\n    transfer from PRIMARY\n    catalog\n  }\n',
    );
    await waitFor('a.test', async () => (await www(sec.port, 'a.test.')).length === 1);
    await waitFor('both catalogs', () => sec.logs.filter((l) => l.includes('Parsed catalog zone')).length === 2);
    const step = async (
      zone: string,
      serial: number,
      members: Record<string, string>,
      extra = '',
    ): Promise<string[]> => {
      p.write(zone, catalogText(zone, serial, members, extra));
      expect(await p.srv.reload()).toBe(true);
      const mark = sec.logs.length;
      await notify(sec.port, zone);
      await waitFor(`${zone} ${serial}`, () =>
        sec.logs.slice(mark).some((l) => l.includes(`Parsed catalog zone ${zone}`)),
      );
      return sec.logs.slice(mark).filter((l) => l.includes('plugin/secondary'));
    };
    // Without coo the other catalog's member is a clash.
    expect(await step('cat2.example.', 2, { m1: 'a.test.' })).toEqual([
      '[WARNING] plugin/secondary: Skipping catalog member zone a.test. from cat2.example.: zone already exists',
      `${S}Parsed catalog zone cat2.example. with 1 member zones`,
    ]);
    expect(await step('cat1.example.', 2, { m1: 'a.test.' }, 'coo.m1.zones IN PTR cat2.example.\n')).toEqual([
      `${S}Parsed catalog zone cat1.example. with 1 member zones`,
    ]);
    expect(await step('cat2.example.', 3, { m1: 'a.test.' })).toEqual([
      `${S}Migrated catalog member zone a.test. from catalog cat1.example. to cat2.example., preserving state for member ID m1`,
      `${S}Parsed catalog zone cat2.example. with 1 member zones`,
    ]);
    expect(await www(sec.port, 'a.test.')).toEqual(['www.a.test. 3600 IN A 192.0.2.1']);
    // cat1 dropping it now removes nothing: cat2 owns it.
    expect(await step('cat1.example.', 3, {})).toEqual([`${S}Parsed catalog zone cat1.example. with 0 member zones`]);
    expect(await www(sec.port, 'a.test.')).toEqual(['www.a.test. 3600 IN A 192.0.2.1']);
  });

  it('transfers a catalog and its members again after a reload (as CoreDNS), serving them after it', async () => {
    const p = await primary({
      'catalog.example.': catalogText('catalog.example.', 1, { m1: 'a.test.' }),
      'a.test.': memberText('a.test.', '192.0.2.1'),
    });
    const sec = await secondaryServer(
      p.srv.port,
      '  secondary catalog.example {\n    transfer from PRIMARY\n    catalog\n  }\n',
    );
    await waitFor('a.test', async () => (await www(sec.port, 'a.test.')).length === 1);
    const count = (text: string): number => sec.logs.filter((l) => l.includes(text)).length;
    expect(await sec.reload(`${readFileSync(sec.corefilePath, 'utf8')}# changed\n`)).toBe(true);
    await waitFor('the catalog and its member pulled again', () => count('Transferred: a.test.') === 2);
    expect(count('Parsed catalog zone catalog.example. with 1 member zones')).toBe(2);
    expect(await www(sec.port, 'a.test.')).toEqual(['www.a.test. 3600 IN A 192.0.2.1']);
  });
});
