/**
 * Differential: the sign plugin against CoreDNS 1.15.0. Both sign the same zone file with the same
 * key at start-up; the signed files must hold the same records — the RRSIGs compared without
 * their times (jittered at random by both) and signature, the SOA without its serial (the signing
 * second) — both must pass ldns-verify-zone, and both must log the same lines but for times,
 * serials and the directory.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseZoneText } from '../../src/dns/zonefile/parser.js';
import { hasTool } from '../helpers/spawn.js';
import { missingBinaries, startPair, type Proc } from './harness.js';

const ZONE = `$ORIGIN example.org.
$TTL 3600
@ IN SOA ns1.example.org. admin.example.org. 1 7200 3600 1209600 300
@ IN NS ns1.example.org.
@ IN NS ns2.example.org.
@ IN MX 10 mail.example.org.
ns1 IN A 192.0.2.1
ns2 IN AAAA 2001:db8::53
www 60 IN A 192.0.2.2
www IN A 192.0.2.3
Mixed IN CNAME www
*.wild IN TXT "wild"
sub IN NS ns.sub
sub IN DS 12345 13 2 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
ns.sub IN A 192.0.2.9
a.b.c.deep IN TXT "deep"
`;

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The signed file's records as comparable lines (sorted). */
function records(path: string): string[] {
  return parseZoneText(readFileSync(path, 'latin1'), { origin: '.', file: path })
    .map((r) => {
      let rdata = r.rdata.toString('hex');
      if (r.type === 46) {
        const end = r.rdata.indexOf(0, 18) + 1;
        rdata = `${r.rdata.subarray(0, 8).toString('hex')}|${r.rdata.subarray(16, end).toString('hex')}`;
      }
      if (r.type === 6) rdata = `${r.rdata.subarray(0, -20).toString('hex')}|${r.rdata.subarray(-16).toString('hex')}`;
      return `${r.name} ${r.ttl} ${r.class} ${r.type} ${rdata}`;
    })
    .sort();
}

function signLines(p: Proc): string[] {
  return p.output
    .filter((l) => l.includes('plugin/sign:'))
    .map((l) =>
      l
        .replaceAll(p.dir, 'DIR')
        .replace(/\d+ SOA serial/, 'N SOA serial')
        .replace(/elapsed \d+\.\d+/, 'elapsed E')
        .replace(/next: \S+/, 'next: T'),
    );
}

describe('differential: sign', () => {
  const missing = missingBinaries();
  it('signs the same zone to the same records as CoreDNS 1.15.0', async () => {
    expect(missing).toBeNull();
    expect(hasTool('dnssec-keygen') && hasTool('ldns-verify-zone')).toBe(true);
    const keyDir = mkdtempSync(join(tmpdir(), 'sign-keys-'));
    dirs.push(keyDir);
    const base = execFileSync(
      'dnssec-keygen',
      ['-q', '-K', keyDir, '-a', 'ECDSAP256SHA256', '-f', 'KSK', 'example.org'],
      {
        encoding: 'utf8',
      },
    ).trim();
    const pair = await startPair({
      corefile: `example.org:{{DNS}} {\n  bind 127.0.0.1\n  sign {{DIR}}/db.example.org {\n    key file {{DIR}}/${base}\n    directory {{DIR}}\n  }\n  whoami\n}\n`,
      files: {
        'db.example.org': ZONE,
        [`${base}.key`]: readFileSync(join(keyDir, `${base}.key`), 'utf8'),
        [`${base}.private`]: readFileSync(join(keyDir, `${base}.private`), 'utf8'),
      },
    });
    try {
      await Promise.all([pair.ref, pair.cand].map((p) => p.waitFor(/Successfully signed zone/)));
      const files = [pair.ref, pair.cand].map((p) => join(p.dir, 'db.example.org.signed'));
      expect(records(files[1]!)).toEqual(records(files[0]!));
      for (const f of files) {
        const v = spawnSync('ldns-verify-zone', [f], { encoding: 'utf8' });
        expect(`${v.stdout}${v.stderr}`, f).toContain('Zone is verified and complete');
      }
      expect(signLines(pair.cand)).toEqual(signLines(pair.ref));
    } finally {
      await pair.stop();
    }
  }, 120_000);
});
