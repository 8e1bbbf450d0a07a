/**
 * sign: setup errors as CoreDNS 1.15.0 prints them, a signed zone that ldns-verify-zone and
 * dnssec-verify accept (NSEC chain, delegations and glue, wildcard, CDS/CDNSKEY), the resign
 * schedule's reasons, and the log lines of a start-up that signs and of one that skips. The
 * comparison with CoreDNS's output is in test/differential/sign.test.ts.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseZoneText } from '../../src/dns/zonefile/parser.js';
import { runCorefile } from '../../test/helpers/corefile.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { hasTool } from '../../test/helpers/spawn.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { resignReason } from './resign.js';
import { sign } from './index.js';
import { signZone, zoneText } from './zonesigner.js';

const SIGN_ZONE = `$ORIGIN example.org.
$TTL 3600
@ IN SOA ns1.example.org. admin.example.org. 1 7200 3600 1209600 300
@ IN NS ns1.example.org.
@ IN MX 10 mail.example.org.
@ IN DNSKEY 257 3 13 bm90IGEga2V5
ns1 IN A 192.0.2.1
www 60 IN A 192.0.2.2
www IN AAAA 2001:db8::2
Mixed IN CNAME www
*.wild IN TXT "wild \\"one\\""
sub IN NS ns.sub
ns.sub IN A 192.0.2.9
_sip._udp IN SRV 0 5 5060 sip.example.org.
`;

let dir = '';
let ksk = '';
let zsk = '';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sign-unit-'));
  writeFileSync(join(dir, 'db.example.org'), SIGN_ZONE);
  if (!hasTool('dnssec-keygen')) return;
  const gen = (args: string[]): string =>
    join(dir, execFileSync('dnssec-keygen', ['-q', '-K', dir, ...args, 'example.org'], { encoding: 'utf8' }).trim());
  ksk = gen(['-a', 'ECDSAP256SHA256', '-f', 'KSK']);
  zsk = gen(['-a', 'ED25519']);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function setupErr(text: string): string {
  return configError(
    () => sign.setup(dispenserFor(text, 'sign'), setupContext({ zones: ['example.org.'] })),
    text,
  ).describe();
}

describe('sign: setup', () => {
  it('has dnssec-keygen, ldns-verify-zone and dnssec-verify', () => {
    expect(hasTool('dnssec-keygen') && hasTool('ldns-verify-zone') && hasTool('dnssec-verify')).toBe(true);
  });
  it.each([
    [
      'sign',
      "plugin/sign: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'sign'",
    ],
    ['sign db {\n foo\n}', "plugin/sign: Corefile:2 - Error during parsing: unknown property 'foo'"],
    ['sign db {\n key directory /tmp\n}', 'plugin/sign: directory: not implemented'],
    ['sign db {\n directory a b\n}', 'plugin/sign: can only be one argument after "directory"'],
    ['sign db {\n directory\n}', 'plugin/sign: can only be one argument after "directory"'],
    [
      'sign db {\n key\n}',
      "plugin/sign: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'key'",
    ],
    [
      'sign db {\n key file\n}',
      "plugin/sign: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'file'",
    ],
    ['sign db {\n key file /nope/K\n}', 'plugin/sign: open /nope/K.key: no such file or directory'],
  ])('%j', (text, want) => {
    expect(setupErr(text)).toBe(want);
  });
  it('refuses a ZSK', () => {
    expect(setupErr(`sign db {\n key file ${zsk}\n}`)).toBe(`plugin/sign: DNSKEY in "${zsk}.key" is not a CSK/KSK`);
  });
});

describe('sign: the signed zone', () => {
  it('is accepted by ldns-verify-zone and dnssec-verify, with the NSEC chain CoreDNS builds', async () => {
    const { readKeyPair } = await import('../../src/dnssec/keys.js');
    const key = readKeyPair(ksk);
    const now = Date.now() / 1000;
    const z = signZone(
      {
        origin: 'example.org.',
        dbfile: join(dir, 'db.example.org'),
        keys: [key],
        directory: dir,
        jitterIncepS: -3600,
        jitterExpirS: 86400,
      },
      now,
    );
    expect(z.serial).toBe(Math.floor(now));
    const text = zoneText(z);
    const out = join(dir, 'db.example.org.signed');
    writeFileSync(out, text);
    const ldns = spawnSync('ldns-verify-zone', [out], { encoding: 'utf8' });
    expect(`${ldns.stdout}${ldns.stderr}`).toContain('Zone is verified and complete');
    expect(ldns.status).toBe(0);
    const bind = spawnSync('dnssec-verify', ['-z', '-o', 'example.org', out], { encoding: 'utf8' });
    expect(`${bind.stdout}${bind.stderr}`).toContain('Zone fully signed');
    expect(bind.status).toBe(0);
    const recs = parseZoneText(text, { origin: '.', file: out });
    const nsec = recs.filter((r) => r.type === 47).map((r) => r.name);
    // Glue below the delegation gets no NSEC; the delegation point and the apex do; the old DNSKEY is gone.
    expect(nsec).toEqual([
      'example.org.',
      '_sip._udp.example.org.',
      'mixed.example.org.',
      'ns1.example.org.',
      'sub.example.org.',
      '*.wild.example.org.',
      'www.example.org.',
    ]);
    expect(recs.filter((r) => r.type === 48)).toHaveLength(1);
    expect(recs.filter((r) => r.type === 59)).toHaveLength(2);
    expect(recs.filter((r) => r.type === 60)).toHaveLength(1);
    const nsecTtls = new Set(recs.filter((r) => r.type === 47).map((r) => r.ttl));
    expect([...nsecTtls]).toEqual([300]);
    expect(recs.some((r) => r.type === 46 && r.name === 'ns.sub.example.org.')).toBe(false);
    // The www A RRset keeps its TTL in its RRSIG's original TTL.
    const wwwSig = recs.find((r) => r.type === 46 && r.name === 'www.example.org.' && r.rdata.readUInt16BE(0) === 1)!;
    expect(wwwSig.rdata.readUInt32BE(4)).toBe(60);
    expect(resignReason(out, Date.now())).toBeNull();
    expect(resignReason(out, Date.now() + 7 * 86400_000)).toMatch(/^inception ".*" was more than: 144h0m0s ago from /);
    expect(resignReason(out, Date.now() - 86400_000)).toMatch(/^inception ".*" date is in the future: -/);
    expect(resignReason(join(dir, 'nope'), Date.now())).toBe(`open ${join(dir, 'nope')}: no such file or directory`);
  });
});

describe('sign: start-up', () => {
  it('signs a missing zone in the background and skips a valid one, with CoreDNS log lines', async () => {
    const out = mkdtempSync(join(dir, 'out-'));
    const corefile = `example.org {\n  sign ${join(dir, 'db.example.org')} {\n    key file ${ksk}.key\n    directory ${out}\n  }\n  whoami\n}\n`;
    const logs = captureLogs();
    try {
      const run = await runCorefile(corefile);
      const done = await logs.waitFor('Successfully signed zone');
      await run.stop();
      const path = join(out, 'db.example.org.signed');
      expect(logs.lines).toContain(
        `[INFO] plugin/sign: Signing "example.org." because open ${path}: no such file or directory`,
      );
      expect(done).toMatch(
        new RegExp(
          `^\\[INFO\\] plugin/sign: Successfully signed zone "example.org." in "${path}" with key tags "\\d+" and \\d+ SOA serial, elapsed \\d+\\.\\d{6}, next: \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z$`,
        ),
      );
      expect(readFileSync(path, 'latin1')).toContain('\tIN\tNSEC\t');
      const again = await runCorefile(corefile);
      await logs.waitFor('Skipping signing zone');
      await again.stop();
      expect(logs.lines).toContain(
        `[INFO] plugin/sign: Skipping signing zone "example.org." in "${path}": signatures are valid`,
      );
    } finally {
      logs.restore();
    }
  });
});

describe('sign: root', () => {
  it("finds a relative DBFILE, key file and directory in the block's root, as CoreDNS does", async () => {
    mkdirSync(join(dir, 'rooted'));
    const corefile = `example.org {\n  root ${dir}\n  sign db.example.org {\n    key file ${basename(ksk)}.key\n    directory rooted\n  }\n  whoami\n}\n`;
    const logs = captureLogs();
    try {
      const run = await runCorefile(corefile);
      const done = await logs.waitFor('Successfully signed zone');
      await run.stop();
      const path = join(dir, 'rooted', 'db.example.org.signed');
      expect(done).toContain(`Successfully signed zone "example.org." in "${path}"`);
      expect(readFileSync(path, 'latin1')).toContain('\tIN\tNSEC\t');
    } finally {
      logs.restore();
    }
  });
});
