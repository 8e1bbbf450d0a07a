/**
 * Differential: the route53 plugin against CoreDNS 1.15.0 — both servers read the same hosted zones
 * from one moto_server (a local server speaking the Route 53 API; test/helpers/moto.ts), CoreDNS
 * through aws-sdk-go-v2's `AWS_ENDPOINT_URL_ROUTE_53` (its `aws_endpoint` option does not work in
 * 1.15.0: README, "Bugs"), clusterdns through the same variable. Record kinds, a wildcard sent as
 * Route 53 escapes it (`\052`), a set CoreDNS cannot read (skipped by both), a delegation with glue,
 * CNAMEs inside and outside the zones, two hosted zones of one name (private before public),
 * NXDOMAIN, NODATA and fallthrough; then a record changed in moto, seen by both after a refresh.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode } from '../../src/dns/message.js';
import { type MotoRecordSet, MotoServer, motoMissing } from '../helpers/moto.js';
import { rrLines } from '../helpers/records.js';
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
  type Variant,
} from './harness.js';

const soa = (zone: string, serial: number): MotoRecordSet => ({
  // moto's own SOA value is not a valid record (it prints a Python dict): both servers would skip it.
  name: zone,
  type: 'SOA',
  ttl: 900,
  values: [`ns-1.awsdns-01.org. hostmaster.${zone} ${serial} 7200 900 1209600 86400`],
});

const PUBLIC: MotoRecordSet[] = [
  soa('example.org.', 1),
  { name: 'www.example.org.', type: 'A', ttl: 300, values: ['192.0.2.10', '192.0.2.11'] },
  { name: 'www.example.org.', type: 'AAAA', ttl: 300, values: ['2001:db8::10'] },
  { name: 'alias.example.org.', type: 'CNAME', ttl: 60, values: ['www.example.org.'] },
  { name: 'out.example.org.', type: 'CNAME', ttl: 60, values: ['target.other.test.'] },
  { name: 'example.org.', type: 'MX', ttl: 3600, values: ['10 mail.example.org.', '20 mail2.example.org.'] },
  { name: 'mail.example.org.', type: 'A', ttl: 300, values: ['192.0.2.25'] },
  { name: 'example.org.', type: 'TXT', ttl: 300, values: ['"v=spf1 -all"', '"two" "strings"'] },
  { name: '_sip._tcp.example.org.', type: 'SRV', ttl: 300, values: ['10 60 5060 www.example.org.'] },
  { name: '\\052.w.example.org.', type: 'A', ttl: 120, values: ['192.0.2.42'] },
  { name: 'x\\137y.example.org.', type: 'A', ttl: 120, values: ['192.0.2.99'] },
  { name: 'sub.example.org.', type: 'NS', ttl: 3600, values: ['ns.sub.example.org.'] },
  { name: 'ns.sub.example.org.', type: 'A', ttl: 3600, values: ['192.0.2.53'] },
  { name: 'caa.example.org.', type: 'CAA', ttl: 300, values: ['0 issue "letsencrypt.org"'] },
  { name: 'change.example.org.', type: 'A', ttl: 30, values: ['192.0.2.1'] },
];
const PRIVATE: MotoRecordSet[] = [
  soa('example.org.', 7),
  { name: 'internal.example.org.', type: 'A', ttl: 30, values: ['10.0.0.1'] },
  { name: 'www.example.org.', type: 'TXT', ttl: 30, values: ['"private"'] },
];
const GOV: MotoRecordSet[] = [
  soa('example.gov.', 3),
  { name: 'www.example.gov.', type: 'A', ttl: 300, values: ['198.51.100.1'] },
];

const NAMES = [
  'example.org',
  'www.example.org',
  'alias.example.org',
  'out.example.org',
  'mail.example.org',
  '_sip._tcp.example.org',
  'a.w.example.org',
  'b.c.w.example.org',
  'w.example.org',
  'x_y.example.org',
  'sub.example.org',
  'host.sub.example.org',
  'caa.example.org',
  'internal.example.org',
  'nosuch.example.org',
  'change.example.org',
  'www.example.gov',
  'nosuch.example.gov',
];
const TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'SRV', 'NS', 'SOA', 'CAA'];
const VARIANTS: readonly Variant[] = [
  { proto: 'udp' },
  { proto: 'udp', edns: 1232, do: true },
  { proto: 'tcp', edns: 4096, mixed: true },
];
const PLUGINS = ['route53', 'hosts', 'whoami'];

describe('differential: route53', () => {
  const missing = missingBinaries() ?? motoMissing();
  let moto: MotoServer;
  let pair: Pair;
  let publicId = '';
  const saved: Record<string, string | undefined> = {};

  it('has CoreDNS 1.15.0, moto_server and a build to compare', () => {
    expect(missing).toBeNull();
  });

  beforeAll(async () => {
    if (missing) return;
    moto = await MotoServer.start();
    publicId = await moto.createZone('example.org.');
    const privateId = await moto.createZone('example.org.');
    const govId = await moto.createZone('example.gov.');
    await moto.change(publicId, PUBLIC);
    await moto.change(privateId, PRIVATE);
    await moto.change(govId, GOV);
    // Both servers read credentials, region and endpoint from the environment they inherit.
    const env = {
      AWS_ENDPOINT_URL_ROUTE_53: moto.url,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: MotoServer.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: MotoServer.credentials.secretAccessKey,
      AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
      AWS_CONFIG_FILE: '/nonexistent',
    };
    for (const [k, v] of Object.entries(env)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    pair = await startPair(
      {
        corefile: `example.org:{{DNS}} example.gov:{{DNS}} {
  route53 example.org.:${privateId} example.org.:${publicId} {
    refresh 1s
  }
  route53 example.gov.:${govId} {
    fallthrough
  }
  whoami
}
other.test:{{DNS}} {
  hosts {
    192.0.2.200 target.other.test
  }
}
`,
      },
      { name: 'internal.example.org', type: 'A' },
    );
  }, 120_000);

  afterAll(async () => {
    await pair?.stop();
    await moto?.stop();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    const t = totalCompared();
    process.stdout.write(`differential route53: ${t.compared} replies compared over ${t.cases} cases\n`);
  });

  const ask = async (port: number, name: string, type = 'A'): Promise<string[]> => {
    const r = await exchange(port, encode({ name, type, id: 7 }), 'udp');
    return r ? rrLines(decode(r).answers) : [];
  };

  it('answers every record kind, wildcard, delegation, CNAME, NXDOMAIN and NODATA as CoreDNS', async () => {
    // Both read moto: the reference's answer is the data's, not an error both share.
    expect(await ask(pair.ref.dns, 'mail.example.org')).toEqual(['mail.example.org. 300 IN A 192.0.2.25']);
    // The private zone, first, has www.example.org with another type: NODATA, the public one unasked.
    expect(await ask(pair.ref.dns, 'www.example.org')).toEqual([]);
    expect(await ask(pair.ref.dns, 'a.w.example.org')).toEqual(['a.w.example.org. 120 IN A 192.0.2.42']);
    const result = newResult('route53');
    const queries = generate(NAMES, TYPES, VARIANTS, 53);
    await runQueries(pair, result, queries, PLUGINS, { concurrency: 8 });
    assertResult(result, queries.length);
    // The set CoreDNS cannot read is logged by both.
    const warn =
      /\[WARNING\] plugin\/route53: Failed to process resource record set: failed to unescape `x\\137y\.example\.org\.' name: invalid character: \\0137/;
    expect(pair.ref.output.some((l) => warn.test(l))).toBe(true);
    expect(pair.cand.output.some((l) => warn.test(l))).toBe(true);
  }, 180_000);

  it('serves a change made in Route 53 after the next refresh, as CoreDNS', async () => {
    await moto.change(publicId, [{ name: 'change.example.org.', type: 'A', ttl: 30, values: ['192.0.2.2'] }]);
    // clusterdns's query threads each refresh their own copy (docs/multicore.md): wait until a run
    // of fresh connections (spread over the threads by SO_REUSEPORT) all see the change.
    const seen = async (port: number, proto: 'udp' | 'tcp'): Promise<boolean> => {
      const r = await exchange(port, encode({ name: 'change.example.org', type: 'A', id: 8 }), proto);
      return r !== null && rrLines(decode(r).answers).includes('change.example.org. 30 IN A 192.0.2.2');
    };
    for (const p of [pair.ref, pair.cand]) {
      await waitFor(`${p.name} to serve the changed record`, async () => {
        for (let i = 0; i < 16; i++) if (!(await seen(p.dns, i % 2 ? 'tcp' : 'udp'))) return false;
        return true;
      });
    }
    const result = newResult('route53-changed');
    const queries = generate(['change.example.org', 'www.example.org'], TYPES, VARIANTS, 9);
    await runQueries(pair, result, queries, PLUGINS, { concurrency: 8 });
    assertResult(result, queries.length);
  }, 60_000);
});
