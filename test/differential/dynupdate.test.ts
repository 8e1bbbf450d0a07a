/**
 * Differential: dynupdate (with tsig and transfer) against CoreDNS 1.15.0, driven by BIND's
 * `nsupdate` with the same key (`-y`, and a key file with `-k`) and the same seed zone. The same
 * update sequences are sent to both servers; what nsupdate reports for every `send` (the rcodes)
 * and the zone that results (a signed AXFR, in canonical order, SOA serial included) must agree,
 * as must queries for the changed names. Sequences: adds with prerequisites, a failed
 * prerequisite (YXDOMAIN, NXRRSET), deletes of a record, an RRset and a name, CNAME conflicts,
 * the apex NS and SOA protections, an explicit SOA serial, a type outside an allow rule (REFUSED),
 * an unsigned UPDATE (REFUSED), an UPDATE for another zone (NOTAUTH), a DNSSEC type (NOTIMP).
 * *cache* sits in the block: answers read before the updates must not outlive them (both servers
 * bypass the cache for a dynamic zone).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingBinaries, startPair, type Pair } from './harness.js';

const SECRET = 'i9M+00yrECfVZG2qCjr4mPpaGim/Bq+IWMiNrLjUO4Y=';
const KEYNAME = 'update-key.example.org.';
const ZONE = `$ORIGIN example.org.
@    60 IN SOA ns.example.org. hostmaster.example.org. 1 3600 600 86400 60
@    60 IN NS ns.example.org.
ns   60 IN A 192.0.2.53
www  60 IN A 192.0.2.1
www  60 IN A 192.0.2.2
mail 60 IN MX 10 mx.example.org.
`;
const COREFILE = `example.org:{{DNS}} {
  tsig {
    secret ${KEYNAME} ${SECRET}
    secret narrow-key. ${SECRET}
    require_opcode UPDATE
  }
  cache 30
  transfer {
    to *
  }
  dynupdate {
    file db.example.org
    allow ${KEYNAME} * *
    allow narrow-key. host.example.org. A
  }
}
example.net:{{DNS}} {
  whoami
}
`;

let pair: Pair | null = null;
const dir = mkdtempSync(join(tmpdir(), 'dynupdate-diff-'));
const keyFile = join(dir, 'update.key');
writeFileSync(keyFile, `key "${KEYNAME}" {\n  algorithm hmac-sha256;\n  secret "${SECRET}";\n};\n`);

beforeAll(async () => {
  const missing = missingBinaries();
  if (missing) throw new Error(missing);
  pair = await startPair(
    { corefile: COREFILE, files: { 'db.example.org': ZONE }, oneThread: true },
    { name: 'www.example.org.', type: 'A' },
  );
}, 60000);

afterAll(async () => {
  await pair?.stop();
});

/** Run one nsupdate script against a server; its report (stdout + stderr) and exit status. */
function nsupdate(port: number, script: string, auth: string[]): string {
  const r = spawnSync('nsupdate', auth, {
    input: `server 127.0.0.1 ${port}\n${script}`,
    encoding: 'utf8',
    timeout: 20000,
  });
  return `${r.stdout}${r.stderr}exit=${r.status}`.replace(new RegExp(String(port), 'g'), 'PORT');
}

/** The zone as a signed AXFR shows it, one record per line, sorted. */
function zone(port: number): string[] {
  const r = spawnSync(
    'dig',
    [
      '@127.0.0.1',
      '-p',
      String(port),
      '-y',
      `hmac-sha256:${KEYNAME}${SECRET}`,
      'example.org',
      'AXFR',
      '+nocmd',
      '+nostats',
    ],
    { encoding: 'utf8' },
  );
  return r.stdout
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith(';') && !/\tTSIG\t/.test(l))
    .sort();
}

function query(port: number, name: string, type: string): string {
  const r = spawnSync('dig', ['@127.0.0.1', '-p', String(port), name, type, '+noall', '+answer', '+comments'], {
    encoding: 'utf8',
  });
  return r.stdout
    .split('\n')
    .filter((l) => /status:|^[^;]/.test(l) && l !== '')
    .map((l) => l.replace(/id: \d+/, 'id'))
    .join('\n');
}

const Y = ['-y', `hmac-sha256:${KEYNAME}${SECRET}`];

/** Each step: the script, how nsupdate authenticates. */
const STEPS: [string, string, string[]][] = [
  [
    'add with prerequisites',
    `zone example.org.
prereq nxrrset host.example.org. A
update add host.example.org. 60 A 192.0.2.10
update add alias.example.org. 60 CNAME www.example.org.
send
`,
    Y,
  ],
  [
    'failed prerequisites: YXDOMAIN, NXRRSET, value-dependent',
    `zone example.org.
prereq nxdomain host.example.org.
update add x.example.org. 60 A 192.0.2.99
send
prereq yxrrset nothere.example.org. TXT
update add x.example.org. 60 A 192.0.2.99
send
prereq yxrrset www.example.org. A 192.0.2.1
update add x.example.org. 60 A 192.0.2.99
send
`,
    Y,
  ],
  [
    'deletes: one record, an RRset, a name; a key file',
    `zone example.org.
update delete www.example.org. A 192.0.2.2
update delete mail.example.org. MX
update add txt.example.org. 30 TXT "hello world" "two"
send
update delete txt.example.org.
update add t2.example.org. 30 TXT "kept"
send
`,
    ['-k', keyFile],
  ],
  [
    'CNAME conflicts, apex NS and SOA, an explicit serial',
    `zone example.org.
update add alias.example.org. 60 A 192.0.2.77
update add www.example.org. 60 CNAME ns.example.org.
update delete example.org. NS ns.example.org.
update delete example.org. SOA
send
update add example.org. 60 SOA ns.example.org. hostmaster.example.org. 100 3600 600 86400 60
send
update add example.org. 60 SOA ns.example.org. hostmaster.example.org. 50 3600 600 86400 60
send
`,
    Y,
  ],
  [
    'a type outside the allow rule (REFUSED), one inside it',
    `zone example.org.
update add host.example.org. 60 AAAA 2001:db8::10
send
update add host.example.org. 60 A 192.0.2.11
send
`,
    ['-y', `hmac-sha256:narrow-key.:${SECRET}`],
  ],
  [
    'another zone, a DNSSEC type',
    `zone example.net.
update add a.example.net. 60 A 192.0.2.1
send
zone example.org.
update add ds.example.org. 60 DS 60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118
send
`,
    Y,
  ],
  ['unsigned', 'zone example.org.\nupdate add u.example.org. 60 A 192.0.2.5\nsend\n', []],
];

describe('differential: dynupdate with nsupdate', () => {
  it('the same rcodes for every send and the same zone after each sequence', () => {
    const [ref, cand] = [pair!.ref.dns, pair!.cand.dns];
    expect(zone(cand)).toEqual(zone(ref));
    // Answers cache would keep (NXDOMAIN, an RRset that changes) if it did not bypass the zone.
    for (const port of [ref, cand]) {
      expect(query(port, 'host.example.org.', 'A')).toContain('NXDOMAIN');
      expect(query(port, 'www.example.org.', 'A')).toContain('192.0.2.2');
    }
    for (const [what, script, auth] of STEPS) {
      const a = nsupdate(ref, script, auth);
      const b = nsupdate(cand, script, auth);
      expect(b, what).toBe(a);
      expect(zone(cand), what).toEqual(zone(ref));
    }
    // The changes happened (the comparison is not of two unchanged zones).
    const final = zone(ref).join('\n');
    expect(final).toMatch(/host\.example\.org\.\s+60\s+IN\s+A\s+192\.0\.2\.11/);
    expect(final).toMatch(/SOA\s+ns\.example\.org\. hostmaster\.example\.org\. [2-9] /);
  });

  it('queries see the updated zone on both servers', () => {
    const [ref, cand] = [pair!.ref.dns, pair!.cand.dns];
    for (const [name, type] of [
      ['host.example.org.', 'A'],
      ['alias.example.org.', 'A'],
      ['www.example.org.', 'A'],
      ['mail.example.org.', 'MX'],
      ['txt.example.org.', 'TXT'],
      ['t2.example.org.', 'TXT'],
      ['example.org.', 'SOA'],
    ] as const) {
      expect(query(cand, name, type), `${name} ${type}`).toBe(query(ref, name, type));
    }
  });
});
