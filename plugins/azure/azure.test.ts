/**
 * The azure plugin on its own: setup errors worded as CoreDNS 1.15.0's, record sets into records,
 * and a whole Corefile against the stand-in Azure DNS (test/helpers/azure.ts): the start does not
 * wait for Azure, answers once listed, a failed listing keeps the data and is logged, a zone without
 * SOA is refused. The differential test against CoreDNS is test/differential/azure.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CLIENT, FakeAzure, MSI_SECRET, SECRET, SUBSCRIPTION, TENANT } from '../../test/helpers/azure.js';
import { runCorefile } from '../../test/helpers/corefile.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { rrLines } from '../../test/helpers/records.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { waitFor } from '../../test/helpers/wait.js';
import { azure } from './index.js';
import { recordSetLines } from './records.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function setupError(text: string): string {
  return configError(() => azure.setup(dispenserFor(text, 'azure'), setupContext()), text).describe();
}

describe('azure setup', () => {
  const E1 = 'plugin/azure: Corefile:1 - Error during parsing: ';
  const E2 = 'plugin/azure: Corefile:2 - Error during parsing: ';
  it.each([
    ['azure rg', `${E1}invalid resource group/zone: "rg"`],
    ['azure :example.org', `${E1}invalid resource group/zone: ":example.org"`],
    ['azure rg:example.org rg:example.org', `${E1}conflicting zone: "rg:example.org"`],
    ['azure rg:example.org {\n tenant\n}', `${E2}Wrong argument count or unexpected line ending after 'tenant'`],
    [
      'azure rg:example.org {\n environment MARS\n}',
      `${E2}cannot set azure environment: "autorest/azure: There is no cloud environment matching the name \\"MARS\\""`,
    ],
    ['azure rg:example.org {\n access secret\n}', `${E2}invalid access value: can be public/private, found: secret`],
    [
      'azure rg:example.org {\n refresh 5q\n}',
      `${E2}unable to parse duration: time: unknown unit "q" in duration "5q"`,
    ],
    ['azure rg:example.org {\n refresh 0\n}', `${E2}refresh interval must be greater than 0: "0s"`],
    ['azure rg:example.org {\n bogus\n}', `${E2}unknown property: "bogus"`],
  ])('%s', (text, want) => {
    expect(setupError(text)).toBe(want);
  });
});

describe('record sets', () => {
  it('public: every kind, targets made absolute, NS kept as given', () => {
    expect(
      recordSetLines(
        {
          fqdn: 'a.example.org.',
          TTL: 60,
          ARecords: [{ ipv4Address: '192.0.2.1' }],
          MXRecords: [{ preference: 10, exchange: 'mx.example.org' }],
          TXTRecords: [{ value: ['a "b"', 'c'] }],
          NSRecords: [{ nsdname: 'ns.example.org.' }],
          SOARecord: {
            host: 'ns1.',
            email: 'h.example.org',
            serialNumber: 1,
            refreshTime: 2,
            retryTime: 3,
            expireTime: 4,
            minimumTTL: 5,
          },
          CNAMERecord: { cname: 'x.example.org' },
        },
        false,
      ),
    ).toEqual([
      'a.example.org. 60 IN A 192.0.2.1',
      'a.example.org. 60 IN MX 10 mx.example.org.',
      'a.example.org. 60 IN TXT "a \\"b\\"" "c"',
      'a.example.org. 60 IN NS ns.example.org.',
      'a.example.org. 60 IN SOA ns1. h.example.org. 1 2 3 4 5',
      'a.example.org. 60 IN CNAME x.example.org.',
    ]);
  });

  it('private: no NS, the SOA host made absolute', () => {
    expect(
      recordSetLines(
        {
          fqdn: 'p.',
          ttl: 9,
          nsRecords: [{ nsdname: 'ns.' }],
          soaRecord: {
            host: 'azureprivatedns.net',
            email: 'x',
            serialNumber: 1,
            refreshTime: 2,
            retryTime: 3,
            expireTime: 4,
            minimumTtl: 5,
          },
        },
        true,
      ),
    ).toEqual(['p. 9 IN SOA azureprivatedns.net. x. 1 2 3 4 5']);
  });
});

describe('azure serving', () => {
  const SOA = {
    name: '@',
    properties: {
      fqdn: 'example.org.',
      TTL: 60,
      SOARecord: {
        host: 'ns.',
        email: 'h.',
        serialNumber: 1,
        refreshTime: 2,
        retryTime: 3,
        expireTime: 4,
        minimumTTL: 5,
      },
    },
  };
  const A = { name: 'a', properties: { fqdn: 'a.example.org.', TTL: 5, ARecords: [{ ipv4Address: '192.0.2.1' }] } };

  async function start(): Promise<FakeAzure> {
    const a = await FakeAzure.start();
    cleanups.push(() => a.close());
    const saved = process.env.AZURE_ENVIRONMENT_FILEPATH;
    process.env.AZURE_ENVIRONMENT_FILEPATH = a.environmentFile;
    cleanups.push(() => {
      if (saved === undefined) delete process.env.AZURE_ENVIRONMENT_FILEPATH;
      else process.env.AZURE_ENVIRONMENT_FILEPATH = saved;
    });
    return a;
  }
  const corefile = (zones: string, extra = ''): string => `example.org example.net {
  azure ${zones} {
    tenant ${TENANT}
    client ${CLIENT}
    secret ${SECRET}
    subscription ${SUBSCRIPTION}
    environment AzureStackCloud
    refresh 1
${extra}  }
}`;

  it('starts without Azure, answers once listed, keeps the data when a listing fails', async () => {
    const a = await start();
    a.failing = true;
    a.publicZones.set('rg/example.org', [SOA, A]);
    const logs = captureLogs(cleanups);
    const run = await runCorefile(corefile('rg:example.org'));
    cleanups.push(() => run.stop());
    expect((await run.ask('a.example.org', 'A')).flags! & 0xf).toBe(2);
    await waitFor('the failed listing to be logged', () =>
      logs.lines.some(
        (l) =>
          l ===
          '[ERROR] plugin/azure: Failed to update zones [example.org.]: errors updating zones: [failed to update rg:example.org from azure: dns.RecordSetsClient#ListByDNSZone: Failure responding to request: StatusCode=503 -- Original Error: autorest/azure: Service returned an error. Status=503 Code="ServiceUnavailable" Message="zone unavailable in test"]',
      ),
    );
    a.failing = false;
    await waitFor('the zone to be listed', async () => (await run.ask('a.example.org', 'A')).answers!.length === 1);
    a.failing = true;
    const n = logs.lines.length;
    await waitFor('another failed listing', () => logs.lines.length > n);
    expect(rrLines((await run.ask('a.example.org', 'A')).answers)).toEqual(['a.example.org. 5 IN A 192.0.2.1']);
  });

  it('refuses a listing without SOA, and pages through nextLink', async () => {
    const a = await start();
    a.pageSize = 1;
    a.publicZones.set('rg/example.net', [A]);
    a.publicZones.set('rg/example.org', [
      SOA,
      { name: 'x', properties: { fqdn: 'x.example.org.', TTL: 5, ARecords: [] } },
      A,
    ]);
    const logs = captureLogs(cleanups);
    const run = await runCorefile(corefile('rg:example.org rg:example.net'));
    cleanups.push(() => run.stop());
    await waitFor('example.org to be listed', async () => (await run.ask('a.example.org', 'A')).answers!.length === 1);
    await waitFor('the SOA-less zone to be logged', () =>
      logs.lines.some((l) => l.includes('failed to update rg:example.net from azure: zone has no SOA record')),
    );
    expect(a.tokens).toBeGreaterThanOrEqual(1);
  });

  /** Set (undefined: remove) variables for one test. */
  const setEnv = (vars: Record<string, string | undefined>): void => {
    const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
    for (const [k, v] of Object.entries(vars)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    cleanups.push(() => {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    });
  };
  const msiCorefile = (client: string): string => `example.org {
  azure rg:example.org {
    subscription ${SUBSCRIPTION}
    environment AzureStackCloud${client ? `\n    client ${client}` : ''}
  }
}`;

  it('without a secret takes a managed identity token from instance metadata', async () => {
    const a = await start();
    setEnv({ AZURE_POD_IDENTITY_AUTHORITY_HOST: a.url, MSI_ENDPOINT: undefined, MSI_SECRET: undefined });
    a.publicZones.set('rg/example.org', [SOA, A]);
    const run = await runCorefile(msiCorefile('user-assigned-1'));
    cleanups.push(() => run.stop());
    await waitFor('the zone to be listed', async () => (await run.ask('a.example.org', 'A')).answers!.length === 1);
    const token = a.miRequests.find((r) => r.path.includes('resource='));
    // The MSIAvailable probe, then the token for the Resource Manager, as user-assigned identity `client`.
    expect(a.miRequests[0]!.path).toBe('/metadata/identity/oauth2/token?api-version=2018-02-01');
    expect(token).toEqual({
      path: `/metadata/identity/oauth2/token?${new URLSearchParams({ 'api-version': '2018-02-01', client_id: 'user-assigned-1', resource: `${a.url}/` }).toString()}`,
      metadata: 'true',
      secret: '',
    });
    const arm = a.requests.filter((r) => r.path.includes('/dnsZones/'));
    expect(arm.length).toBeGreaterThan(0);
    expect(arm.every((r) => r.auth.startsWith('Bearer eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.test-mi-'))).toBe(true);
  });

  it('uses App Service managed identity from MSI_ENDPOINT and MSI_SECRET', async () => {
    const a = await start();
    setEnv({ MSI_ENDPOINT: `${a.url}/msi/token`, MSI_SECRET, AZURE_POD_IDENTITY_AUTHORITY_HOST: undefined });
    a.publicZones.set('rg/example.org', [SOA, A]);
    const run = await runCorefile(msiCorefile(''));
    cleanups.push(() => run.stop());
    await waitFor('the zone to be listed', async () => (await run.ask('a.example.org', 'A')).answers!.length === 1);
    expect(a.miRequests).toEqual([
      {
        path: `/msi/token?${new URLSearchParams({ 'api-version': '2017-09-01', resource: `${a.url}/` }).toString()}`,
        metadata: '',
        secret: MSI_SECRET,
      },
    ]);
  });

  it('logs "MSI not available" when there is neither a secret nor a managed identity', async () => {
    const a = await start();
    // Nothing listens on port 1: the IMDS probe is refused.
    setEnv({ AZURE_POD_IDENTITY_AUTHORITY_HOST: 'http://127.0.0.1:1', MSI_ENDPOINT: undefined, MSI_SECRET: undefined });
    a.publicZones.set('rg/example.org', [SOA, A]);
    const logs = captureLogs(cleanups);
    const run = await runCorefile(msiCorefile(''));
    cleanups.push(() => run.stop());
    await waitFor('the failed listing to be logged', () =>
      logs.lines.some(
        (l) =>
          l.startsWith(
            '[ERROR] plugin/azure: Failed to update zones [example.org.]: errors updating zones: [failed to update rg:example.org from azure: ',
          ) && l.includes('MSI not available'),
      ),
    );
  });
});
