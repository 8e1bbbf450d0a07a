/**
 * Differential: clouddns with the GCE/GKE metadata server's credentials (Workload Identity on GKE),
 * against CoreDNS 1.15.0. Neither server has a credentials file (no `credentials`, no
 * GOOGLE_APPLICATION_CREDENTIALS, an empty gcloud folder); both find the metadata server through
 * `GCE_METADATA_HOST`, which points at the stand-in Cloud DNS (test/helpers/clouddns.ts) that also
 * answers the documented token call. Both must serve the same records, every API call carrying a
 * token the metadata call issued, each metadata call with `Metadata-Flavor: Google`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeCloudDNS, type GoogleRecordSet } from '../helpers/clouddns.js';
import {
  assertResult,
  generate,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type Pair,
  type Variant,
} from './harness.js';

const ZONE: GoogleRecordSet[] = [
  {
    name: 'example.org.',
    type: 'SOA',
    ttl: 300,
    rrdatas: ['ns-cloud-a1.googledomains.com. dns-admin.google.com. 1 21600 3600 259200 300'],
  },
  { name: 'www.example.org.', type: 'A', ttl: 300, rrdatas: ['192.0.2.10', '192.0.2.11'] },
  { name: 'www.example.org.', type: 'AAAA', ttl: 300, rrdatas: ['2001:db8::10'] },
  { name: 'alias.example.org.', type: 'CNAME', ttl: 60, rrdatas: ['www.example.org.'] },
  { name: 'example.org.', type: 'TXT', ttl: 300, rrdatas: ['"v=spf1 -all"'] },
];
const NAMES = ['example.org', 'www.example.org', 'alias.example.org', 'nosuch.example.org'];
const TYPES = ['A', 'AAAA', 'CNAME', 'TXT', 'SOA'];
const VARIANTS: readonly Variant[] = [{ proto: 'udp' }, { proto: 'tcp', edns: 4096 }];

describe('differential: clouddns with the GCE metadata server', () => {
  const missing = missingBinaries();
  let google: FakeCloudDNS;
  let pair: Pair;
  let gcloud = '';
  const saved: Record<string, string | undefined> = {};

  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });

  beforeAll(async () => {
    if (missing) return;
    google = await FakeCloudDNS.start();
    google.zones.set('proj/public', ZONE);
    gcloud = mkdtempSync(join(tmpdir(), 'clouddns-gcloud-'));
    const env: Record<string, string | undefined> = {
      GCE_METADATA_HOST: google.metadataHost,
      CLOUDSDK_CONFIG: gcloud,
      GOOGLE_APPLICATION_CREDENTIALS: undefined,
    };
    for (const [k, v] of Object.entries(env)) {
      saved[k] = process.env[k];
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    pair = await startPair(
      {
        corefile: `example.org:{{DNS}} {
  clouddns example.org.:proj:public {
    endpoint ${google.url}/
  }
}
`,
      },
      { name: 'www.example.org', type: 'A' },
    );
  }, 120_000);

  afterAll(async () => {
    await pair?.stop();
    await google?.close();
    if (gcloud) rmSync(gcloud, { recursive: true, force: true });
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    const t = totalCompared();
    process.stdout.write(`differential clouddns metadata: ${t.compared} replies compared over ${t.cases} cases\n`);
  });

  it('serves the same records as CoreDNS, both with tokens from the metadata server', async () => {
    const result = newResult('clouddns-metadata');
    const queries = generate(NAMES, TYPES, VARIANTS, 31);
    await runQueries(pair, result, queries, ['clouddns'], { concurrency: 4 });
    assertResult(result, queries.length);
    const tokenCalls = google.metadataRequests.filter((r) => r.url.includes('/service-accounts/default/token'));
    // One token call per server at least (clusterdns: one per query thread too), all flavoured.
    expect(tokenCalls.length).toBeGreaterThanOrEqual(2);
    expect(google.metadataRequests.every((r) => r.flavor === 'Google')).toBe(true);
    expect(google.requests.length).toBeGreaterThan(0);
    expect(google.requests.every((r) => r.auth.startsWith('Bearer ya29.metadata-'))).toBe(true);
    // Both asked the same call: the default service account's token for the Cloud DNS scopes.
    expect(new Set(tokenCalls.map((r) => r.url)).size).toBe(1);
  }, 180_000);
});
