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
 *
 * clusterdns runs with `-workers 1`, `-workers 2` and its default threads (one per CPU): the main
 * thread owns the zone and an UPDATE's reply waits until every thread installed the change
 * (plugins/dynupdate/zone.ts), so right after each nsupdate the SOA asked from many fresh sockets
 * (which the kernel spreads over the threads) and AXFRs over fresh connections must all show the
 * new zone. UPDATEs signed with a wrong secret, a stale time or a truncated MAC get the same
 * replies as from CoreDNS and change nothing.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode } from '../../src/dns/message.js';
import { checkReply, signRequest } from '../../src/dns/tsig.js';
import { encodeQuery } from '../helpers/dns.js';
import { exchange, missingBinaries, startPair, type CaseSetup, type Pair } from './harness.js';

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

const dir = mkdtempSync(join(tmpdir(), 'dynupdate-diff-'));
const keyFile = join(dir, 'update.key');
writeFileSync(keyFile, `key "${KEYNAME}" {\n  algorithm hmac-sha256;\n  secret "${SECRET}";\n};\n`);

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
      `hmac-sha256:${KEYNAME}:${SECRET}`,
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

const Y = ['-y', `hmac-sha256:${KEYNAME}:${SECRET}`];

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

/** How many fresh sockets ask after each change (the kernel spreads them over the threads). */
const FRESH_SOCKETS = 16;

/** The SOA serials the server answers to one query from each of FRESH_SOCKETS fresh UDP sockets. */
async function serialsFromFreshSockets(port: number): Promise<number[]> {
  const replies = await Promise.all(
    Array.from({ length: FRESH_SOCKETS }, () => exchange(port, encodeQuery('example.org.', 'SOA'), 'udp')),
  );
  return replies.map((r) => {
    if (r === null) return -1;
    const soa = decode(r).answers?.find((a) => a.type === 'SOA');
    return soa?.type === 'SOA' ? (soa.data.serial ?? -3) : -2;
  });
}

/** The name in wire form. */
function wireName(name: string): Buffer {
  const parts = name.split('.').filter((l) => l !== '');
  return Buffer.concat([...parts.map((l) => Buffer.concat([Buffer.of(l.length), Buffer.from(l)])), Buffer.of(0)]);
}

/** An UPDATE of example.org. (question `example.org. SOA IN`) adding `stale.example.org. A`. */
function staleUpdate(): Buffer {
  const head = Buffer.alloc(12);
  head.writeUInt16BE(4242, 0);
  head.writeUInt16BE(5 << 11, 2);
  head.writeUInt16BE(1, 4);
  head.writeUInt16BE(1, 8);
  const question = Buffer.concat([wireName('example.org.'), Buffer.from([0, 6, 0, 1])]);
  const rr = Buffer.concat([
    wireName('stale.example.org.'),
    Buffer.from([0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 66]),
  ]);
  return Buffer.concat([head, question, rr]);
}

/** Header flags (RCODE included), section counts and the reply's TSIG error and MAC check. */
function replySummary(reply: Buffer | null, prior: Buffer): unknown {
  if (reply === null) return null;
  const check = checkReply(reply, prior, Buffer.from(SECRET, 'base64'));
  return {
    flags: reply.readUInt16BE(2),
    counts: [reply.readUInt16BE(4), reply.readUInt16BE(6), reply.readUInt16BE(8), reply.readUInt16BE(10)],
    tsigError: check?.tsig.error ?? null,
    signed: check === null ? null : check.tsig.mac.length > 0,
  };
}

const MODES: readonly [string, Pick<CaseSetup, 'oneThread' | 'workers'>][] = [
  ['-workers 1', { oneThread: true }],
  ['-workers 2', { workers: 2 }],
  ['the default threads', {}],
];

describe.each(MODES)('differential: dynupdate with nsupdate, clusterdns with %s', (_mode, threads) => {
  let pair: Pair | null = null;

  beforeAll(async () => {
    const missing = missingBinaries();
    if (missing) throw new Error(missing);
    pair = await startPair(
      { corefile: COREFILE, files: { 'db.example.org': ZONE }, ...threads },
      { name: 'www.example.org.', type: 'A' },
    );
  }, 60000);

  afterAll(async () => {
    await pair?.stop();
  });

  it('the same rcodes for every send and the same zone after each sequence, on every thread', async () => {
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
      // Asked once nsupdate returned, with no wait: every thread has the change.
      const want = (await serialsFromFreshSockets(ref))[0]!;
      expect(await serialsFromFreshSockets(cand), what).toEqual(Array.from({ length: FRESH_SOCKETS }, () => want));
      const refZone = zone(ref);
      for (let i = 0; i < 4; i++) expect(zone(cand), `${what}: transfer ${i + 1}`).toEqual(refZone);
    }
    // The changes happened (the comparison is not of two unchanged zones).
    const final = zone(ref).join('\n');
    expect(final).toMatch(/host\.example\.org\.\s+60\s+IN\s+A\s+192\.0\.2\.11/);
    // Signed with -y and with the key file: the explicit serial 100, then one more change.
    expect(final).toMatch(/SOA\s+ns\.example\.org\. hostmaster\.example\.org\. 101 /);
    expect(final).toMatch(/alias\.example\.org\.\s+60\s+IN\s+CNAME\s+www\.example\.org\./);
    expect(final).toMatch(/t2\.example\.org\.\s+30\s+IN\s+TXT\s+"kept"/);
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

  it('a wrong secret, a stale time and a truncated MAC get the same replies and change nothing', async () => {
    const [ref, cand] = [pair!.ref.dns, pair!.cand.dns];
    const before = zone(ref);
    const key = { name: KEYNAME, algorithm: 'hmac-sha256.', secret: Buffer.from(SECRET, 'base64') };
    const now = Math.floor(Date.now() / 1000);
    const update = staleUpdate();
    const cases: [string, { wire: Buffer; mac: Buffer }][] = [
      ['wrong secret', signRequest(update, { ...key, secret: Buffer.alloc(32, 7) }, now)],
      ['stale time', signRequest(update, key, now - 7200)],
      ['truncated MAC', signRequest(update, key, now, 300, 8)],
    ];
    for (const [what, { wire, mac }] of cases) {
      for (const proto of ['udp', 'tcp'] as const) {
        const [a, b] = await Promise.all([exchange(ref, wire, proto), exchange(cand, wire, proto)]);
        expect(a, `${what} over ${proto}: CoreDNS replied`).not.toBeNull();
        expect(replySummary(b, mac), `${what} over ${proto}`).toEqual(replySummary(a, mac));
      }
    }
    expect(zone(cand)).toEqual(before);
    expect(zone(ref)).toEqual(before);
    expect(query(cand, 'stale.example.org.', 'A')).toContain('NXDOMAIN');
  });
});
