/**
 * Differential: the azure plugin against CoreDNS 1.15.0 — both servers read the same zones from one
 * stand-in Azure DNS (test/helpers/azure.ts: Azure AD's token endpoint and the Resource Manager
 * list calls, in the REST reference's and CoreDNS's own test fixtures' JSON; no Azure emulator for
 * DNS exists). CoreDNS's SDK client always calls https://management.azure.com, so it goes there
 * through the stand-in as HTTPS proxy (HTTPS_PROXY, a throw-away CA as SSL_CERT_FILE) and fetches
 * its token from it through an AZURESTACKCLOUD environment file; clusterdns, which uses the
 * environment's Resource Manager endpoint, reaches it directly through the same file. A public zone
 * (every record kind, paged) and a private zone, NXDOMAIN, NODATA, CNAME, delegation, fallthrough.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode } from '../../src/dns/message.js';
import { CLIENT, FakeAzure, SECRET, SUBSCRIPTION, TENANT } from '../helpers/azure.js';
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

const set = (name: string, properties: Record<string, unknown>): unknown => ({
  id: `/subscriptions/${SUBSCRIPTION}/resourceGroups/rg1/providers/Microsoft.Network/dnszones/example.org/X/${name}`,
  name,
  type: 'Microsoft.Network/dnszones/X',
  etag: '00000000-0000-0000-0000-000000000000',
  properties,
});

const PUBLIC = [
  set('@', {
    fqdn: 'example.org.',
    TTL: 3600,
    SOARecord: {
      host: 'ns1-06.azure-dns.com.',
      email: 'azuredns-hostmaster.microsoft.com',
      serialNumber: 1,
      refreshTime: 3600,
      retryTime: 300,
      expireTime: 2419200,
      minimumTTL: 300,
    },
  }),
  set('@', {
    fqdn: 'example.org.',
    TTL: 172800,
    NSRecords: [{ nsdname: 'ns1-06.azure-dns.com.' }, { nsdname: 'ns2-06.azure-dns.net.' }],
  }),
  set('@', {
    fqdn: 'example.org.',
    TTL: 300,
    ARecords: [{ ipv4Address: '1.2.3.4' }],
    MXRecords: [{ preference: 10, exchange: 'mail.example.org' }],
  }),
  set('@', { fqdn: 'example.org.', TTL: 300, AAAARecords: [{ ipv6Address: '2001:db8:85a3::8a2e:370:7334' }] }),
  set('www', {
    fqdn: 'www.example.org.',
    TTL: 300,
    ARecords: [{ ipv4Address: '1.2.3.4' }, { ipv4Address: '1.2.3.5' }],
  }),
  set('cname', { fqdn: 'cname.example.org.', TTL: 300, CNAMERecord: { cname: 'example.org' } }),
  set('mail', { fqdn: 'mail.example.org.', TTL: 300, ARecords: [{ ipv4Address: '192.0.2.25' }] }),
  set('ptr', { fqdn: 'ptr.example.org.', TTL: 300, PTRRecords: [{ ptrdname: 'www.ptr-example.com' }] }),
  set('_xmpp._tcp', {
    fqdn: '_xmpp._tcp.example.org.',
    TTL: 300,
    SRVRecords: [
      { priority: 1, weight: 10, port: 5269, target: 'srv-1.example.com' },
      { priority: 1, weight: 10, port: 5269, target: 'srv-2.example.com.' },
    ],
  }),
  set('txt', {
    fqdn: 'txt.example.org.',
    TTL: 300,
    TXTRecords: [{ value: ['TXT for example.org'] }, { value: ['two', 'strings "quoted"'] }],
  }),
  set('*.w', { fqdn: '*.w.example.org.', TTL: 120, ARecords: [{ ipv4Address: '192.0.2.42' }] }),
  set('sub', { fqdn: 'sub.example.org.', TTL: 3600, NSRecords: [{ nsdname: 'ns.sub.example.org.' }] }),
  set('ns.sub', { fqdn: 'ns.sub.example.org.', TTL: 3600, ARecords: [{ ipv4Address: '192.0.2.53' }] }),
  set('caa', {
    fqdn: 'caa.example.org.',
    TTL: 300,
    caaRecords: [{ flags: 0, tag: 'issue', value: 'letsencrypt.org' }],
  }),
];
const PRIVATE = [
  set('@', {
    fqdn: 'internal.example.',
    ttl: 60,
    soaRecord: {
      host: 'azureprivatedns.net',
      email: 'azureprivatedns-host.microsoft.com',
      serialNumber: 1,
      refreshTime: 3600,
      retryTime: 300,
      expireTime: 2419200,
      minimumTtl: 10,
    },
  }),
  set('db', {
    fqdn: 'db.internal.example.',
    ttl: 10,
    aRecords: [{ ipv4Address: '10.0.0.4' }],
    aaaaRecords: [{ ipv6Address: 'fd00::4' }],
  }),
  set('alias', { fqdn: 'alias.internal.example.', ttl: 10, cnameRecord: { cname: 'db.internal.example' } }),
];

const NAMES = [
  'example.org',
  'www.example.org',
  'cname.example.org',
  'mail.example.org',
  'ptr.example.org',
  '_xmpp._tcp.example.org',
  'txt.example.org',
  'a.w.example.org',
  'sub.example.org',
  'host.sub.example.org',
  'caa.example.org',
  'nosuch.example.org',
  'internal.example',
  'db.internal.example',
  'alias.internal.example',
  'nosuch.internal.example',
  'www.example.gov',
];
const TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'SRV', 'NS', 'SOA', 'PTR', 'CAA'];
const VARIANTS: readonly Variant[] = [
  { proto: 'udp' },
  { proto: 'udp', edns: 1232, do: true },
  { proto: 'tcp', edns: 4096, mixed: true },
];
const PLUGINS = ['azure', 'whoami'];

describe('differential: azure', () => {
  const missing = missingBinaries();
  let azure: FakeAzure;
  let pair: Pair;
  const saved: Record<string, string | undefined> = {};

  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });

  beforeAll(async () => {
    if (missing) return;
    azure = await FakeAzure.start();
    azure.publicZones.set('rg1/example.org', PUBLIC);
    azure.privateZones.set('rg2/internal.example', PRIVATE);
    azure.publicZones.set('rg3/example.gov', [PUBLIC[0]]);
    const env = {
      AZURE_ENVIRONMENT_FILEPATH: azure.environmentFile,
      HTTPS_PROXY: azure.url,
      https_proxy: azure.url,
      NO_PROXY: '',
      no_proxy: '',
      SSL_CERT_FILE: azure.caFile,
    };
    for (const [k, v] of Object.entries(env)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    const opts = `    tenant ${TENANT}
    client ${CLIENT}
    secret ${SECRET}
    subscription ${SUBSCRIPTION}
    environment AZURESTACKCLOUD`;
    pair = await startPair(
      {
        corefile: `example.org:{{DNS}} internal.example:{{DNS}} example.gov:{{DNS}} {
  azure rg1:example.org rg3:example.gov {
${opts}
    fallthrough example.gov
  }
  azure rg2:internal.example {
    access private
  }
  whoami
}
`,
        // azure lists after the start without holding it (as CoreDNS); a query thread that joins
        // the listeners later answers SERVFAIL until its own first listing is in (README), which
        // this comparison of listed data is not about.
        oneThread: true,
      },
      { name: 'db.internal.example', type: 'A' },
    );
    // azure lists in the background after the start, and each of clusterdns's query threads lists
    // for its own copy (docs/multicore.md): wait until a run of fresh connections (spread over the
    // threads by SO_REUSEPORT) all get both zones.
    const listed = async (name: string, proto: 'udp' | 'tcp'): Promise<boolean> => {
      const r = await exchange(pair.cand.dns, encode({ name, type: 'A', id: 5 }), proto);
      return r !== null && decode(r).answers!.length > 0;
    };
    await waitFor('every clusterdns thread to have listed both zones', async () => {
      for (let i = 0; i < 16; i++) {
        if (!(await listed(i % 4 < 2 ? 'db.internal.example' : 'www.example.org', i % 2 ? 'tcp' : 'udp'))) return false;
      }
      return true;
    });
  }, 120_000);

  afterAll(async () => {
    await pair?.stop();
    await azure?.close();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    const t = totalCompared();
    process.stdout.write(`differential azure: ${t.compared} replies compared over ${t.cases} cases\n`);
  });

  it('answers public and private zones as CoreDNS', async () => {
    const r = await exchange(pair.ref.dns, encode({ name: 'www.example.org', type: 'A', id: 3 }), 'udp');
    expect(rrLines(decode(r!).answers)).toEqual([
      'www.example.org. 300 IN A 1.2.3.4',
      'www.example.org. 300 IN A 1.2.3.5',
    ]);
    // CoreDNS reached the Resource Manager through the proxy, clusterdns directly.
    expect(azure.requests.some((q) => q.host === 'management.azure.com')).toBe(true);
    expect(azure.requests.some((q) => q.host.startsWith('127.0.0.1') && q.path.includes('/dnsZones/'))).toBe(true);
    const result = newResult('azure');
    const queries = generate(NAMES, TYPES, VARIANTS, 67);
    await runQueries(pair, result, queries, PLUGINS, { concurrency: 8 });
    assertResult(result, queries.length);
  }, 180_000);
});
