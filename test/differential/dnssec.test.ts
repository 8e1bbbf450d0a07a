/**
 * Differential: the dnssec plugin against CoreDNS 1.15.0 with the same keys (made here with BIND's
 * dnssec-keygen), zone file and cluster. ECDSA signatures are randomised, so replies are compared
 * by structure: header flags, RCODE, every record as it is except an RRSIG, which is compared
 * without its signature and its inception/expiration (a second apart at most) — type covered,
 * algorithm, labels, original TTL, key tag, signer. Both servers' answers are then validated by
 * delv with the zone's KSK as trust anchor.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageRecords } from '../../src/dns/wirerecords.js';
import { motoServerPath, startMoto } from '../helpers/moto.js';
import { hasTool } from '../helpers/spawn.js';
import { encode, exchange, missingBinaries, mixCase, startPair, type Pair, type QuerySpec } from './harness.js';
import { seededRandom } from '../../src/util/prng.js';

const ZONE = `$ORIGIN example.org.
@ 3600 IN SOA ns1.example.org. admin.example.org. 1 7200 3600 1209600 3600
@ 3600 IN NS ns1.example.org.
@ 3600 IN MX 10 mail.example.org.
ns1 IN A 192.0.2.1
www IN A 192.0.2.2
www IN A 192.0.2.3
www IN AAAA 2001:db8::2
Mixed IN CNAME www
out IN CNAME www.example.net.
*.wild IN TXT "wild"
sub IN NS ns.sub
ns.sub IN A 192.0.2.9
secure IN NS ns.secure
secure IN DS 12345 13 2 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
ns.secure IN A 192.0.2.10
`;

/** Key files by role, made once for the file: name → [.key text, .private text]. */
const keys: Record<string, { base: string; key: string; priv: string }> = {};
let keyDir = '';

function keygen(args: string[], zone: string): { base: string; key: string; priv: string } {
  const base = execFileSync('dnssec-keygen', ['-q', '-K', keyDir, ...args, zone], { encoding: 'utf8' }).trim();
  return {
    base,
    key: readFileSync(join(keyDir, `${base}.key`), 'utf8'),
    priv: readFileSync(join(keyDir, `${base}.private`), 'utf8'),
  };
}

/** ASCII letters lower-cased (a copy). */
function lower(b: Buffer): Buffer {
  return Buffer.from(b.map((c) => (c >= 0x41 && c <= 0x5a ? c | 0x20 : c)));
}

/** Types whose RDATA holds names the servers may write in the question's letter case. */
const NAMED = new Set([2, 5, 6, 12, 15, 33, 39]);

/**
 * One reply as comparable lines. Names are compared without letter case: clusterdns's encoder
 * lets a name point at the question and so echo the client's case where CoreDNS writes the zone's
 * (docs/coredns-compatibility.md); DNSSEC validation is case-blind (RFC 4034 §6.2). Header facts
 * first, then each section's records sorted.
 */
function shape(b: Buffer | null): string[] {
  if (b === null) return ['no reply'];
  const flags = b.readUInt16BE(2);
  const out = [`flags=${(flags & 0x87f0).toString(16)} rcode=${flags & 0xf}`];
  const sections: string[][] = [[], [], []];
  for (const r of messageRecords(b)) {
    if (r.type === 41) {
      sections[2]!.push(`OPT do=${(r.ttl & 0x8000) !== 0}`);
      continue;
    }
    let rdata = (NAMED.has(r.type) ? lower(r.rdata) : r.rdata).toString('hex');
    if (r.type === 46) {
      // Type covered, algorithm, labels, original TTL | key tag and signer; no times, no signature.
      const signerEnd = r.rdata.indexOf(0, 18) + 1;
      rdata = `${r.rdata.subarray(0, 8).toString('hex')}|${r.rdata.subarray(16, signerEnd).toString('hex')}`;
    }
    if (r.type === 6) {
      // The kubernetes SOA serial is the server's start time: the names and timers only.
      let at = 0;
      for (let n = 0; n < 2; n++) {
        while (r.rdata[at] !== 0) at += r.rdata[at]! + 1;
        at++;
      }
      rdata = `${lower(r.rdata.subarray(0, at)).toString('hex')}|${r.rdata.subarray(at + 4).toString('hex')}`;
    }
    sections[r.section]!.push(`${lower(r.owner).toString('hex')} ${r.type} ${r.class} ${r.ttl} ${rdata}`);
  }
  for (const [i, s] of sections.entries()) out.push(`section ${i}: ${s.sort().join(' ; ')}`);
  return out;
}

function queries(names: readonly string[], types: readonly string[], seed: number): QuerySpec[] {
  const rnd = seededRandom(seed);
  const out: QuerySpec[] = [];
  for (const name of names)
    for (const type of types)
      for (const v of [
        { proto: 'udp' as const, edns: 1232, do: true },
        { proto: 'tcp' as const, edns: 4096, do: true, mixed: true },
        { proto: 'udp' as const, edns: 1232, do: false },
        { proto: 'udp' as const },
      ]) {
        out.push({
          name: 'mixed' in v ? mixCase(name, rnd) : name,
          type,
          proto: v.proto,
          edns: v.edns,
          do: v.do,
          id: Math.floor(rnd() * 65536),
        });
      }
  return out;
}

async function compareAll(pair: Pair, qs: readonly QuerySpec[]): Promise<string[]> {
  const problems: string[] = [];
  for (const q of qs) {
    const packet = encode(q);
    const [ref, cand] = await Promise.all([
      exchange(pair.ref.dns, packet, q.proto),
      exchange(pair.cand.dns, packet, q.proto),
    ]);
    const a = shape(ref);
    const b = shape(cand);
    if (JSON.stringify(a) !== JSON.stringify(b))
      problems.push(
        `${q.name} ${q.type} ${q.proto} do=${q.do === true}\n  coredns:    ${a.join('\n              ')}\n  clusterdns: ${b.join('\n              ')}`,
      );
  }
  return problems;
}

const execFileP = promisify(execFile);

/** A delv trust-anchor file for `zone` holding the DNSKEY of `anchorKey` (.key text); its path. */
function anchorFile(zone: string, anchorKey: string): string {
  const rr = anchorKey.split('\n').find((l) => l.length > 0 && !l.startsWith(';'))!;
  const f = rr.trim().split(/\s+/);
  const at = f.indexOf('DNSKEY');
  const anchors = join(
    keyDir,
    `anchor-${zone}${f
      .slice(at + 4)
      .join('')
      .slice(0, 8)
      .replace(/\W/g, '')}.conf`,
  );
  writeFileSync(
    anchors,
    `trust-anchors { ${zone} static-key ${f[at + 1]} ${f[at + 2]} ${f[at + 3]} "${f.slice(at + 4).join('')}"; };\n`,
  );
  return anchors;
}

/** delv's verdict on name/type from a server, with the trust anchors in `anchors` for `zone`. */
async function delv(port: number, zone: string, anchors: string, name: string, type: string): Promise<string> {
  try {
    const r = await execFileP('delv', ['@127.0.0.1', '-p', String(port), '-a', anchors, `+root=${zone}`, name, type], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    return `${r.stdout}${r.stderr}`;
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    return `${err.stdout ?? ''}${err.stderr ?? ''}`;
  }
}

/** delv on every (name, type, wanted verdict) against both servers at once; the failures. */
async function validateAll(
  pair: Pair,
  zone: string,
  anchorKey: string,
  checks: readonly (readonly [string, string, string])[],
): Promise<string[]> {
  const anchors = anchorFile(zone, anchorKey);
  const runs = checks.flatMap(([name, type, want]) =>
    [pair.ref, pair.cand].map(async (p) => {
      const out = await delv(p.dns, zone, anchors, name, type);
      return out.includes(want) ? null : `${p.name}: delv ${name} ${type}: want "${want}", got:\n${out}`;
    }),
  );
  return (await Promise.all(runs)).filter((x): x is string => x !== null);
}

const EXAMPLE_NAMES = [
  'example.org',
  'www.example.org',
  'mixed.example.org',
  'out.example.org',
  'nope.example.org',
  'a.b.wild.example.org',
  'x.sub.example.org',
  'sub.example.org',
  'secure.example.org',
  'ns1.example.org',
];

describe('differential: dnssec', () => {
  const missing = missingBinaries();
  const tools = hasTool('dnssec-keygen') && hasTool('delv');
  beforeAll(() => {
    if (!tools) return;
    keyDir = mkdtempSync(join(tmpdir(), 'dnssec-keys-'));
    keys.csk = keygen(['-a', 'ECDSAP256SHA256', '-f', 'KSK'], 'example.org');
    keys.ksk = keygen(['-a', 'ED25519', '-f', 'KSK'], 'example.org');
    keys.zsk = keygen(['-a', 'RSASHA256', '-b', '1024'], 'example.org');
    keys.k8s = keygen(['-a', 'ECDSAP384SHA384', '-f', 'KSK'], 'cluster.local');
  });
  afterAll(() => {
    if (keyDir !== '') rmSync(keyDir, { recursive: true, force: true });
  });
  it('has CoreDNS 1.15.0, a build, dnssec-keygen and delv', () => {
    expect(missing).toBeNull();
    expect(tools, 'dnssec-keygen and delv (bind9-utils, bind9-dnsutils)').toBe(true);
  });

  const fileCase = (id: string, roles: string[]): void => {
    it(id, async () => {
      expect(missing).toBeNull();
      const files: Record<string, string> = { 'db.example.org': ZONE };
      for (const r of roles) {
        files[`${keys[r]!.base}.key`] = keys[r]!.key;
        files[`${keys[r]!.base}.private`] = keys[r]!.priv;
      }
      const keyArgs = roles.map((r) => `{{DIR}}/${keys[r]!.base}`).join(' ');
      const pair = await startPair(
        {
          corefile: `example.org:{{DNS}} {\n  bind 127.0.0.1\n  dnssec {\n    key file ${keyArgs}\n  }\n  file {{DIR}}/db.example.org\n}\n`,
          files,
        },
        { name: 'www.example.org', type: 'A' },
      );
      try {
        const qs = queries(EXAMPLE_NAMES, ['A', 'AAAA', 'MX', 'NSEC', 'DS', 'DNSKEY', 'TXT'], 291);
        const problems = await compareAll(pair, qs);
        expect(problems, problems.slice(0, 5).join('\n')).toEqual([]);
        const failures = await validateAll(pair, 'example.org.', keys[roles[0]!]!.key, [
          ['www.example.org', 'A', 'fully validated'],
          ['mixed.example.org', 'A', 'fully validated'],
          ['example.org', 'DNSKEY', 'fully validated'],
          ['nope.example.org', 'A', 'negative response, fully validated'],
          ['www.example.org', 'TXT', 'negative response, fully validated'],
          ['a.b.wild.example.org', 'TXT', 'fully validated'],
        ]);
        expect(failures).toEqual([]);
      } finally {
        await pair.stop();
      }
    }, 120_000);
  };
  fileCase('dnssec-file-csk-ecdsa', ['csk']);
  fileCase('dnssec-file-split-ed25519-rsa', ['ksk', 'zsk']);

  it('dnssec-aws-secretsmanager (moto_server)', async () => {
    expect(missing).toBeNull();
    expect(motoServerPath(), 'moto_server (pip install "moto[server]")').not.toBeNull();
    const moto = await startMoto();
    const saved = { ...process.env };
    try {
      await moto.createSecret('example-csk', JSON.stringify({ key: keys.csk!.key, private: keys.csk!.priv }));
      // Both servers read the AWS_* environment the harness passes on (the Go SDK's default chain).
      Object.assign(process.env, moto.env);
      const pair = await startPair(
        {
          corefile: `example.org:{{DNS}} {\n  bind 127.0.0.1\n  dnssec {\n    key aws_secretsmanager example-csk\n  }\n  file {{DIR}}/db.example.org\n}\n`,
          files: { 'db.example.org': ZONE },
        },
        { name: 'www.example.org', type: 'A' },
      );
      try {
        const problems = await compareAll(
          pair,
          queries(['example.org', 'www.example.org', 'nope.example.org'], ['A', 'DNSKEY'], 293),
        );
        expect(problems, problems.slice(0, 5).join('\n')).toEqual([]);
        expect(
          await validateAll(pair, 'example.org.', keys.csk!.key, [['www.example.org', 'A', 'fully validated']]),
        ).toEqual([]);
      } finally {
        await pair.stop();
      }
    } finally {
      for (const k of Object.keys(moto.env)) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
      await moto.stop();
    }
  }, 120_000);

  it('dnssec-kubernetes-ecdsa384', async () => {
    expect(missing).toBeNull();
    const k = keys.k8s!;
    const pair = await startPair(
      {
        corefile: `cluster.local:{{DNS}} {\n  bind 127.0.0.1\n  dnssec {\n    key file {{DIR}}/${k.base}\n    cache_capacity 100\n  }\n  kubernetes cluster.local {\n    endpoint {{API}}\n  }\n}\n`,
        cluster: ['examples/cluster.yaml'],
        files: { [`${k.base}.key`]: k.key, [`${k.base}.private`]: k.priv },
      },
      { name: 'kubernetes.default.svc.cluster.local', type: 'A' },
    );
    try {
      const names = [
        'cluster.local',
        'kubernetes.default.svc.cluster.local',
        'svc1.testns.svc.cluster.local',
        '_http._tcp.svc1.testns.svc.cluster.local',
        'nosuch.testns.svc.cluster.local',
        'testns.svc.cluster.local',
        'nosuchns.svc.cluster.local',
      ];
      const problems = await compareAll(pair, queries(names, ['A', 'SRV', 'AAAA', 'DNSKEY', 'SOA'], 292));
      expect(problems, problems.slice(0, 5).join('\n')).toEqual([]);
      const failures = await validateAll(pair, 'cluster.local.', k.key, [
        ['kubernetes.default.svc.cluster.local', 'A', 'fully validated'],
        ['_http._tcp.svc1.testns.svc.cluster.local', 'SRV', 'fully validated'],
        ['nosuch.testns.svc.cluster.local', 'A', 'negative response, fully validated'],
      ]);
      expect(failures).toEqual([]);
    } finally {
      await pair.stop();
    }
  }, 120_000);
});
