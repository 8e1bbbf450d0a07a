/** The file plugin: setup errors, lookups (exact, wildcard, delegation, CNAME, DNAME, negative, DNSSEC), fallthrough, reload. */
import { mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { Flag } from '../../src/dns/constants.js';
import type { Message } from '../../src/dns/message.js';
import type { Logger } from '../../src/log.js';
import type { Handler } from '../../src/plugin.js';
import { parseRequest } from '../../src/dns/wire.js';
import { Query } from '../../src/query.js';
import { encodeQuery, makeQuery, tcpQuery, TEST_TRANSPORT, udpQuery } from '../../test/helpers/dns.js';
import { rrLines } from '../../test/helpers/records.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { FakeNext } from '../../test/helpers/upstream.js';
import {
  dispenserFor,
  setupContext as fakeSetupContext,
  type TestContext as FakeContext,
} from '../../test/helpers/setup.js';
import { file, reloadZone } from './index.js';
import { parseFile } from './setup.js';
import { waitFor } from '../../test/helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'file-plugin-'));
let n = 0;
function zoneFile(text: string, name = `db${n++}`): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

const ZONE = `$ORIGIN example.org.
$TTL 3600
@ IN SOA ns1 hostmaster ( 2024 7200 3600 1209600 300 )
  IN NS ns1
  IN MX 10 mail
  IN DNSKEY 257 3 13 AQID
@ RRSIG SOA 13 2 3600 20300101000000 20240101000000 1 example.org. AQID
@ RRSIG DNSKEY 13 2 3600 20300101000000 20240101000000 1 example.org. AQID
@ NSEC mail.example.org. NS SOA MX RRSIG NSEC DNSKEY
ns1 A 192.0.2.53
mail A 192.0.2.25
mail AAAA 2001:db8::25
www CNAME web
web A 192.0.2.80
web RRSIG A 13 3 3600 20300101000000 20240101000000 1 example.org. AQID
chain CNAME www
self CNAME self
out CNAME www.example.net.
*.wild TXT "wild"
deep.ent A 192.0.2.9
sub NS ns.sub
sub DS 1 13 2 0102
ns.sub A 192.0.2.99
d DNAME example.com.
_sip._tcp SRV 0 0 5060 mail
svc HTTPS 1 web alpn=h2
`;

const contexts: FakeContext[] = [];
afterEach(async () => {
  while (contexts.length) await contexts.pop()!.stop();
});

async function build(text: string, zones = ['example.org.'], next: Handler | null = null): Promise<Handler> {
  const ctx = fakeSetupContext({ zones });
  const f = await file.setup(dispenserFor(text, 'file'), ctx);
  // As buildInstance: the block's setups are over before its startup hooks run.
  ctx.seal();
  await ctx.start();
  contexts.push(ctx);
  return f!(next, ctx.block);
}

async function ask(
  h: Handler,
  name: string,
  type = 'A',
  o: { do?: boolean } = {},
): Promise<{ rc: number; m: Message | null }> {
  const q = makeQuery(name, type, o.do ? { do: true, edns: 4096 } : {});
  const rc = await h.serve(q);
  return { rc, m: q.reply ? q.reply.peek() : null };
}

function setupError(text: string, zones = ['example.org.']): string {
  try {
    parseFile(dispenserFor(text, 'file'), zones, silent);
  } catch (e) {
    if (e instanceof ConfigError) return e.describe();
    return (e as Error).message;
  }
  return 'no error';
}

const lines: string[] = [];
const silent: Logger = {
  info: (m: string) => lines.push(`[INFO] ${m}`),
  warning: (m: string) => lines.push(`[WARNING] ${m}`),
  error: (m: string) => lines.push(`[ERROR] ${m}`),
  debug: () => undefined,
} as unknown as Logger;

describe('file setup', () => {
  it('rejects bad options with the Corefile position', () => {
    expect(setupError('file')).toBe(
      "plugin/file: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'file'",
    );
    const db = zoneFile(ZONE);
    expect(setupError(`file ${db} {\n  bogus\n}`)).toBe(
      "plugin/file: Corefile:2 - Error during parsing: unknown property 'bogus'",
    );
    expect(setupError(`file ${db} {\n  reload x\n}`)).toBe(
      'plugin/file: Corefile:2 - Error during parsing: time: invalid duration "x"',
    );
    expect(setupError(`file ${db} {\n  reload\n}`)).toBe(
      "plugin/file: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'reload'",
    );
  });

  it('fails on a broken zone file with the zone file, line, column and reason', () => {
    const db = zoneFile(`${ZONE}bad A 1.2.3\n`, 'db.broken');
    expect(setupError(`file ${db}`)).toBe(
      `plugin/file: Corefile:1 - Error during parsing: failed to parse file "${db}" for origin example.org. with error ${db}: dns: bad A A: "1.2.3" at line: 27:11`,
    );
  });

  it('fails when the SOA owner is not the zone (1.15.0)', () => {
    const db = zoneFile('test 3600 IN SOA ns1 admin 1 2 3 4 5\n');
    expect(setupError(`file ${db}`)).toBe(
      `plugin/file: Corefile:1 - Error during parsing: file "${db}" has SOA owner test.example.org. that does not match origin example.org.`,
    );
    expect(setupError(`file ${zoneFile('www 60 A 192.0.2.1\n')}`)).toMatch(
      /has no SOA record for origin example\.org\.$/,
    );
  });

  it('treats a missing file as fatal only with reload 0; otherwise warns and serves SERVFAIL until it appears', async () => {
    const missing = join(dir, 'not-yet');
    expect(setupError(`file ${missing} {\n  reload 0\n}`)).toBe(
      `plugin/file: Corefile:1 - Error during parsing: open ${missing}: no such file or directory`,
    );
    lines.length = 0;
    const cfg = parseFile(dispenserFor(`file ${missing}`, 'file'), ['example.org.'], silent);
    expect(lines).toEqual([
      `[WARNING] Failed to open "open ${missing}: no such file or directory": trying again in 1m0s`,
    ]);
    const h = await build(`file ${missing}`);
    expect((await ask(h, 'www.example.org')).rc).toBe(2);
    writeFileSync(missing, ZONE);
    const z = cfg.zones.get('example.org.')!;
    reloadZone(z, silent);
    expect(z.data.serial).toBe(2024);
  });
});

describe('file lookups', () => {
  it('answers an exact name authoritatively with the NS in authority', async () => {
    const h = await build(`file ${zoneFile(ZONE)}`);
    const { rc, m } = await ask(h, 'web.example.org');
    expect(rc).toBe(0);
    expect(m!.flags! & Flag.AA).toBe(Flag.AA);
    expect(rrLines(m!.answers)).toEqual(['web.example.org. 3600 IN A 192.0.2.80']);
    expect(rrLines(m!.authorities)).toEqual(['example.org. 3600 IN NS ns1.example.org.']);
  });

  it('adds the in-zone addresses of MX and SRV targets to the additional section', async () => {
    const h = await build(`file ${zoneFile(ZONE)}`);
    const mx = await ask(h, 'example.org', 'MX');
    expect(rrLines(mx.m!.additionals)).toEqual([
      'mail.example.org. 3600 IN A 192.0.2.25',
      'mail.example.org. 3600 IN AAAA 2001:db8::25',
    ]);
    const srv = await ask(h, '_sip._tcp.example.org', 'SRV');
    expect(srv.m!.additionals.length).toBe(2);
  });

  it("answers HTTPS records with the target's addresses in the additional section", async () => {
    const h = await build(`file ${zoneFile(ZONE)}`);
    const { m } = await ask(h, 'svc.example.org', 'UNKNOWN_65');
    expect(m!.answers.map((r) => r.type)).toEqual(['HTTPS']);
    expect(rrLines(m!.additionals)).toEqual(['web.example.org. 3600 IN A 192.0.2.80']);
  });

  it('follows CNAME chains inside the zone', async () => {
    const h = await build(`file ${zoneFile(ZONE)}`);
    const { m } = await ask(h, 'chain.example.org');
    expect(rrLines(m!.answers)).toEqual([
      'chain.example.org. 3600 IN CNAME www.example.org.',
      'www.example.org. 3600 IN CNAME web.example.org.',
      'web.example.org. 3600 IN A 192.0.2.80',
    ]);
  });

  it('answers SERVFAIL for a CNAME to itself, NOERROR with the CNAME alone for a target outside every zone (1.15.0)', async () => {
    const h = await build(`file ${zoneFile(ZONE)}`, ['example.org.']);
    expect((await ask(h, 'self.example.org')).rc).toBe(2);
    const out = await ask(h, 'out.example.org');
    expect(out.rc).toBe(0);
    expect(rrLines(out.m!.answers)).toEqual(['out.example.org. 3600 IN CNAME www.example.net.']);
  });

  it('synthesises wildcard answers, but not for names that exist or below an empty non-terminal', async () => {
    const h = await build(`file ${zoneFile(ZONE)}`);
    const w = await ask(h, 'any.wild.example.org', 'TXT');
    expect(rrLines(w.m!.answers)).toEqual(['any.wild.example.org. 3600 IN TXT "wild"']);
    const nodata = await ask(h, 'any.wild.example.org', 'A');
    expect(nodata.m!.answers).toEqual([]);
    expect(rrLines(nodata.m!.authorities)[0]).toMatch(/^example\.org\. 3600 IN SOA /);
  });

  it('refers a delegated name: NS in authority, glue in additional, no AA; DS answered by the parent', async () => {
    const h = await build(`file ${zoneFile(ZONE)}`);
    const { rc, m } = await ask(h, 'host.sub.example.org');
    expect(rc).toBe(0);
    expect(m!.flags! & Flag.AA).toBe(0);
    expect(m!.answers).toEqual([]);
    expect(rrLines(m!.authorities)).toEqual(['sub.example.org. 3600 IN NS ns.sub.example.org.']);
    expect(rrLines(m!.additionals)).toEqual(['ns.sub.example.org. 3600 IN A 192.0.2.99']);
    const ds = await ask(h, 'sub.example.org', 'DS');
    expect(ds.m!.flags! & Flag.AA).toBe(Flag.AA);
    expect(ds.m!.answers.map((r) => r.type)).toEqual(['DS']);
  });

  it('answers NXDOMAIN and NODATA with the SOA, and NOERROR for an empty non-terminal', async () => {
    const h = await build(`file ${zoneFile(ZONE)}`);
    const nx = await ask(h, 'nosuch.example.org');
    expect(nx.rc).toBe(3);
    expect(nx.m!.flags! & Flag.AA).toBe(Flag.AA);
    expect(rrLines(nx.m!.authorities)).toEqual([
      'example.org. 3600 IN SOA ns1.example.org. hostmaster.example.org. 2024 7200 3600 1209600 300',
    ]);
    const nodata = await ask(h, 'web.example.org', 'MX');
    expect(nodata.rc).toBe(0);
    expect(nodata.m!.answers).toEqual([]);
    expect(nodata.m!.authorities.map((r) => r.type)).toEqual(['SOA']);
    const ent = await ask(h, 'ent.example.org');
    expect(ent.rc).toBe(0);
    expect(ent.m!.authorities.map((r) => r.type)).toEqual(['SOA']);
  });

  it('substitutes DNAME owners', async () => {
    const h = await build(`file ${zoneFile(ZONE)}`);
    const { m } = await ask(h, 'x.d.example.org');
    expect(rrLines(m!.answers)).toEqual([
      'd.example.org. 3600 IN DNAME example.com.',
      'x.d.example.org. 3600 IN CNAME x.example.com.',
    ]);
  });

  it('serves the DNSSEC records as stored when DO is set, and leaves them out otherwise', async () => {
    const h = await build(`file ${zoneFile(ZONE)}`);
    const plain = await ask(h, 'web.example.org');
    expect(plain.m!.answers.map((r) => r.type)).toEqual(['A']);
    const signed = await ask(h, 'web.example.org', 'A', { do: true });
    expect(signed.m!.answers.map((r) => r.type)).toEqual(['A', 'RRSIG']);
    const key = await ask(h, 'example.org', 'DNSKEY', { do: true });
    expect(key.m!.answers.map((r) => r.type)).toEqual(['DNSKEY', 'RRSIG']);
    const nx = await ask(h, 'nosuch.example.org', 'A', { do: true });
    expect(nx.m!.authorities.map((r) => r.type)).toEqual(['SOA', 'RRSIG', 'NSEC']);
  });

  it('passes names outside its zones on (REFUSED without a next plugin), refuses transfers', async () => {
    const db = zoneFile(ZONE);
    expect((await ask(await build(`file ${db}`), 'example.net')).rc).toBe(5);
    const next = new FakeNext(() => 5);
    const h = await build(`file ${db} example.org`, ['.'], next);
    await ask(h, 'example.net');
    expect(next.calls).toBe(1);
    expect((await ask(h, 'example.org', 'AXFR')).rc).toBe(5);
  });

  it('logs and drops a NOTIFY for its zone, as CoreDNS does', async () => {
    const h = await build(`file ${zoneFile(ZONE)}`);
    const raw = encodeQuery('example.org', 'SOA');
    raw[2] = (raw[2]! & 0x87) | (4 << 3); // opcode NOTIFY
    const parsed = parseRequest(raw);
    if (parsed.kind !== 'query') throw new Error('NOTIFY not parsed as a query');
    const q = new Query(raw, parsed.req, TEST_TRANSPORT);
    expect(await h.serve(q)).toBe(0);
    expect(q.reply).toBeNull();
    expect(q.dropped).toBe(true);
  });

  it('falls through on NXDOMAIN when asked to', async () => {
    const next = new FakeNext(() => 2);
    const h = await build(`file ${zoneFile(ZONE)} {\n  fallthrough\n}`, ['example.org.'], next);
    await ask(h, 'nosuch.example.org');
    expect(next.calls).toBe(1);
    await ask(h, 'web.example.org', 'MX');
    expect(next.calls).toBe(1);
  });

  it('serves several zones from one file and several file lines', async () => {
    const shared = zoneFile('@ 60 IN SOA ns hostmaster 1 2 3 4 5\n@ 60 NS ns\nns 60 A 192.0.2.1\n');
    const h = await build(`file ${shared} a.test b.test\nfile ${zoneFile(ZONE)} example.org`, ['.']);
    expect(rrLines((await ask(h, 'ns.a.test')).m!.answers)).toEqual(['ns.a.test. 60 IN A 192.0.2.1']);
    expect(rrLines((await ask(h, 'ns.b.test')).m!.answers)).toEqual(['ns.b.test. 60 IN A 192.0.2.1']);
    expect(rrLines((await ask(h, 'web.example.org')).m!.answers)).toEqual(['web.example.org. 3600 IN A 192.0.2.80']);
  });
});

describe('file reload', () => {
  it('replaces the zone when the SOA serial changes, keeps it otherwise or when the file is broken', () => {
    const db = zoneFile(ZONE);
    const cfg = parseFile(dispenserFor(`file ${db}`, 'file'), ['example.org.'], silent);
    const z = cfg.zones.get('example.org.')!;
    const before = z.data;
    lines.length = 0;
    writeFileSync(db, ZONE.replace('web A 192.0.2.80', 'web A 192.0.2.81'));
    reloadZone(z, silent);
    expect(z.data).toBe(before); // same serial: not re-read
    writeFileSync(db, `${ZONE.replace('2024', '2025')}broken A x\n`);
    reloadZone(z, silent);
    expect(z.data).toBe(before);
    expect(lines[0]).toMatch(
      /^\[ERROR\] Parsing zone "example\.org\.": failed to parse file .* bad A A: "x" at line: 27:10$/,
    );
    writeFileSync(db, ZONE.replace('2024', '2025'));
    reloadZone(z, silent);
    expect(z.data.serial).toBe(2025);
    expect(lines[1]).toBe(`[INFO] Successfully reloaded zone "example.org." in "${db}" with 2025 SOA serial`);
  });

  it('with reload_by_mtime, re-reads when the file is newer whatever the serial', () => {
    const db = zoneFile(ZONE);
    const cfg = parseFile(dispenserFor(`file ${db} {\n  reload_by_mtime\n}`, 'file'), ['example.org.'], silent);
    const z = cfg.zones.get('example.org.')!;
    const before = z.data;
    reloadZone(z, silent);
    expect(z.data).toBe(before);
    writeFileSync(db, ZONE.replace('web A 192.0.2.80', 'web A 192.0.2.81'));
    const later = new Date(Date.now() + 10_000);
    utimesSync(db, later, later);
    reloadZone(z, silent);
    expect(z.data).not.toBe(before);
    expect(z.data.search('web.example.org.')?.type(1)[0]?.answer).toMatchObject({ data: '192.0.2.81' });
  });
});

describe('file over sockets', () => {
  let srv: TestServer | null = null;
  afterEach(async () => {
    await srv?.stop();
    srv = null;
  });

  it('answers over UDP and TCP and picks up a new serial at the reload interval', async () => {
    const db = zoneFile(ZONE);
    srv = await startServer(`example.org {\n  file ${db} {\n    reload 100ms\n  }\n}\n`);
    const u = await udpQuery(srv.port, 'www.example.org', 'A');
    expect(rrLines(u.answers)).toEqual([
      'www.example.org. 3600 IN CNAME web.example.org.',
      'web.example.org. 3600 IN A 192.0.2.80',
    ]);
    const t = await tcpQuery(srv.port, 'web.example.org', 'A', { do: true, edns: 4096 });
    expect(t.answers.map((r) => r.type)).toEqual(['A', 'RRSIG']);
    writeFileSync(db, ZONE.replace('2024', '2025').replace('web A 192.0.2.80', 'web A 192.0.2.81'));
    const server = srv;
    let answer: string[] = [];
    await waitFor(
      () => `the reloaded zone (last answer: ${answer.join(', ')})`,
      async () => {
        answer = rrLines((await udpQuery(server.port, 'web.example.org', 'A')).answers);
        return answer[0]?.endsWith('192.0.2.81') === true;
      },
      { everyMs: 50 },
    );
    expect(answer).toEqual(['web.example.org. 3600 IN A 192.0.2.81']);
    expect(srv.logs.some((l) => l.includes('Successfully reloaded zone "example.org."'))).toBe(true);
  });
});
