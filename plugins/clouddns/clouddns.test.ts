/**
 * The clouddns plugin on its own: setup errors worded as CoreDNS 1.15.0's, the service-account JWT,
 * how listed record sets become a zone (a record that does not parse ends the listing), and a whole
 * Corefile against the stand-in Cloud DNS (test/helpers/clouddns.ts): answers, paging, a failed
 * refresh that keeps the data, a failed start. The differential test is test/differential/clouddns.test.ts.
 */
import { createPublicKey, createVerify, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { FakeCloudDNS } from '../../test/helpers/clouddns.js';
import { runCorefile } from '../../test/helpers/corefile.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { rrLines } from '../../test/helpers/records.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { waitFor } from '../../test/helpers/wait.js';
import { SCOPES, serviceAccountAssertion } from './auth.js';
import { clouddns } from './index.js';
import { zoneFromRecordSets } from './update.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const dir = mkdtempSync(join(tmpdir(), 'clouddns-unit-'));

function setupError(text: string): string {
  return configError(() => clouddns.setup(dispenserFor(text, 'clouddns'), setupContext()), text).describe();
}

describe('clouddns setup', () => {
  const bogus = join(dir, 'bogus.json');
  writeFileSync(bogus, '{"type":"bogus"}');
  const untyped = join(dir, 'untyped.json');
  writeFileSync(untyped, '{}');
  const E1 = 'plugin/clouddns: Corefile:1 - Error during parsing: ';
  const E2 = 'plugin/clouddns: Corefile:2 - Error during parsing: ';
  it.each([
    ['clouddns example.org.:proj', `${E1}invalid zone "example.org.:proj"`],
    ['clouddns example.org.::zone', `${E1}invalid zone "example.org.::zone"`],
    ['clouddns example.org.:p:z example.org.:p:z', `${E1}conflict zone "example.org.:p:z"`],
    [
      'clouddns example.org.:p:z {\n credentials\n}',
      `${E2}Wrong argument count or unexpected line ending after 'credentials'`,
    ],
    [
      `clouddns example.org.:p:z {\n credentials ${bogus}\n}`,
      `${E2}invalid credentials file "${bogus}": unknown credential type: bogus`,
    ],
    [
      `clouddns example.org.:p:z {\n credentials ${untyped}\n}`,
      `${E2}invalid credentials file "${untyped}": missing \`type\` field in credential`,
    ],
    [
      'clouddns example.org.:p:z {\n credentials /nonexistent.json\n}',
      `${E2}invalid credentials file "/nonexistent.json": open /nonexistent.json: no such file or directory`,
    ],
    [
      'clouddns example.org.:p:z {\n endpoint\n}',
      `${E2}Wrong argument count or unexpected line ending after 'endpoint'`,
    ],
    [
      'clouddns example.org.:p:z {\n refresh 1y\n}',
      `${E2}unable to parse duration: time: unknown unit "y" in duration "1y"`,
    ],
    ['clouddns example.org.:p:z {\n refresh 0\n}', `${E2}refresh interval must be greater than 0: "0s"`],
    ['clouddns example.org.:p:z {\n bogus\n}', `${E2}unknown property "bogus"`],
  ])('%s', (text, want) => {
    expect(setupError(text)).toBe(want);
  });
});

describe('service-account JWT', () => {
  it('is RS256 over the Cloud DNS scopes, for the key’s token_uri, valid an hour', () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwt = serviceAccountAssertion(
      {
        client_email: 'sa@p.iam.gserviceaccount.com',
        private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
        private_key_id: 'kid1',
        token_uri: 'https://oauth2.googleapis.com/token',
      },
      1_700_000_000,
    );
    const [h, c, s] = jwt.split('.') as [string, string, string];
    expect(JSON.parse(Buffer.from(h, 'base64url').toString())).toEqual({ alg: 'RS256', typ: 'JWT', kid: 'kid1' });
    expect(JSON.parse(Buffer.from(c, 'base64url').toString())).toEqual({
      iss: 'sa@p.iam.gserviceaccount.com',
      scope: SCOPES.join(' '),
      aud: 'https://oauth2.googleapis.com/token',
      iat: 1_700_000_000,
      exp: 1_700_003_600,
    });
    const ok = createVerify('RSA-SHA256')
      .update(`${h}.${c}`)
      .verify(createPublicKey(publicKey.export({ type: 'spki', format: 'pem' })), Buffer.from(s, 'base64url'));
    expect(ok).toBe(true);
  });
});

describe('record sets into a zone', () => {
  it('makes CNAME and PTR values absolute, and stops at the first record that does not parse', async () => {
    const z = zoneFromRecordSets('example.org.', [
      { name: 'example.org.', type: 'SOA', ttl: 300, rrdatas: ['ns. host. 1 2 3 4 5'] },
      { name: 'a.example.org', type: 'CNAME', ttl: 60, rrdatas: ['b.example.org'] },
      { name: 'bad.example.org.', type: 'A', ttl: 60, rrdatas: ['192.0.2.1', 'x'] },
      { name: 'late.example.org.', type: 'A', ttl: 60, rrdatas: ['192.0.2.2'] },
    ]);
    const l = async (n: string) => rrLines((await z.lookup(n, 1, false, 0, () => ({ answer: [], result: 0 }))).answer);
    expect(await l('a.example.org.')).toEqual(['a.example.org. 60 IN CNAME b.example.org.']);
    expect(await l('bad.example.org.')).toEqual(['bad.example.org. 60 IN A 192.0.2.1']);
    expect(await l('late.example.org.')).toEqual([]);
  });
});

describe('clouddns serving', () => {
  async function google(): Promise<{ g: FakeCloudDNS; key: string }> {
    const g = await FakeCloudDNS.start();
    cleanups.push(() => g.close());
    return { g, key: g.serviceAccountKey(mkdtempSync(join(tmpdir(), 'clouddns-key-'))) };
  }

  it('answers from every page, keeps the data when a refresh fails and logs it', async () => {
    const { g, key } = await google();
    g.pageSize = 1;
    g.zones.set('p/z', [
      { name: 'example.org.', type: 'SOA', ttl: 300, rrdatas: ['ns. host. 1 2 3 4 5'] },
      { name: 'a.example.org.', type: 'A', ttl: 5, rrdatas: ['192.0.2.1'] },
      { name: 'b.example.org.', type: 'A', ttl: 5, rrdatas: ['192.0.2.2'] },
    ]);
    const logs = captureLogs(cleanups);
    const run = await runCorefile(
      `example.org {\n  clouddns example.org:p:z {\n    credentials ${key}\n    endpoint ${g.url}/\n    refresh 1\n  }\n}`,
    );
    cleanups.push(() => run.stop());
    expect(rrLines((await run.ask('b.example.org', 'A')).answers)).toEqual(['b.example.org. 5 IN A 192.0.2.2']);
    g.failing = true;
    await waitFor('the failed refresh to be logged', () =>
      logs.lines.some(
        (l) =>
          l ===
          '[ERROR] plugin/clouddns: Failed to update zones [example.org.]: errors updating zones: [failed to list resource records for example.org.:p:z from gcp: googleapi: Error 503: The service is currently unavailable., backendError]',
      ),
    );
    expect(rrLines((await run.ask('a.example.org', 'A')).answers)).toEqual(['a.example.org. 5 IN A 192.0.2.1']);
  });

  it('without a credentials file takes the token from the GCE metadata server (GCE_METADATA_HOST)', async () => {
    const g = await FakeCloudDNS.start();
    cleanups.push(() => g.close());
    const empty = mkdtempSync(join(tmpdir(), 'clouddns-adc-'));
    cleanups.push(() => rmSync(empty, { recursive: true, force: true }));
    const saved = Object.fromEntries(
      ['GCE_METADATA_HOST', 'GOOGLE_APPLICATION_CREDENTIALS', 'CLOUDSDK_CONFIG'].map((k) => [k, process.env[k]]),
    );
    process.env.GCE_METADATA_HOST = g.metadataHost;
    process.env.CLOUDSDK_CONFIG = empty;
    delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    cleanups.push(() => {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    });
    g.zones.set('p/z', [
      { name: 'example.org.', type: 'SOA', ttl: 300, rrdatas: ['ns. host. 1 2 3 4 5'] },
      { name: 'a.example.org.', type: 'A', ttl: 5, rrdatas: ['192.0.2.1'] },
    ]);
    const run = await runCorefile(`example.org {\n  clouddns example.org:p:z {\n    endpoint ${g.url}/\n  }\n}`);
    cleanups.push(() => run.stop());
    expect(rrLines((await run.ask('a.example.org', 'A')).answers)).toEqual(['a.example.org. 5 IN A 192.0.2.1']);
    // One token, asked with the Metadata-Flavor header and the Cloud DNS scopes; every API call carries it.
    expect(g.metadataRequests).toEqual([
      {
        url: `/computeMetadata/v1/instance/service-accounts/default/token?${new URLSearchParams({ scopes: SCOPES.join(',') }).toString()}`,
        flavor: 'Google',
      },
    ]);
    expect(g.requests.length).toBeGreaterThan(0);
    expect(g.requests.every((r) => r.auth === 'Bearer ya29.metadata-1')).toBe(true);
  });

  it('fails the start when a managed zone does not exist, as CoreDNS', async () => {
    const { g, key } = await google();
    const err = await runCorefile(
      `example.org {\n  clouddns example.org.:p:nope {\n    credentials ${key}\n    endpoint ${g.url}/\n  }\n}`,
    ).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).describe()).toBe(
      "plugin/clouddns: Corefile:2 - Error during parsing: failed to create plugin: googleapi: Error 404: The 'parameters.managedZone' resource named 'nope' does not exist., notFound",
    );
  });
});
