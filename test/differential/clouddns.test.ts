/**
 * Differential: the clouddns plugin against CoreDNS 1.15.0 — both servers read the same managed
 * zones from one stand-in Cloud DNS (test/helpers/clouddns.ts: the token endpoint and the two REST
 * v1 calls, the API reference's JSON; no emulator for Cloud DNS exists) through the plugin's
 * `endpoint`, authenticating with one service-account key whose `token_uri` is that server (CoreDNS's
 * Google client signs the JWT and exchanges it, as clusterdns does). Record kinds, CNAME/PTR values
 * without their dot, a wildcard, paging, two managed zones of one name, a record that does not parse
 * (the rest of that listing dropped by both), NXDOMAIN, NODATA, fallthrough; then a change after a
 * refresh.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode } from '../../src/dns/message.js';
import { FakeCloudDNS, type GoogleRecordSet } from '../helpers/clouddns.js';
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

const soa = (zone: string, serial: number): GoogleRecordSet => ({
  name: zone,
  type: 'SOA',
  ttl: 21600,
  rrdatas: [`ns-cloud-a1.googledomains.com. cloud-dns-hostmaster.google.com. ${serial} 21600 3600 259200 300`],
});

const PUBLIC: GoogleRecordSet[] = [
  soa('example.org.', 1),
  {
    name: 'example.org.',
    type: 'NS',
    ttl: 21600,
    rrdatas: ['ns-cloud-a1.googledomains.com.', 'ns-cloud-a2.googledomains.com.'],
  },
  { name: 'www.example.org.', type: 'A', ttl: 300, rrdatas: ['192.0.2.10', '192.0.2.11'] },
  { name: 'www.example.org.', type: 'AAAA', ttl: 300, rrdatas: ['2001:db8::10'] },
  { name: 'alias.example.org.', type: 'CNAME', ttl: 60, rrdatas: ['www.example.org'] },
  { name: 'out.example.org.', type: 'CNAME', ttl: 60, rrdatas: ['target.other.test.'] },
  { name: 'example.org.', type: 'MX', ttl: 3600, rrdatas: ['10 mail.example.org.'] },
  { name: 'mail.example.org.', type: 'A', ttl: 300, rrdatas: ['192.0.2.25'] },
  { name: 'example.org.', type: 'TXT', ttl: 300, rrdatas: ['"v=spf1 -all"'] },
  { name: '_sip._tcp.example.org.', type: 'SRV', ttl: 300, rrdatas: ['10 60 5060 www.example.org.'] },
  { name: '*.w.example.org.', type: 'A', ttl: 120, rrdatas: ['192.0.2.42'] },
  { name: 'sub.example.org.', type: 'NS', ttl: 3600, rrdatas: ['ns.sub.example.org.'] },
  { name: 'ns.sub.example.org.', type: 'A', ttl: 3600, rrdatas: ['192.0.2.53'] },
  { name: 'change.example.org.', type: 'A', ttl: 30, rrdatas: ['192.0.2.1'] },
];
const PRIVATE: GoogleRecordSet[] = [
  soa('example.org.', 7),
  { name: 'internal.example.org.', type: 'A', ttl: 30, rrdatas: ['10.0.0.1'] },
  { name: 'www.example.org.', type: 'TXT', ttl: 30, rrdatas: ['"private"'] },
];
const REVERSE: GoogleRecordSet[] = [
  soa('2.0.192.in-addr.arpa.', 1),
  { name: '10.2.0.192.in-addr.arpa.', type: 'PTR', ttl: 300, rrdatas: ['www.example.org'] },
  { name: '11.2.0.192.in-addr.arpa.', type: 'A', ttl: 300, rrdatas: ['not-an-address'] },
  { name: '12.2.0.192.in-addr.arpa.', type: 'PTR', ttl: 300, rrdatas: ['after.bad.example.org.'] },
];

const NAMES = [
  'example.org',
  'www.example.org',
  'alias.example.org',
  'out.example.org',
  'mail.example.org',
  '_sip._tcp.example.org',
  'a.w.example.org',
  'sub.example.org',
  'host.sub.example.org',
  'internal.example.org',
  'nosuch.example.org',
  'change.example.org',
  '10.2.0.192.in-addr.arpa',
  '12.2.0.192.in-addr.arpa',
  'www.example.gov',
];
const TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'SRV', 'NS', 'SOA', 'PTR'];
const VARIANTS: readonly Variant[] = [
  { proto: 'udp' },
  { proto: 'udp', edns: 1232, do: true },
  { proto: 'tcp', edns: 4096, mixed: true },
];
const PLUGINS = ['clouddns', 'hosts', 'whoami'];

describe('differential: clouddns', () => {
  const missing = missingBinaries();
  let google: FakeCloudDNS;
  let pair: Pair;

  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });

  beforeAll(async () => {
    if (missing) return;
    google = await FakeCloudDNS.start();
    google.zones.set('proj/public', PUBLIC);
    google.zones.set('proj/private', PRIVATE);
    google.zones.set('proj/reverse', REVERSE);
    google.zones.set('other/gov', [soa('example.gov.', 1)]);
    const key = google.serviceAccountKey(mkdtempSync(join(tmpdir(), 'clouddns-')));
    pair = await startPair(
      {
        corefile: `example.org:{{DNS}} 2.0.192.in-addr.arpa:{{DNS}} example.gov:{{DNS}} {
  clouddns example.org.:proj:private example.org.:proj:public 2.0.192.in-addr.arpa.:proj:reverse {
    credentials ${key}
    endpoint ${google.url}/
    refresh 1s
  }
  clouddns example.gov:other:gov {
    credentials ${key}
    endpoint ${google.url}/
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
    await google?.close();
    const t = totalCompared();
    process.stdout.write(`differential clouddns: ${t.compared} replies compared over ${t.cases} cases\n`);
  });

  const ask = async (port: number, name: string, type = 'A'): Promise<string[]> => {
    const r = await exchange(port, encode({ name, type, id: 7 }), 'udp');
    return r ? rrLines(decode(r).answers) : [];
  };

  it('answers every record kind, wildcard, delegation, CNAME, NXDOMAIN and NODATA as CoreDNS', async () => {
    expect(await ask(pair.ref.dns, 'mail.example.org')).toEqual(['mail.example.org. 300 IN A 192.0.2.25']);
    expect(await ask(pair.ref.dns, '10.2.0.192.in-addr.arpa', 'PTR')).toEqual([
      '10.2.0.192.in-addr.arpa. 300 IN PTR www.example.org.',
    ]);
    const result = newResult('clouddns');
    const queries = generate(NAMES, TYPES, VARIANTS, 71);
    await runQueries(pair, result, queries, PLUGINS, { concurrency: 8 });
    assertResult(result, queries.length);
    // Both authenticated with the key: tokens were fetched with a valid JWT, and every API call carried one.
    expect(google.assertions).toBeGreaterThanOrEqual(2);
    expect(
      google.requests.filter((r) => r.path.startsWith('/dns/')).every((r) => r.auth.startsWith('Bearer ya29.')),
    ).toBe(true);
  }, 180_000);

  it('serves a change made in Cloud DNS after the next refresh, as CoreDNS', async () => {
    PUBLIC[PUBLIC.length - 1] = { name: 'change.example.org.', type: 'A', ttl: 30, rrdatas: ['192.0.2.2'] };
    const seen = async (port: number, proto: 'udp' | 'tcp'): Promise<boolean> => {
      const r = await exchange(port, encode({ name: 'change.example.org', type: 'A', id: 8 }), proto);
      return r !== null && rrLines(decode(r).answers).includes('change.example.org. 30 IN A 192.0.2.2');
    };
    // clusterdns's query threads each refresh their own copy (docs/multicore.md): wait until a run
    // of fresh connections (spread over the threads by SO_REUSEPORT) all see the change.
    for (const p of [pair.ref, pair.cand]) {
      await waitFor(`${p.name} to serve the changed record`, async () => {
        for (let i = 0; i < 16; i++) if (!(await seen(p.dns, i % 2 ? 'tcp' : 'udp'))) return false;
        return true;
      });
    }
    const result = newResult('clouddns-changed');
    const queries = generate(['change.example.org', 'www.example.org'], TYPES, VARIANTS, 9);
    await runQueries(pair, result, queries, PLUGINS, { concurrency: 8 });
    assertResult(result, queries.length);
  }, 60_000);
});
