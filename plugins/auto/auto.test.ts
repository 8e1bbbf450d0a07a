import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { Rcode } from '../../src/dns/constants.js';
import type { Message } from '../../src/dns/message.js';
import type { Logger } from '../../src/log.js';
import type { Handler } from '../../src/plugin.js';
import { TRANSFER, type TransferHub, type TransferSource, transferAnswers } from '../../src/transfer.js';
import { reloadZone } from '../../src/zone/reload.js';
import { makeQuery } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { dispenserFor, setupContext, TestInstance, type TestContext } from '../../test/helpers/setup.js';
import { FakeNext } from '../../test/helpers/upstream.js';
import { waitFor } from '../../test/helpers/wait.js';
import { auto } from './index.js';
import { parseAuto } from './setup.js';
import { AutoZones, expandTemplate, originOf, walk } from './walk.js';

const lines: string[] = [];
const log: Logger = {
  info: (m: string) => lines.push(`[INFO] ${m}`),
  warning: (m: string) => lines.push(`[WARNING] ${m}`),
  error: (m: string) => lines.push(`[ERROR] ${m}`),
  debug: () => undefined,
} as unknown as Logger;

afterEach(() => {
  lines.length = 0;
});

const zone = (origin: string, serial: number, www = '192.0.2.80'): string => `$ORIGIN ${origin}
$TTL 3600
@ IN SOA ns1 hostmaster ( ${serial} 7200 3600 1209600 300 )
  IN NS ns1
ns1 A 192.0.2.53
www A ${www}
mail MX 10 mx
mx A 192.0.2.25
alias CNAME www
*.wild TXT "wild"
sub NS ns.sub
ns.sub A 192.0.2.99
`;

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'auto-plugin-'));
}

function setupError(text: string, zones = ['example.org.']): string {
  try {
    parseAuto(dispenserFor(text, 'auto'), zones, log);
  } catch (e) {
    if (e instanceof ConfigError) return e.describe();
    return (e as Error).message;
  }
  return 'no error';
}

describe('auto setup', () => {
  it('has CoreDNS defaults: db\\.(.*) → {1}, reload 1m, the block zones', () => {
    const cfg = parseAuto(dispenserFor('auto {\n directory /nonexistent-auto\n}', 'auto'), ['org.'], log);
    expect(cfg.origins).toEqual(['org.']);
    expect(cfg.directory).toBe('/nonexistent-auto');
    expect(cfg.re.source).toBe('db\\.(.*)');
    expect(cfg.template).toBe('${1}');
    expect(cfg.reloadMs).toBe(60_000);
    expect(lines).toEqual(['[WARNING] Directory does not exist: /nonexistent-auto']);
  });

  it('reads zones, a regexp with its template, reload and upstream', () => {
    const dir = tempDir();
    const cfg = parseAuto(
      dispenserFor(
        `auto Example.ORG example.net {\n directory ${dir} ^(.*)\\.zone$ {1}.x\n reload 45s\n upstream\n}`,
        'auto',
      ),
      ['.'],
      log,
    );
    expect(cfg.origins).toEqual(['example.org.', 'example.net.']);
    expect(cfg.re.source).toBe('^(.*)\\.zone$');
    expect(cfg.template).toBe('${1}.x');
    expect(cfg.reloadMs).toBe(45_000);
    expect(lines).toEqual([]);
  });

  it('rejects bad options with the Corefile position, worded as CoreDNS', () => {
    expect(setupError('auto {\n directory\n}')).toBe(
      "plugin/auto: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'directory'",
    );
    expect(setupError('auto {\n directory /tmp db\\.(.*)\n}')).toBe(
      "plugin/auto: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'db\\.(.*)'",
    );
    expect(setupError('auto {\n directory /tmp db {1}\n}')).toBe(
      'plugin/auto: Corefile:2 - Error during parsing: Need at least one sub expression',
    );
    expect(setupError(`auto {\n directory /tmp (${'a'.repeat(10_000)}) {1}\n}`)).toBe(
      'plugin/auto: Corefile:2 - Error during parsing: regexp too large',
    );
    expect(setupError('auto {\n reload\n}')).toBe(
      'plugin/auto: Corefile:2 - Error during parsing: reload duration value is expected',
    );
    expect(setupError('auto {\n reload x\n}')).toBe(
      'plugin/auto: Corefile:2 - Error during parsing: plugin/file: time: invalid duration "x"',
    );
    expect(setupError('auto {\n reload -1s\n}')).toBe(
      'plugin/auto: Corefile:2 - Error during parsing: plugin/file: invalid duration',
    );
    // RemainingArgs: only the first value is read.
    expect(setupError('auto {\n reload 1s 2s\n}')).toBe('no error');
    // The group check comes before the template's ArgErr, as in CoreDNS.
    expect(setupError('auto {\n directory /tmp db\n}')).toBe(
      'plugin/auto: Corefile:2 - Error during parsing: Need at least one sub expression',
    );
    expect(setupError('auto {\n bogus\n}')).toBe(
      "plugin/auto: Corefile:2 - Error during parsing: unknown property 'bogus'",
    );
  });
});

describe('origin from a file name', () => {
  it('expands groups as Go regexp.Expand after rewriteToExpand', () => {
    expect(originOf(/db\.(.*)/, '${1}', 'db.example.org')).toBe('example.org.');
    expect(originOf(/db\.(.*)/, '${1}', 'example.org')).toBeNull();
    expect(originOf(/www\.db\.(.*)/, '${1}', 'www.db.example.org')).toBe('example.org.');
    expect(originOf(/^(.*)\.zone$/, '${1}', 'example.org.zone.bak')).toBeNull();
    expect(originOf(/^(\w+)-(\w+)$/, '${2}.${1}', 'org-example')).toBe('example.org.');
    const m = /(?<z>\w+)\.db/.exec('abc.db')!;
    expect(expandTemplate('${z}.$$.${9}.$', m)).toBe('abc.$..$');
  });
});

describe('directory scans', () => {
  it('picks up a zone file added, changed and removed on the next scan', () => {
    const dir = tempDir();
    const zones = new AutoZones();
    const p = { directory: dir, re: /db\.(.*)/, template: '${1}' };
    walk(p, zones, log);
    expect(zones.names).toEqual([]);

    writeFileSync(join(dir, 'db.example.org'), zone('example.org.', 1));
    writeFileSync(join(dir, 'notazone'), 'garbage');
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'sub', 'db.Example.NET'), zone('example.net.', 7));
    // filepath.Walk's lexical order: `db.example.org` before the folder `sub`.
    expect([...walk(p, zones, log)]).toEqual(['example.org.', 'example.net.']);
    expect(zones.names).toEqual(['example.org.', 'example.net.']);
    expect(lines).toEqual([
      `[INFO] Inserting zone \`example.org.' from: ${join(dir, 'db.example.org')}`,
      `[INFO] Inserting zone \`example.net.' from: ${join(dir, 'sub', 'db.Example.NET')}`,
    ]);
    lines.length = 0;

    // A change is picked up by the zone's reload when the serial moved, not by the scan.
    const org = zones.z.get('example.org.')!;
    writeFileSync(join(dir, 'db.example.org'), zone('example.org.', 2, '192.0.2.81'));
    expect([...walk(p, zones, log)]).toEqual([]);
    expect(org.data.serial).toBe(1);
    reloadZone(org, log);
    expect(zones.z.get('example.org.')!.data.serial).toBe(2);
    expect(lines).toEqual([
      `[INFO] Successfully reloaded zone "example.org." in "${join(dir, 'db.example.org')}" with 2 SOA serial`,
    ]);
    lines.length = 0;

    rmSync(join(dir, 'db.example.org'));
    walk(p, zones, log);
    expect(zones.names).toEqual(['example.net.']);
    expect(lines).toEqual(["[INFO] Deleting zone `example.org.'"]);
  });

  it('logs files that do not parse, serial 0, and two files for one origin, as CoreDNS', () => {
    const dir = tempDir();
    const zones = new AutoZones();
    writeFileSync(join(dir, 'db.bad.org'), 'not a zone');
    writeFileSync(join(dir, 'db.zero.org'), zone('zero.org.', 0));
    writeFileSync(join(dir, 'a.db.dup.org'), zone('dup.org.', 1));
    writeFileSync(join(dir, 'b.db.dup.org'), zone('dup.org.', 2));
    walk({ directory: dir, re: /db\.(.*)/, template: '${1}' }, zones, log);
    expect(zones.names).toEqual(['dup.org.']);
    expect(zones.z.get('dup.org.')!.data.serial).toBe(1);
    expect(lines[1]).toBe(
      `[WARNING] Multiple zone files match origin "dup.org.": using "${join(dir, 'a.db.dup.org')}" instead of "${join(dir, 'b.db.dup.org')}"`,
    );
    expect(lines[2]).toMatch(/^\[WARNING\] Parse zone `bad\.org\.': failed to parse file /);
    expect(lines[3]).toBe(
      `[WARNING] Parse zone \`zero.org.': no change in SOA serial for origin zero.org. in file ${join(dir, 'db.zero.org')}, with 0 SOA serial`,
    );
  });

  it('warns each scan while the directory is missing', () => {
    const zones = new AutoZones();
    walk({ directory: '/nonexistent-auto-dir', re: /db\.(.*)/, template: '${1}' }, zones, log);
    expect(lines).toEqual([
      '[WARNING] error reading /nonexistent-auto-dir: lstat /nonexistent-auto-dir: no such file or directory',
    ]);
  });
});

const contexts: TestContext[] = [];
afterEach(async () => {
  while (contexts.length) await contexts.pop()!.stop();
});

async function build(def: typeof auto, text: string, zones: string[], next: Handler | null): Promise<Handler> {
  const ctx = setupContext({ zones });
  const f = await def.setup(dispenserFor(text, def.name), ctx);
  ctx.seal();
  await ctx.start();
  contexts.push(ctx);
  return f!(next, ctx.block);
}

async function ask(h: Handler, name: string, type = 'A'): Promise<{ rc: number; m: Message | null }> {
  const q = makeQuery(name, type);
  const rc = await h.serve(q);
  return { rc, m: q.reply ? q.reply.peek() : null };
}

describe('auto handler', () => {
  it('answers from the zone as file does: answer, referral, NXDOMAIN with the SOA', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'db.example.org'), zone('example.org.', 5));
    const a = await build(auto, `auto {\n directory ${dir}\n}`, ['example.org.'], null);
    const www = await ask(a, 'WWW.example.org.');
    expect(www.rc).toBe(Rcode.NOERROR);
    expect(rrLines(www.m?.answers)).toEqual(['www.example.org. 3600 IN A 192.0.2.80']);
    expect(rrLines(www.m?.authorities)).toEqual(['example.org. 3600 IN NS ns1.example.org.']);
    expect(rrLines(www.m?.additionals)).toEqual([]);
    const alias = await ask(a, 'alias.example.org.');
    expect(rrLines(alias.m?.answers)).toEqual([
      'alias.example.org. 3600 IN CNAME www.example.org.',
      'www.example.org. 3600 IN A 192.0.2.80',
    ]);
    expect(rrLines((await ask(a, 'x.wild.example.org.', 'TXT')).m?.answers)).toEqual([
      'x.wild.example.org. 3600 IN TXT "wild"',
    ]);
    const ref = await ask(a, 'a.sub.example.org.');
    expect(ref.m?.answers).toEqual([]);
    expect(rrLines(ref.m?.authorities)).toEqual(['sub.example.org. 3600 IN NS ns.sub.example.org.']);
    const nx = await ask(a, 'nope.example.org.');
    expect(nx.rc).toBe(Rcode.NXDOMAIN);
    expect(rrLines(nx.m?.authorities)).toEqual([
      'example.org. 3600 IN SOA ns1.example.org. hostmaster.example.org. 5 7200 3600 1209600 300',
    ]);
  });

  it('passes names outside its zones on, refuses names in no loaded zone, refuses transfers', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'db.example.org'), zone('example.org.', 5));
    const next = new FakeNext(() => Rcode.NOERROR);
    const a = await build(auto, `auto org {\n directory ${dir}\n}`, ['.'], next);
    expect((await ask(a, 'example.com.')).rc).toBe(Rcode.NOERROR);
    expect(next.calls).toBe(1);
    expect((await ask(a, 'other.org.')).rc).toBe(Rcode.NOERROR);
    expect(next.calls).toBe(2);
    expect((await ask(a, 'www.example.org.', 'AXFR')).rc).toBe(Rcode.REFUSED);

    const alone = await build(auto, `auto org {\n directory ${dir}\n}`, ['.'], null);
    // In its zones but in no loaded zone: REFUSED; outside its zones: NextOrFailure's SERVFAIL.
    expect((await ask(alone, 'other.org.')).rc).toBe(Rcode.REFUSED);
    expect((await ask(alone, 'example.com.')).rc).toBe(Rcode.SERVFAIL);
    expect(rrLines((await ask(alone, 'www.example.org.')).m?.answers)).toEqual([
      'www.example.org. 3600 IN A 192.0.2.80',
    ]);
  });

  it('follows the directory on its reload interval', async () => {
    const dir = tempDir();
    const a = await build(auto, `auto {\n directory ${dir}\n reload 20ms\n}`, ['.'], null);
    const www = async (): Promise<string | undefined> =>
      rrLines((await ask(a, 'www.example.org.')).m?.answers)[0]
        ?.split(' ')
        .at(-1);
    expect((await ask(a, 'www.example.org.')).rc).toBe(Rcode.REFUSED);
    writeFileSync(join(dir, 'db.example.org'), zone('example.org.', 1));
    await waitFor('the new zone served', async () => (await www()) === '192.0.2.80');
    writeFileSync(join(dir, 'db.example.org'), zone('example.org.', 2, '192.0.2.81'));
    await waitFor('the changed zone served', async () => (await www()) === '192.0.2.81');
    rmSync(join(dir, 'db.example.org'));
    await waitFor('the zone dropped', async () => (await ask(a, 'www.example.org.')).rc === Rcode.REFUSED);
  });
});

describe('auto as a transfer source', () => {
  it('offers the loaded zones and notifies them after each scan', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'db.example.org'), zone('example.org.', 5));
    const sources: TransferSource[] = [];
    const notified: string[] = [];
    const hub: TransferHub = {
      addSource: (s) => sources.push(s),
      notify: (z) => {
        notified.push(z);
        return Promise.resolve(null);
      },
    };
    const b = new TestInstance({}).block({ zones: ['.'] });
    b.context('transfer').provide(TRANSFER, hub);
    const ctx = b.context('auto');
    await auto.setup(dispenserFor(`auto {\n directory ${dir}\n reload 20ms\n}`, 'auto'), ctx);
    ctx.seal();
    await ctx.start();
    contexts.push(ctx);
    expect(sources.map((s) => s.plugin)).toEqual(['auto']);
    expect(notified[0]).toBe('example.org.');
    const records = [...transferAnswers(sources[0]!.transfer('example.org.', 0) ?? [])].flat();
    expect(rrLines([records[0]!, records.at(-1)!])).toEqual([
      'example.org. 3600 IN SOA ns1.example.org. hostmaster.example.org. 5 7200 3600 1209600 300',
      'example.org. 3600 IN SOA ns1.example.org. hostmaster.example.org. 5 7200 3600 1209600 300',
    ]);
    expect(sources[0]!.transfer('www.example.org.', 0)).toBeNull();
    expect(sources[0]!.transfer('example.net.', 0)).toBeNull();
    // Every scan notifies every loaded zone again, as CoreDNS's Auto.Notify after each Walk.
    await waitFor('a second NOTIFY after the next scan', () => notified.length >= 2);
  });
});
