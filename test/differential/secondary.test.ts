/**
 * Differential: the secondary plugin against CoreDNS 1.15.0 — both servers pull example.org from the
 * same primary (the real CoreDNS 1.15.0 serving a zone file with delegations, wildcards, CNAME and
 * DNAME, DNSSEC records, SVCB/HTTPS, NAPTR, generic RFC 3597 records): the answers before the
 * primary is up (SERVFAIL, deterministic), the answers after the first transfer over UDP and TCP
 * with and without EDNS/DO, the records each transfers out again, NOTIFY from the primary's address
 * and from a stranger, and the answers after the primary's zone changed and it notified both. The
 * log lines of the transfers are compared too. Then catalog zones (RFC 9432): both consume a catalog
 * from one primary (`catalog test`: a member outside is skipped), and the member zones' answers and
 * the catalog log lines are compared, before and after the catalog changed.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as dnsPacket from 'dns-packet';
import { afterAll, describe, expect, it } from 'vitest';
import { decode } from '../../src/dns/message.js';
import { parseMessage, recordText } from '../../src/dnscompare/index.js';
import { tcpExchange } from '../../src/dns/client.js';
import { rrLines } from '../helpers/records.js';
import { startLines, type LineProcess } from '../helpers/lines.js';
import { freePort } from '../helpers/net.js';
import { waitFor } from '../helpers/wait.js';
import {
  assertResult,
  encode,
  exchange,
  generate,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type Pair,
  type QuerySpec,
} from './harness.js';

const SIG = 'oJB1W6WNGv+ldvQ3WDG0MQkg5IEhjRip8WTrPYGv07h108dUKGMeDPKijVCHX3DDKdfb+v6oB9wfuh3DTJXUAfI=';
const DIGEST = '2BB183AF5F22588179A53B0A98631FAD1A292118D6E7B0E2E1DFD4F7C8A5A7B5';

function zone(serial: number, web: string): string {
  return `$ORIGIN example.org.
$TTL 3600
@   IN SOA ns1.example.org. hostmaster.example.org. ( ${serial} 7200 3600 1209600 300 )
    IN NS ns1
    IN NS ns.external.net.
    IN MX 10 mail
    IN MX 20 Mail2.Example.ORG.
    IN TXT "v=spf1 mx -all"
    IN CAA 0 issue "letsencrypt.org"
@   RRSIG SOA 13 2 3600 20300101000000 20240101000000 12345 example.org. ${SIG}
@   RRSIG NS 13 2 3600 20300101000000 20240101000000 12345 example.org. ${SIG}
@   NSEC a.b.ent.example.org. NS SOA MX TXT RRSIG NSEC CAA
ns1 A 192.0.2.53
mail A 192.0.2.25
mail AAAA 2001:db8::25
mail2 A 192.0.2.26
www CNAME web
web 60 A ${web}
web AAAA 2001:db8::80
web RRSIG A 13 3 60 20300101000000 20240101000000 12345 example.org. ${SIG}
chain1 CNAME chain2
chain2 CNAME WWW
dangling CNAME nosuch
loop CNAME loop
txt TXT "first string" "escaped \\"quote\\"" ""
_sip._tcp SRV 10 60 5060 sipserver.example.org.
sipserver A 192.0.2.60
*.wild A 192.0.2.100
*.wild TXT "wildcard"
sub.wild A 192.0.2.101
a.b.ent A 192.0.2.110
host.ptr PTR web.example.org.
generic TYPE65280 \\# 4 0A000001
naptr NAPTR 100 10 "S" "SIP+D2U" "" _sip._udp.example.org.
sshfp SSHFP 4 2 ${DIGEST}
svc HTTPS 1 Web alpn=h2,h3 port=8443 ipv4hint=192.0.2.80
svc SVCB 0 web.example.org.
sub NS ns1.sub
sub NS ns.other.net.
sub DS 12345 13 2 ${DIGEST}
ns1.sub A 192.0.2.201
dname DNAME example.net.
`;
}

const NAMES = [
  'example.org',
  'www.example.org',
  'web.example.org',
  'chain1.example.org',
  'dangling.example.org',
  'loop.example.org',
  'txt.example.org',
  '_sip._tcp.example.org',
  'x.wild.example.org',
  'sub.wild.example.org',
  'b.ent.example.org',
  'nosuch.example.org',
  'host.ptr.example.org',
  'generic.example.org',
  'naptr.example.org',
  'svc.example.org',
  'host.sub.example.org',
  'sub.example.org',
  'www.dname.example.org',
];
const TYPES = ['A', 'AAAA', 'MX', 'TXT', 'SRV', 'NS', 'SOA', 'DS', 'CNAME', 'HTTPS', 'NAPTR', 'TYPE65280'];

function corefile(primary: string): string {
  return `example.org:{{DNS}} {
  secondary {
    transfer from ${primary}
  }
  transfer {
    to *
  }
}
`;
}

/** The records a server transfers out (sorted presentation lines). */
async function axfrLines(port: number): Promise<string[]> {
  const replies = await tcpExchange([encode({ name: 'example.org', type: 'AXFR', id: 7 })], { port }, (r) => {
    const soas = r.flatMap((m) => decode(m).answers.filter((a) => a.type === 'SOA'));
    return soas.length >= 2 || (r.length > 0 && (r[0]!.readUInt16BE(2) & 0xf) !== 0);
  });
  const out: string[] = [];
  for (const m of replies) {
    const parsed = parseMessage(m);
    if (!parsed.ok) throw new Error(`malformed transfer message from port ${port}: ${parsed.error}`);
    for (const r of parsed.msg.answer) out.push(recordText(r));
  }
  return out.sort();
}

function notify(id: number): Buffer {
  const b = dnsPacket.encode({
    id,
    type: 'query',
    flags: dnsPacket.AUTHORITATIVE_ANSWER,
    questions: [{ name: 'example.org', type: 'SOA', class: 'IN' }],
  });
  b[2] = (b[2]! & 0x87) | (4 << 3);
  return b;
}

describe('differential: secondary', () => {
  const missing = missingBinaries();
  let pair: Pair | null = null;
  let primary: LineProcess | null = null;
  const dir = mkdtempSync(join(tmpdir(), 'diff-secondary-primary-'));
  const db = join(dir, 'db.example.org');
  // The primary listens on 127.0.0.2 (the loopback net): a NOTIFY from 127.0.0.1 is a stranger's.
  let primaryAddr = '';

  afterAll(async () => {
    await pair?.stop();
    await primary?.stop();
    const t = totalCompared();
    process.stdout.write(`differential secondary: ${t.compared} replies compared in ${t.cases} cases\n`);
  });

  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });

  it('before the first transfer: SERVFAIL from both', async () => {
    if (missing) throw new Error(missing);
    primaryAddr = `127.0.0.2:${await freePort('127.0.0.2')}`;
    pair = await startPair({ corefile: corefile(primaryAddr), oneThread: false });
    await Promise.all([
      pair.ref.waitFor(/All 'example\.org\.' masters failed to transfer/),
      pair.cand.waitFor(/All 'example\.org\.' masters failed to transfer/),
    ]);
    const result = newResult('secondary-before');
    await runQueries(pair, result, generate(['www.example.org', 'example.org'], ['A', 'SOA']), ['secondary']);
    assertResult(result, 24);
    // The same lines for the failed attempts (the delays double alike).
    const norm = (ls: readonly string[]): string[] =>
      ls.filter((l) => l.includes('masters failed') || l.includes('Failed to setup')).slice(0, 2);
    expect(norm(pair.cand.output)).toEqual(norm(pair.ref.output));
  }, 120_000);

  it('after the first transfer: the same answers and the same records transferred out', async () => {
    const p = pair!;
    writeFileSync(db, zone(2024010101, '192.0.2.80'));
    const port = primaryAddr.split(':')[1]!;
    const corefilePath = join(dir, 'Corefile');
    writeFileSync(
      corefilePath,
      `example.org:${port} {
  bind 127.0.0.2
  file ${db} {
    reload 1s
  }
  transfer {
    to *
    to 127.0.0.1:${p.ref.dns} 127.0.0.1:${p.cand.dns}
    source 127.0.0.2
  }
}
`,
    );
    primary = startLines('coredns', ['-conf', corefilePath], dir);
    await primary.waitFor(/^CoreDNS-/);
    const transferred = `[INFO] plugin/file: Transferred: example.org. from ${primaryAddr}`;
    await Promise.all([p.ref.waitFor(/Transferred: example\.org\./), p.cand.waitFor(/Transferred: example\.org\./)]);
    expect(p.cand.output).toContain(transferred);
    expect(p.ref.output).toContain(transferred);
    const result = newResult('secondary-pulled');
    await runQueries(p, result, generate(NAMES, TYPES), ['secondary']);
    assertResult(result, NAMES.length * TYPES.length * 6);
    expect(await axfrLines(p.cand.dns)).toEqual(await axfrLines(p.ref.dns));
  }, 180_000);

  it('NOTIFY: answered from the primary address, dropped from a stranger', async () => {
    const p = pair!;
    const result = newResult('secondary-notify');
    const queries: QuerySpec[] = [
      {
        name: 'example.org',
        type: 'SOA',
        proto: 'udp',
        id: 4001,
        raw: notify(4001),
        label: 'NOTIFY from the primary',
        source: '127.0.0.2',
      },
      {
        name: 'example.org',
        type: 'SOA',
        proto: 'tcp',
        id: 4002,
        raw: notify(4002),
        label: 'NOTIFY from the primary',
        source: '127.0.0.2',
      },
    ];
    await runQueries(p, result, queries, ['secondary']);
    assertResult(result, 2);
    // From 127.0.0.1 (not a primary): logged and not answered, by both.
    const [ref, cand] = await Promise.all([
      exchange(p.ref.dns, notify(4003), 'udp', 1000),
      exchange(p.cand.dns, notify(4003), 'udp', 1000),
    ]);
    expect(ref).toBeNull();
    expect(cand).toBeNull();
    const dropped = /Dropping notify from 127\.0\.0\.1 for example\.org\.$/;
    expect((await p.cand.waitFor(dropped)).trim()).toBe((await p.ref.waitFor(dropped)).trim());
  }, 60_000);

  it("after the primary's zone changed and it notified both: the same new answers", async () => {
    const p = pair!;
    writeFileSync(db, zone(2024010102, '192.0.2.99'));
    const has = async (port: number): Promise<boolean> => {
      const r = await exchange(port, encode({ name: 'web.example.org', type: 'A', id: 9 }), 'udp', 1000);
      return r !== null && rrLines(decode(r).answers).includes('web.example.org. 60 IN A 192.0.2.99');
    };
    await waitFor(
      'both secondaries to pull the new serial',
      async () => (await has(p.ref.dns)) && (await has(p.cand.dns)),
      {
        everyMs: 200,
      },
    );
    const checking = /Notify from 127\.0\.0\.2 for example\.org\.: checking transfer$/;
    await Promise.all([p.ref.waitFor(checking), p.cand.waitFor(checking)]);
    const result = newResult('secondary-changed');
    await runQueries(p, result, generate(['web.example.org', 'example.org', 'www.example.org'], ['A', 'SOA']), [
      'secondary',
    ]);
    assertResult(result, 36);
    expect(await axfrLines(p.cand.dns)).toEqual(await axfrLines(p.ref.dns));
  }, 120_000);
});

// ---- Catalog zones (RFC 9432) -------------------------------------------------------------------

function catalogZone(serial: number, members: Record<string, string>): string {
  const lines = [
    '$ORIGIN catalog.example.',
    '$TTL 0',
    `@ IN SOA invalid. hostmaster.invalid. ( ${serial} 3600 600 86400 0 )`,
    '  IN NS invalid.',
    'version IN TXT "2"',
    'group.m1.zones IN TXT "blue"',
  ];
  for (const [id, zone] of Object.entries(members)) lines.push(`${id}.zones IN PTR ${zone}`);
  return `${lines.join('\n')}\n`;
}

function memberZone(origin: string, www: string): string {
  return `$ORIGIN ${origin}
$TTL 3600
@ IN SOA ns1 hostmaster ( 1 3600 600 86400 300 )
  IN NS ns1
  IN MX 10 mail
ns1 A 192.0.2.53
mail A 192.0.2.25
www A ${www}
alias CNAME www
*.wild TXT "wildcard"
`;
}

const MEMBER_NAMES = [
  'a.test',
  'www.a.test',
  'alias.b.test',
  'x.wild.b.test',
  'nosuch.a.test',
  'www.c.test',
  'www.x.other',
  'catalog.example',
  'version.catalog.example',
  'm1.zones.catalog.example',
];
const MEMBER_TYPES = ['A', 'SOA', 'NS', 'MX', 'TXT', 'PTR'];

describe('differential: secondary catalog', () => {
  const missing = missingBinaries();
  let pair: Pair | null = null;
  let primary: LineProcess | null = null;
  const dir = mkdtempSync(join(tmpdir(), 'diff-secondary-catalog-'));
  const db = (origin: string): string => join(dir, `db.${origin}`);

  afterAll(async () => {
    await pair?.stop();
    await primary?.stop();
  });

  /**
   * The catalog lines of a server (members added, removed, skipped; catalogs parsed), each once, in
   * the order first logged: a NOTIFY racing the first transfer makes CoreDNS transfer (and log) a
   * catalog twice, which is timing, not behaviour; the first transfer's retries are timing too.
   */
  const catalogLines = (ls: readonly string[]): string[] => [
    ...new Set(
      ls
        .filter((l) => l.includes('plugin/secondary') && l.includes('catalog') && !l.includes('masters failed'))
        .map((l) => l.trim()),
    ),
  ];

  it('members of a catalog pulled from one primary: the same members, answers and log lines', async () => {
    if (missing) throw new Error(missing);
    const primaryPort = await freePort('127.0.0.2');
    const primaryAddr = `127.0.0.2:${primaryPort}`;
    pair = await startPair({
      corefile: `.:{{DNS}} {
  secondary catalog.example {
    transfer from ${primaryAddr}
    catalog test
  }
}
`,
      oneThread: false,
    });
    const p = pair;
    const zones: Record<string, string> = {
      'catalog.example.': catalogZone(1, { m1: 'a.test.', m2: 'b.test.', m3: 'x.other.' }),
      'a.test.': memberZone('a.test.', '192.0.2.1'),
      'b.test.': memberZone('b.test.', '192.0.2.2'),
      'c.test.': memberZone('c.test.', '192.0.2.3'),
      'x.other.': memberZone('x.other.', '192.0.2.9'),
    };
    let corefile = '';
    for (const [origin, text] of Object.entries(zones)) {
      writeFileSync(db(origin), text);
      corefile += `${origin}:${primaryPort} {
  bind 127.0.0.2
  file ${db(origin)} {
    reload 1s
  }
  transfer {
    to *
    to 127.0.0.1:${p.ref.dns} 127.0.0.1:${p.cand.dns}
    source 127.0.0.2
  }
}
`;
    }
    const corefilePath = join(dir, 'Corefile');
    writeFileSync(corefilePath, corefile);
    primary = startLines('coredns', ['-conf', corefilePath], dir);
    await primary.waitFor(/^CoreDNS-/);
    const parsed = /Parsed catalog zone catalog\.example\. with 3 member zones$/;
    await Promise.all([p.ref.waitFor(parsed), p.cand.waitFor(parsed)]);
    // Each query from a fresh socket, several per name: the candidate's query threads each build
    // the catalog and its members from the main thread's transfers, and the kernel spreads
    // sockets over threads, so one answered query does not mean that every thread has the zone
    // yet (a thread without the catalog zone answered its names SERVFAIL in a loaded run).
    const members = (port: number) => async (): Promise<boolean> => {
      for (const [name, type] of [
        ['www.a.test', 'A'],
        ['www.b.test', 'A'],
        ['catalog.example', 'SOA'],
      ] as const) {
        for (let i = 0; i < 16; i++) {
          const r = await exchange(port, encode({ name, type, id: 11 }), 'udp', 1000);
          if (r === null || decode(r).answers.length !== 1) return false;
        }
      }
      return true;
    };
    await waitFor(
      'both secondaries to pull the members',
      async () => (await members(p.ref.dns)()) && (await members(p.cand.dns)()),
    );
    expect(catalogLines(p.cand.output)).toEqual(catalogLines(p.ref.output));
    const result = newResult('secondary-catalog');
    await runQueries(p, result, generate(MEMBER_NAMES, MEMBER_TYPES), ['secondary']);
    assertResult(result, MEMBER_NAMES.length * MEMBER_TYPES.length * 6);
  }, 120_000);

  it('after the catalog changed and the primary notified both: the same members and answers', async () => {
    const p = pair!;
    writeFileSync(db('catalog.example.'), catalogZone(2, { m1: 'a.test.', m3: 'x.other.', m4: 'c.test.' }));
    const removed = /Removed catalog member zone b\.test\. from catalog catalog\.example\.$/;
    await Promise.all([p.ref.waitFor(removed), p.cand.waitFor(removed)]);
    const has = (port: number) => async (): Promise<boolean> => {
      const r = await exchange(port, encode({ name: 'www.c.test', type: 'A', id: 12 }), 'udp', 1000);
      return r !== null && decode(r).answers.length === 1;
    };
    await waitFor('both secondaries to pull c.test', async () => (await has(p.ref.dns)()) && (await has(p.cand.dns)()));
    expect(catalogLines(p.cand.output)).toEqual(catalogLines(p.ref.output));
    const result = newResult('secondary-catalog-changed');
    await runQueries(p, result, generate(MEMBER_NAMES, MEMBER_TYPES), ['secondary']);
    assertResult(result, MEMBER_NAMES.length * MEMBER_TYPES.length * 6);
  }, 120_000);
});
