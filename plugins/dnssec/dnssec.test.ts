/**
 * dnssec: setup errors as CoreDNS 1.15.0 prints them, key files of every algorithm, signatures that
 * verify with node:crypto, the black-lie bitmaps, the signature cache's bound and metrics, and
 * the DO bit (answers without it pass through untouched). AWS Secrets Manager keys are in
 * secretsmanager.test.ts; validation by delv and the comparison with CoreDNS in
 * test/differential/dnssec.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageRecords } from '../../src/dns/wirerecords.js';
import { readKeyPair, type SigningKey } from '../../src/dnssec/keys.js';
import { canonicalRRset, nameWire, signRRset, validAt } from '../../src/dnssec/rrsig.js';
import { runCorefile } from '../../test/helpers/corefile.js';
import { hasTool } from '../../test/helpers/spawn.js';
import { dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { ConfigError } from '../../src/corefile/types.js';
import { blackLieTypes } from './blacklies.js';
import { SignatureCache } from './cache.js';
import { dnssec } from './index.js';

let dir = '';
const bases: Record<string, string> = {};

function keygen(name: string, args: string[], zone = 'example.org'): void {
  bases[name] = join(dir, execFileSync('dnssec-keygen', ['-q', '-K', dir, ...args, zone], { encoding: 'utf8' }).trim());
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'dnssec-unit-'));
  if (!hasTool('dnssec-keygen')) return;
  keygen('p256', ['-a', 'ECDSAP256SHA256', '-f', 'KSK']);
  keygen('p384', ['-a', 'ECDSAP384SHA384']);
  keygen('ed25519', ['-a', 'ED25519']);
  keygen('rsa', ['-a', 'RSASHA256', '-b', '1024']);
  keygen('rsa512', ['-a', 'RSASHA512', '-b', '1024', '-f', 'KSK']);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The setup error of `text` (setup is async: secrets are fetched after parsing). */
async function setupErr(text: string): Promise<string> {
  try {
    await dnssec.setup(dispenserFor(text, 'dnssec'), setupContext({ zones: ['example.org.'] }));
  } catch (e) {
    if (e instanceof ConfigError) return e.describe();
    throw e;
  }
  throw new Error(`no error for ${text}`);
}

describe('dnssec: setup', () => {
  it('has dnssec-keygen (bind9-utils)', () => {
    expect(hasTool('dnssec-keygen')).toBe(true);
  });
  it.each([
    ['dnssec {\n foo bar\n}', "plugin/dnssec: Corefile:2 - Error during parsing: unknown property 'foo'"],
    [
      'dnssec {\n cache_capacity\n}',
      "plugin/dnssec: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'cache_capacity'",
    ],
    ['dnssec {\n cache_capacity abc\n}', 'plugin/dnssec: strconv.Atoi: parsing "abc": invalid syntax'],
    [
      'dnssec {\n key\n}',
      "plugin/dnssec: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'key'",
    ],
    [
      'dnssec {\n key file\n}',
      "plugin/dnssec: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'file'",
    ],
    ['dnssec {\n key file /nonexistent/Kx\n}', 'plugin/dnssec: open /nonexistent/Kx.key: no such file or directory'],
    ['dnssec {\n key blah x\n}', "plugin/dnssec: Corefile:2 - Error during parsing: unknown property 'x'"],
    ['dnssec\ndnssec', 'plugin/dnssec: this plugin can only be used once per Server Block'],
  ])('%j', async (text, want) => {
    expect(await setupErr(text)).toBe(want);
  });
  it('a key whose owner is above none of the zones', async () => {
    const base = bases.p256!;
    const k = readKeyPair(base);
    expect(await setupErr(`dnssec other.org {\n key file ${base}.key\n}`)).toBe(
      `plugin/dnssec: key example.org. (keyid: ${k.tag}) can not sign any of the zones`,
    );
    // A key of a parent signs its subzones.
    await expect(
      dnssec.setup(dispenserFor(`dnssec sub.example.org {\n key file ${base}.private\n}`, 'dnssec'), setupContext()),
    ).resolves.toBeTypeOf('function');
  });
});

describe('dnssec: keys and signatures', () => {
  const rrset = [
    { owner: nameWire('WWW.example.org.'), type: 1, class: 1, ttl: 30, rdata: Buffer.of(192, 0, 2, 3) },
    { owner: nameWire('www.example.org.'), type: 1, class: 1, ttl: 30, rdata: Buffer.of(192, 0, 2, 1) },
    { owner: nameWire('www.example.org.'), type: 1, class: 1, ttl: 30, rdata: Buffer.of(192, 0, 2, 1) },
  ];
  it.each(['p256', 'p384', 'ed25519', 'rsa', 'rsa512'])(
    '%s: reads the pair and signs what the public key verifies',
    (name) => {
      const key: SigningKey = readKeyPair(bases[name]!);
      expect(key.owner).toBe('example.org.');
      const now = Math.floor(Date.now() / 1000);
      const rdata = signRRset(rrset, key, {
        signer: 'Example.ORG.',
        origTtl: 3600,
        inception: now - 10,
        expiration: now + 10,
      });
      expect(rdata.readUInt16BE(0)).toBe(1);
      expect(rdata[2]).toBe(key.algorithm);
      expect(rdata[3]).toBe(3);
      expect(rdata.readUInt16BE(16)).toBe(key.tag);
      const signer = nameWire('example.org.');
      expect(rdata.subarray(18, 18 + signer.length)).toEqual(signer);
      const head = rdata.subarray(0, 18 + signer.length);
      const data = Buffer.concat([head, canonicalRRset(rrset, 3600)]);
      // Duplicates go, names are lower-cased, 192.0.2.1 sorts first.
      expect(canonicalRRset(rrset, 3600).length).toBe(2 * (17 + 10 + 4));
      const pub = createPublicKey(key.privateKey);
      const sig = rdata.subarray(head.length);
      const alg = { 13: 'sha256', 14: 'sha384', 8: 'sha256', 10: 'sha512', 15: null }[key.algorithm] ?? null;
      const ok =
        key.algorithm === 13 || key.algorithm === 14
          ? verify(alg, data, { key: pub, dsaEncoding: 'ieee-p1363' }, sig)
          : verify(alg, data, pub, sig);
      expect(ok).toBe(true);
      expect(validAt(rdata, now)).toBe(true);
      expect(validAt(rdata, now + 11)).toBe(false);
    },
  );
});

describe('dnssec: black lies', () => {
  it('bitmaps as CoreDNS: the asked type is left out of denials, except NSEC', () => {
    expect(blackLieTypes(1, false, 'NXDOMAIN')).not.toContain(1);
    expect(blackLieTypes(28, false, 'NODATA')).not.toContain(28);
    expect(blackLieTypes(47, false, 'NODATA')).toContain(47);
    expect(blackLieTypes(1, false, 'DELEGATION')).toContain(1);
    expect(blackLieTypes(43, false, 'NODATA')).toContain(2);
    expect(blackLieTypes(15, true, 'NODATA')).not.toContain(15);
    expect(blackLieTypes(15, true, 'NODATA')).toContain(48);
  });
});

describe('dnssec: signature cache', () => {
  it('is bounded by 256 shards of capacity/256 (at least 4)', () => {
    const c = new SignatureCache(10);
    const sig = { owner: Buffer.of(0), class: 1, ttl: 1, rdata: Buffer.alloc(20) };
    sig.rdata.writeUInt32BE(2 ** 32 - 1, 8);
    for (let i = 0; i < 5000; i++) c.add(`k${i}`, [sig]);
    expect(c.size).toBeLessThanOrEqual(1024);
    expect(c.size).toBeGreaterThan(900);
  });

  it('signs with DO only, counts hits and misses, reports its size', async () => {
    const base = bases.p256!;
    const zone = '$ORIGIN example.org.\n@ 3600 IN SOA ns. h. 1 2 3 4 5\nwww IN A 192.0.2.1\n';
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(dir, 'db'), zone);
    const run = await runCorefile(
      `example.org {\n  dnssec {\n    key file ${base}\n  }\n  file ${join(dir, 'db')}\n}\n`,
    );
    try {
      const plain = await run.ask('www.example.org', 'A', { edns: 1232 });
      expect(plain.answers.map((a) => a.type)).toEqual(['A']);
      const signed = await run.ask('www.example.org', 'A', { edns: 1232, do: true });
      expect(signed.answers.map((a) => a.type)).toEqual(['A', 'RRSIG']);
      const again = await run.ask('www.example.org', 'A', { edns: 1232, do: true });
      expect(again.answers.map((a) => a.type)).toEqual(['A', 'RRSIG']);
      const denial = await run.ask('nope.example.org', 'A', { edns: 1232, do: true });
      expect(denial.authorities.map((a) => a.type)).toEqual(['SOA', 'RRSIG', 'RRSIG', 'NSEC']);
      const { registry } = await import('../../src/metrics/registry.js');
      const text = await registry.metrics();
      expect(text).toMatch(/coredns_dnssec_cache_hits_total\{server="dns:\/\/:53"\} 1\n/);
      expect(text).toMatch(/coredns_dnssec_cache_misses_total\{server="dns:\/\/:53"\} 3\n/);
      expect(text).toMatch(/coredns_dnssec_cache_entries\{server="dns:\/\/:53",type="signature"\} 3\n/);
      expect(messageRecords(Buffer.alloc(12))).toEqual([]);
    } finally {
      await run.stop();
    }
  });
});

/** After the cache test: it shares the metrics registry, whose counts that test checks. */
describe('dnssec: root', () => {
  it("reads a relative key file from the block's root, as CoreDNS does", async () => {
    const name = basename(bases.p256!);
    writeFileSync(join(dir, 'db.root'), '$ORIGIN example.org.\n@ 3600 IN SOA ns. h. 1 2 3 4 5\nwww IN A 192.0.2.1\n');
    const run = await runCorefile(
      `example.org {\n  root ${dir}\n  dnssec {\n    key file ${name}.key\n  }\n  file db.root\n}\n`,
    );
    try {
      const signed = await run.ask('www.example.org', 'A', { edns: 1232, do: true });
      expect(signed.answers.map((a) => a.type)).toEqual(['A', 'RRSIG']);
    } finally {
      await run.stop();
    }
    // Without root the relative name is looked for in the working directory.
    expect(await setupErr(`dnssec {\n key file ${name}\n}`)).toBe(
      `plugin/dnssec: open ${name}.key: no such file or directory`,
    );
  });
});
