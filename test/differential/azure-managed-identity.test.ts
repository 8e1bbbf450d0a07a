/**
 * Differential: azure with a managed identity instead of a service principal secret, against
 * CoreDNS 1.15.0 (whose go-autorest GetAuthorizer falls back to MSI when the Corefile has no
 * `secret`). Both read one zone from the stand-in Azure DNS (test/helpers/azure.ts), which also
 * issues managed identity tokens as the documented endpoints do:
 * - the instance metadata service: CoreDNS's adal always calls http://169.254.169.254, so it gets
 *   there through HTTP_PROXY pointing at the stand-in (Go's client honours it; the request arrives
 *   with the absolute URL); clusterdns through AZURE_POD_IDENTITY_AUTHORITY_HOST;
 * - App Service: MSI_ENDPOINT and MSI_SECRET, for both.
 * The Resource Manager is reached as in test/differential/azure.test.ts (CoreDNS through the
 * stand-in as HTTPS proxy, clusterdns through the AZURESTACKCLOUD environment file). Each case
 * compares the answers and checks that both asked the same token call and listed with its token.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { decode } from '../../src/dns/message.js';
import { FakeAzure, MSI_SECRET, SUBSCRIPTION } from '../helpers/azure.js';
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
const ZONE = [
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
  set('www', { fqdn: 'www.example.org.', TTL: 300, ARecords: [{ ipv4Address: '192.0.2.10' }] }),
  set('www', { fqdn: 'www.example.org.', TTL: 300, AAAARecords: [{ ipv6Address: '2001:db8::10' }] }),
  set('alias', { fqdn: 'alias.example.org.', TTL: 60, CNAMERecord: { cname: 'www.example.org.' } }),
  set('@', { fqdn: 'example.org.', TTL: 300, TXTRecords: [{ value: ['v=spf1 -all'] }] }),
];
const NAMES = ['example.org', 'www.example.org', 'alias.example.org', 'nosuch.example.org'];
const TYPES = ['A', 'AAAA', 'CNAME', 'TXT', 'SOA'];
const VARIANTS: readonly Variant[] = [{ proto: 'udp' }, { proto: 'tcp', edns: 4096 }];

describe('differential: azure with a managed identity', () => {
  const missing = missingBinaries();
  const saved: Record<string, string | undefined> = {};
  const stops: (() => Promise<void>)[] = [];

  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });

  afterEach(async () => {
    for (const s of stops.splice(0).reverse()) await s();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
      delete saved[k];
    }
  });

  const setEnv = (vars: Record<string, string | undefined>): void => {
    for (const [k, v] of Object.entries(vars)) {
      if (!(k in saved)) saved[k] = process.env[k];
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };

  /** Start both with `env` (and the Resource Manager routing), wait for the listing, compare. */
  const compare = async (label: string, azure: FakeAzure, env: Record<string, string | undefined>, client: string) => {
    setEnv({
      AZURE_ENVIRONMENT_FILEPATH: azure.environmentFile,
      HTTPS_PROXY: azure.url,
      https_proxy: azure.url,
      HTTP_PROXY: undefined,
      http_proxy: undefined,
      NO_PROXY: '',
      no_proxy: '',
      SSL_CERT_FILE: azure.caFile,
      MSI_ENDPOINT: undefined,
      MSI_SECRET: undefined,
      AZURE_POD_IDENTITY_AUTHORITY_HOST: undefined,
      ...env,
    });
    const pair: Pair = await startPair(
      {
        corefile: `example.org:{{DNS}} {
  azure rg1:example.org {
    subscription ${SUBSCRIPTION}
    environment AZURESTACKCLOUD${client ? `\n    client ${client}` : ''}
  }
}
`,
        oneThread: true,
      },
      { name: 'www.example.org', type: 'A' },
    );
    stops.push(() => pair.stop());
    const listed = async (p: number): Promise<boolean> => {
      const r = await exchange(p, encode({ name: 'www.example.org', type: 'A', id: 5 }), 'udp');
      return r !== null && decode(r).answers!.length > 0;
    };
    await waitFor(
      `both servers to have listed the zone (${label})`,
      async () => (await listed(pair.ref.dns)) && (await listed(pair.cand.dns)),
    );
    const result = newResult(`azure-${label}`);
    const queries = generate(NAMES, TYPES, VARIANTS, 37);
    await runQueries(pair, result, queries, ['azure'], { concurrency: 4 });
    assertResult(result, queries.length);
  };

  it('instance metadata (IMDS): both ask the same token call and list with it', async () => {
    const azure = await FakeAzure.start();
    stops.push(() => azure.close());
    azure.publicZones.set('rg1/example.org', ZONE);
    // CoreDNS: 169.254.169.254 through the proxy; clusterdns: azidentity's host variable.
    await compare(
      'imds',
      azure,
      { HTTP_PROXY: azure.url, http_proxy: azure.url, AZURE_POD_IDENTITY_AUTHORITY_HOST: azure.url },
      'uami-1',
    );
    const calls = azure.miRequests.filter((r) => r.path.includes('resource='));
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(new Set(calls.map((r) => `${r.path} ${r.metadata}`)).size).toBe(1);
    expect(calls[0]!.path).toContain('client_id=uami-1');
    const arm = azure.requests.filter((r) => r.path.includes('/dnsZones/'));
    expect(arm.some((r) => r.host === 'management.azure.com')).toBe(true);
    expect(arm.some((r) => r.host.startsWith('127.0.0.1'))).toBe(true);
    expect(arm.every((r) => r.auth.startsWith('Bearer eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.test-mi-'))).toBe(true);
  }, 180_000);

  it('App Service (MSI_ENDPOINT, MSI_SECRET): both ask the same token call and list with it', async () => {
    const azure = await FakeAzure.start();
    stops.push(() => azure.close());
    azure.publicZones.set('rg1/example.org', ZONE);
    await compare('appservice', azure, { MSI_ENDPOINT: `${azure.url}/msi/token`, MSI_SECRET }, '');
    expect(azure.miRequests.length).toBeGreaterThanOrEqual(2);
    expect(new Set(azure.miRequests.map((r) => `${r.path} ${r.secret}`)).size).toBe(1);
    const arm = azure.requests.filter((r) => r.path.includes('/dnsZones/'));
    expect(arm.every((r) => r.auth.startsWith('Bearer eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.test-mi-'))).toBe(true);
    const t = totalCompared();
    process.stdout.write(`differential azure managed identity: ${t.compared} replies compared over ${t.cases} cases\n`);
  }, 180_000);
});
