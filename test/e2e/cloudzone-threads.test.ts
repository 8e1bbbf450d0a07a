/**
 * Cloud zones are listed by the main thread alone (src/cloudzone/replicate.ts, docs/multicore.md
 * §2): route53 against moto, clouddns against FakeCloudDNS, azure against FakeAzure, each behind a
 * GateProxy that counts the zone listings and holds them while its gate is closed. The gate is
 * closed before the server starts, so every listing waits for the test: the first (the start's),
 * then each refresh, whose loop schedules the next only when its listing is answered. Per run:
 * release the first listing, see the record from 32 fresh sockets (the kernel spreads flows over
 * the threads' SO_REUSEPORT sockets), change the record at the stand-in, release the first
 * refresh, see the new record everywhere, and wait for the second refresh to be held: the API has
 * then seen the start's listing and two refreshes' — three listings with `-workers 1`, `-workers 2`
 * and the default alike (each thread listing for itself made it three per thread), and one token
 * where the API hands them out. Across reloads (the same configuration, then another) every thread
 * follows the main thread's new configuration.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { udpQuery } from '../helpers/dns.js';
import { CLIENT, FakeAzure, SECRET, SUBSCRIPTION, TENANT } from '../helpers/azure.js';
import { FakeCloudDNS } from '../helpers/clouddns.js';
import { GateProxy } from '../helpers/gateproxy.js';
import { MotoServer } from '../helpers/moto.js';
import { spawnServer } from '../helpers/spawn.js';
import { waitFor } from '../helpers/wait.js';

/** Fresh client sockets per check: enough flows that every thread's sockets get some. */
const FLOWS = 32;
/** `-workers 1`, `-workers 2` and the default (a thread per CPU). */
const MODES: readonly (readonly string[])[] = [['-workers', '1'], ['-workers', '2'], []];

/** Does every one of FLOWS queries from fresh sockets get `ip` for www.example.org? */
async function allSee(port: number, ip: string): Promise<boolean> {
  const replies = await Promise.all(
    Array.from({ length: FLOWS }, () => udpQuery(port, 'www.example.org.', 'A').catch(() => null)),
  );
  return replies.every((m) => m?.answers?.length === 1 && m.answers[0]!.type === 'A' && m.answers[0]!.data === ip);
}

/** One stand-in behind its proxy, serving www.example.org A `ip` until `set` changes it. */
interface Cloud {
  readonly proxy: GateProxy;
  readonly corefile: string;
  readonly env: Record<string, string>;
  set(ip: string): Promise<void>;
  /** Tokens the stand-in issued (credentials resolved), where it issues any. */
  tokens(): number;
  stop(): Promise<void>;
}

interface Outcome {
  readonly listings: number;
  readonly tokens: number;
}

async function run(cloud: Cloud, args: readonly string[]): Promise<Outcome> {
  const { proxy } = cloud;
  await cloud.set('192.0.2.1');
  proxy.close();
  const s = await spawnServer(cloud.corefile, [...args], { env: cloud.env });
  try {
    const held = async (what: string): Promise<void> => {
      await waitFor(
        () => `${what} at the gate; output:\n${s.output.join('\n')}`,
        () => proxy.holding >= 1,
      );
      // One lister: nothing else can be listing while its listing is held.
      expect(proxy.holding, what).toBe(1);
    };
    await held('the first listing');
    proxy.release();
    const out = (what: string) => (): string => `${what}; output:\n${s.output.join('\n')}`;
    await waitFor(out('every thread to answer 192.0.2.1'), () => allSee(s.port, '192.0.2.1'));
    await held('the first refresh');
    await cloud.set('192.0.2.2');
    proxy.release();
    await waitFor(out('every thread to answer 192.0.2.2 after the refresh'), () => allSee(s.port, '192.0.2.2'));
    await held('the second refresh');
    return { listings: proxy.picked.length, tokens: cloud.tokens() };
  } finally {
    await s.stop();
    await cloud.stop();
  }
}

async function each(make: () => Promise<Cloud>): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (const args of MODES) out.push(await run(await make(), args));
  return out;
}

describe('cloud zones with query threads: one lister per process', () => {
  let moto: MotoServer | null = null;
  beforeAll(async () => {
    moto = await MotoServer.start();
  }, 90_000);
  afterAll(async () => {
    await moto?.stop();
  });

  it('route53 (moto): three listings and every thread follows, whatever the thread count', async () => {
    const m = moto!;
    const outcomes = await each(async () => {
      const id = await m.createZone('example.org.');
      const proxy = await GateProxy.start(m.url, (method, path) => method === 'GET' && /\/rrset(\?|$)/.test(path));
      return {
        proxy,
        corefile: `example.org {\n  route53 example.org.:${id} {\n    refresh 1s\n  }\n}\n`,
        env: {
          AWS_ENDPOINT_URL_ROUTE_53: proxy.url,
          AWS_REGION: 'us-east-1',
          AWS_ACCESS_KEY_ID: MotoServer.credentials.accessKeyId,
          AWS_SECRET_ACCESS_KEY: MotoServer.credentials.secretAccessKey,
          AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
          AWS_CONFIG_FILE: '/nonexistent',
        },
        // moto's own SOA value is not a record (it prints a Python dict): without one, SERVFAIL.
        set: (ip) =>
          m.change(id, [
            {
              name: 'example.org.',
              type: 'SOA',
              ttl: 900,
              values: ['ns. hostmaster.example.org. 1 7200 900 1209600 86400'],
            },
            { name: 'www.example.org.', type: 'A', ttl: 60, values: [ip] },
          ]),
        tokens: () => 0,
        stop: () => proxy.stop(),
      };
    });
    expect(outcomes.map((o) => o.listings)).toEqual([3, 3, 3]);
  }, 180_000);

  it('clouddns (FakeCloudDNS): three listings and one token, whatever the thread count', async () => {
    const outcomes = await each(async () => {
      const g = await FakeCloudDNS.start();
      g.pageSize = 100;
      const key = g.serviceAccountKey(mkdtempSync(join(tmpdir(), 'clouddns-threads-')));
      const proxy = await GateProxy.start(g.url, (method, path) => method === 'GET' && /\/rrsets(\?|$)/.test(path));
      return {
        proxy,
        corefile: `example.org {\n  clouddns example.org.:p:z {\n    credentials ${key}\n    endpoint ${proxy.url}/\n    refresh 1\n  }\n}\n`,
        env: {},
        set: async (ip) => {
          g.zones.set('p/z', [
            { name: 'example.org.', type: 'SOA', ttl: 300, rrdatas: ['ns. host. 1 2 3 4 5'] },
            { name: 'www.example.org.', type: 'A', ttl: 5, rrdatas: [ip] },
          ]);
        },
        tokens: () => g.assertions,
        stop: async () => {
          await proxy.stop();
          await g.close();
        },
      };
    });
    expect(outcomes).toEqual(MODES.map(() => ({ listings: 3, tokens: 1 })));
  }, 180_000);

  it('clouddns with -workers 2 across reloads: every thread follows the new configuration', async () => {
    const g = await FakeCloudDNS.start();
    const proxy = await GateProxy.start(g.url, (method, path) => method === 'GET' && /\/rrsets(\?|$)/.test(path));
    const key = g.serviceAccountKey(mkdtempSync(join(tmpdir(), 'clouddns-threads-')));
    const set = (ip: string): void =>
      void g.zones.set('p/z', [
        { name: 'example.org.', type: 'SOA', ttl: 300, rrdatas: ['ns. host. 1 2 3 4 5'] },
        { name: 'www.example.org.', type: 'A', ttl: 5, rrdatas: [ip] },
      ]);
    const corefile = (refresh: string): string =>
      `example.org {\n  clouddns example.org.:p:z {\n    credentials ${key}\n    endpoint ${proxy.url}/\n    refresh ${refresh}\n  }\n}\n`;
    set('192.0.2.1');
    const s = await spawnServer(corefile('1'), ['-workers', '2']);
    try {
      const out = (what: string) => (): string => `${what}; output:\n${s.output.join('\n')}`;
      const reload = async (n: number): Promise<void> => {
        s.proc.kill('SIGUSR1');
        await waitFor(
          out(`reload ${n} to complete`),
          () => s.output.filter((l) => l === '[INFO] Reloading complete').length >= n,
        );
      };
      await waitFor(out('every thread to answer 192.0.2.1'), () => allSee(s.port, '192.0.2.1'));
      // The same configuration: the new offer has the old one's key.
      await reload(1);
      set('192.0.2.2');
      await waitFor(out('every thread to answer 192.0.2.2'), () => allSee(s.port, '192.0.2.2'));
      // Another configuration: a new key, which the threads' new configuration follows.
      writeFileSync(s.corefilePath, corefile('2'));
      await reload(2);
      set('192.0.2.3');
      await waitFor(out('every thread to answer 192.0.2.3'), () => allSee(s.port, '192.0.2.3'));
      // One token per start of the configuration (the first and two reloads), by the main thread.
      expect(g.assertions).toBe(3);
    } finally {
      await s.stop();
      await proxy.stop();
      await g.close();
    }
  }, 120_000);

  it('azure (FakeAzure): three listings and one token, whatever the thread count', async () => {
    const outcomes = await each(async () => {
      const a = await FakeAzure.start();
      a.pageSize = 100;
      const proxy = await GateProxy.start(
        a.url,
        (method, path) => method === 'GET' && /\/(recordsets|ALL)(\?|$)/.test(path),
      );
      // Resource Manager through the proxy, Azure AD straight to the stand-in.
      const envFile = join(mkdtempSync(join(tmpdir(), 'azure-threads-')), 'azurestack.json');
      writeFileSync(
        envFile,
        JSON.stringify({
          name: 'AzureStackCloud',
          resourceManagerEndpoint: `${proxy.url}/`,
          activeDirectoryEndpoint: `${a.url}/`,
          managementPortalURL: `${a.url}/`,
          serviceManagementEndpoint: `${a.url}/`,
          tokenAudience: `${a.url}/`,
        }),
      );
      return {
        proxy,
        corefile: `example.org {
  azure rg:example.org {
    tenant ${TENANT}
    client ${CLIENT}
    secret ${SECRET}
    subscription ${SUBSCRIPTION}
    environment AzureStackCloud
    refresh 1
  }
}
`,
        env: { AZURE_ENVIRONMENT_FILEPATH: envFile },
        set: async (ip) => {
          a.publicZones.set('rg/example.org', [
            {
              name: '@',
              type: 'Microsoft.Network/dnszones/SOA',
              properties: {
                fqdn: 'example.org.',
                TTL: 300,
                SOARecord: {
                  email: 'hostmaster.example.org.',
                  host: 'ns1.example.org.',
                  serialNumber: 1,
                  refreshTime: 3600,
                  retryTime: 300,
                  expireTime: 2419200,
                  minimumTTL: 5,
                },
              },
            },
            { name: 'www', properties: { fqdn: 'www.example.org.', TTL: 5, ARecords: [{ ipv4Address: ip }] } },
          ]);
        },
        tokens: () => a.tokens,
        stop: async () => {
          await proxy.stop();
          await a.close();
        },
      };
    });
    expect(outcomes).toEqual(MODES.map(() => ({ listings: 3, tokens: 1 })));
  }, 180_000);
});
