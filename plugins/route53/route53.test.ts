/**
 * The route53 plugin on its own: setup errors worded as CoreDNS 1.15.0's, Route 53's escapes
 * (CoreDNS's maybeUnescape cases), the SigV4 signer against AWS's published example, the XML of a
 * record-set page, where credentials come from, and a whole Corefile against a local HTTP server
 * replaying Route 53 responses (recorded from moto_server, which speaks the API): answers, two
 * hosted zones of one name, fallthrough, a failed refresh that keeps the data, a failed start.
 * The differential test against CoreDNS with moto itself is test/differential/route53.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { runCorefile } from '../../test/helpers/corefile.js';
import { rrLines } from '../../test/helpers/records.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { waitFor } from '../../test/helpers/wait.js';
import { startEc2Metadata } from '../../test/helpers/ec2metadata.js';
import { MotoServer } from '../../test/helpers/moto.js';
import { parseRecordSets } from './api.js';
import { type CredentialOptions, resolveAwsConfig } from '../../src/aws/config.js';
import { route53 } from './index.js';
import { maybeUnescape } from './records.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function setupError(text: string): string {
  return configError(() => route53.setup(dispenserFor(text, 'route53'), setupContext()), text).describe();
}

describe('route53 setup', () => {
  it.each([
    ['route53 example.org', 'plugin/route53: Corefile:1 - Error during parsing: invalid zone "example.org"'],
    ['route53 :Z1', 'plugin/route53: Corefile:1 - Error during parsing: invalid zone ":Z1"'],
    ['route53 example.org.:', 'plugin/route53: Corefile:1 - Error during parsing: invalid zone "example.org.:"'],
    [
      'route53 example.org.:Z1 example.org.:Z1',
      'plugin/route53: Corefile:1 - Error during parsing: conflict zone "example.org.:Z1"',
    ],
    [
      'route53 example.org.:Z1 {\n aws_access_key ONLYID\n}',
      "plugin/route53: Corefile:2 - Error during parsing: invalid access key: '[ONLYID]'",
    ],
    [
      'route53 example.org.:Z1 {\n aws_endpoint\n}',
      "plugin/route53: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'aws_endpoint'",
    ],
    [
      'route53 example.org.:Z1 {\n credentials\n}',
      "Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'credentials'",
    ],
    [
      'route53 example.org.:Z1 {\n refresh\n}',
      "plugin/route53: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'refresh'",
    ],
    [
      'route53 example.org.:Z1 {\n refresh 5x\n}',
      'plugin/route53: Corefile:2 - Error during parsing: Unable to parse duration: time: unknown unit "x" in duration "5x"',
    ],
    [
      'route53 example.org.:Z1 {\n refresh 0\n}',
      'plugin/route53: Corefile:2 - Error during parsing: refresh interval must be greater than 0: "0s"',
    ],
    [
      'route53 example.org.:Z1 {\n refresh -1m\n}',
      'plugin/route53: Corefile:2 - Error during parsing: refresh interval must be greater than 0: "-1m"',
    ],
    [
      'route53 example.org.:Z1 {\n bogus\n}',
      'plugin/route53: Corefile:2 - Error during parsing: unknown property "bogus"',
    ],
  ])('%s', (text, want) => {
    expect(setupError(text)).toBe(want);
  });

  it('accepts every documented option, and warns that aws_access_key is deprecated', () => {
    const logs = captureLogs(cleanups);
    const r = route53.setup(
      dispenserFor(
        `route53 example.org.:Z1 example.org.:Z2 example.gov.:Z3 {
  aws_access_key ID SECRET
  aws_endpoint http://127.0.0.1:1
  credentials prod /etc/aws/config
  fallthrough example.gov.
  refresh 90
  upstream 10.0.0.1
}`,
        'route53',
      ),
      setupContext({ plugin: 'route53' }),
    );
    expect(typeof r).toBe('function');
    expect(logs.lines).toContain(
      '[WARNING] plugin/route53: Save aws_access_key in Corefile has been deprecated, please use other authentication methods instead',
    );
  });
});

describe('route53 escapes (CoreDNS maybeUnescape)', () => {
  it.each([
    ['example.com.', 'example.com.'],
    ['\\052.example.com.', '*.example.com.'],
    ['a\\055b.example.com.', 'a-b.example.com.'],
    ['\\141\\060.example.com.', 'a0.example.com.'],
  ])('%s → %s', (s, want) => {
    expect(maybeUnescape(s)).toBe(want);
  });

  it.each([
    ['\\137.example.com.', 'invalid character: \\0137'],
    ['a\\052.example.com.', "`*' only supported as wildcard (leftmost label)"],
    ['example.com\\0', "invalid escape sequence: '\\0'"],
    ['\\08a.example.com.', "invalid escape sequence: '\\08a'"],
    ['\\377.example.com.', "invalid escape sequence: '\\377'"],
  ])('%s fails: %s', (s, want) => {
    expect(() => maybeUnescape(s)).toThrow(want);
  });
});

describe('record-set pages', () => {
  it('reads names, types, TTLs and values; alias sets have none; a truncated page says where to go on', () => {
    const page = parseRecordSets(
      `<?xml version="1.0"?><ListResourceRecordSetsResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><ResourceRecordSets><ResourceRecordSet><Name>\\052.example.org.</Name><Type>TXT</Type><TTL>300</TTL><ResourceRecords><ResourceRecord><Value>"a &amp; b"</Value></ResourceRecord><ResourceRecord><Value>"c"</Value></ResourceRecord></ResourceRecords></ResourceRecordSet><ResourceRecordSet><Name>alias.example.org.</Name><Type>A</Type><AliasTarget><HostedZoneId>Z2</HostedZoneId><DNSName>lb.example.com.</DNSName><EvaluateTargetHealth>false</EvaluateTargetHealth></AliasTarget></ResourceRecordSet></ResourceRecordSets><IsTruncated>true</IsTruncated><NextRecordName>b.example.org.</NextRecordName><NextRecordType>A</NextRecordType><MaxItems>2</MaxItems></ListResourceRecordSetsResponse>`,
    );
    expect(page.sets).toEqual([
      { name: '\\052.example.org.', type: 'TXT', ttl: 300, values: ['"a & b"', '"c"'] },
      { name: 'alias.example.org.', type: 'A', ttl: 0, values: [] },
    ]);
    expect(page.next).toEqual({ name: 'b.example.org.', type: 'A', identifier: null });
  });
});

describe('credentials', () => {
  // No shared files, no instance metadata: nothing from this machine leaks into the chain.
  const none = {
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
    AWS_CONFIG_FILE: '/nonexistent',
    AWS_EC2_METADATA_DISABLED: 'true',
  };
  const source = async (o: CredentialOptions, env: Record<string, string>): Promise<string> =>
    (await resolveAwsConfig(o, { ...none, AWS_REGION: 'eu-west-1', ...env })).credentials.source;

  it('takes the Corefile keys first, then the environment', async () => {
    const env = { ...none, AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'E', AWS_SECRET_ACCESS_KEY: 'S' };
    const corefile = await resolveAwsConfig({ staticKeys: { accessKeyId: 'C', secretAccessKey: 'K' } }, env);
    expect((await corefile.credentials.get()).accessKeyId).toBe('C');
    const fromEnv = await resolveAwsConfig({}, env);
    expect(fromEnv.region).toBe('eu-west-1');
    expect(await fromEnv.credentials.get()).toEqual({ accessKeyId: 'E', secretAccessKey: 'S' });
  });

  it("follows aws-sdk-go-v2's chain: keys, web identity, profile, container, instance role", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'r53-creds-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const config = join(dir, 'config');
    writeFileSync(
      config,
      '[default]\naws_access_key_id = P\naws_secret_access_key = PS\n[profile irsa]\nweb_identity_token_file = /var/run/token\nrole_arn = arn:aws:iam::1:role/r\n[profile bare]\nregion = eu-west-2\n',
    );
    const keys = { AWS_ACCESS_KEY_ID: 'E', AWS_SECRET_ACCESS_KEY: 'S' };
    const webid = { AWS_WEB_IDENTITY_TOKEN_FILE: '/var/run/token', AWS_ROLE_ARN: 'arn:aws:iam::1:role/r' };
    const pod = { AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://127.0.0.1:9/v1/credentials' };
    const ecs = { AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/v2/credentials/x' };
    const cfg = { AWS_CONFIG_FILE: config };
    expect(await source({}, { ...keys, ...webid, ...cfg, ...pod })).toBe('EnvConfigCredentials');
    expect(await source({}, { ...webid, ...cfg, ...pod })).toBe('WebIdentityCredentials');
    expect(await source({}, { ...cfg, ...pod })).toBe('SharedConfigCredentials');
    expect(await source({}, { ...cfg, AWS_PROFILE: 'irsa', ...pod })).toBe('WebIdentityCredentials');
    expect(await source({}, { ...cfg, AWS_PROFILE: 'bare', ...pod, ...ecs })).toBe('CredentialsEndpointProvider');
    expect(await source({}, { ...cfg, AWS_PROFILE: 'bare' })).toBe('EC2RoleProvider');
    // A profile named in the Corefile comes before the environment.
    expect(await source({ profile: 'irsa', configFiles: [config] }, { ...keys })).toBe('WebIdentityCredentials');
    await expect(source({ profile: 'nosuch', configFiles: [config] }, keys)).rejects.toThrow(
      'failed to get shared config profile, nosuch',
    );
  });

  it('fails with the reason for what it cannot use', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'r53-creds-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const config = join(dir, 'config');
    writeFileSync(
      config,
      '[profile sso]\nsso_session = corp\n[profile proc]\ncredential_process = /bin/creds\n[profile assume]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = default\n',
    );
    await expect(source({}, { AWS_WEB_IDENTITY_TOKEN_FILE: '/var/run/token' })).rejects.toThrow('role ARN is not set');
    for (const [profile, what] of [
      ['sso', 'SSO'],
      ['proc', 'credential_process'],
      ['assume', 'source_profile (an assumed role)'],
    ]) {
      await expect(source({}, { AWS_CONFIG_FILE: config, AWS_PROFILE: profile! })).rejects.toThrow(
        `profile "${profile}" uses ${what}, which clusterdns does not support (plugins/route53/README.md, "Authentication")`,
      );
    }
    // AWS_PROFILE makes the SDK load the shared files strictly: a profile that is not there fails.
    await expect(source({}, { AWS_CONFIG_FILE: config, AWS_PROFILE: 'nosuch' })).rejects.toThrow(
      'failed to get shared config profile, nosuch',
    );
    await expect(source({}, { AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://192.0.2.1/creds' })).rejects.toThrow(
      'invalid endpoint host, "192.0.2.1", only loopback/ecs/eks hosts are allowed',
    );
  });

  it('without a region asks instance metadata, and fails as CoreDNS when it cannot', async () => {
    await expect(resolveAwsConfig({}, { ...none, AWS_ACCESS_KEY_ID: 'E', AWS_SECRET_ACCESS_KEY: 'S' })).rejects.toThrow(
      'failed to get region from IMDS: operation error ec2imds: GetRegion, access disabled to EC2 IMDS via client option, or "AWS_EC2_METADATA_DISABLED" environment variable',
    );
  });
});

// ---- A whole Corefile against recorded Route 53 responses ----------------------------------------

const NS = 'xmlns="https://route53.amazonaws.com/doc/2013-04-01/"';
const rrset = (name: string, type: string, ttl: number, values: string[]): string =>
  `<ResourceRecordSet><Name>${name}</Name><Type>${type}</Type><TTL>${ttl}</TTL><ResourceRecords>${values
    .map((v) => `<ResourceRecord><Value>${v}</Value></ResourceRecord>`)
    .join('')}</ResourceRecords></ResourceRecordSet>`;
const page = (sets: string[], next?: string): string =>
  `<?xml version="1.0" encoding="utf-8"?>\n<ListResourceRecordSetsResponse ${NS}><ResourceRecordSets>${sets.join('')}</ResourceRecordSets>${
    next
      ? `<IsTruncated>true</IsTruncated><NextRecordName>${next}</NextRecordName><NextRecordType>A</NextRecordType>`
      : '<IsTruncated>false</IsTruncated>'
  }<MaxItems>1000</MaxItems></ListResourceRecordSetsResponse>`;
const SOA = (zone: string, serial: number): string =>
  rrset(zone, 'SOA', 900, [`ns-1.awsdns-01.org. hostmaster.${zone} ${serial} 7200 900 1209600 86400`]);
const NO_ZONE = `<?xml version="1.0" encoding="utf-8"?>\n<ErrorResponse ${NS}><Error><Type>Sender</Type><Code>NoSuchHostedZone</Code><Message>No hosted zone found with ID: ZNOPE</Message></Error><RequestId>r-1</RequestId></ErrorResponse>`;

interface Fake {
  url: string;
  /** Hosted zone id → its pages (by start name; '' the first). */
  zones: Map<string, Map<string, string>>;
  failing: boolean;
  requests: string[];
  /** Each request's x-amz-security-token ('' when absent). */
  tokens: string[];
}

async function fakeRoute53(): Promise<Fake> {
  const fake: Fake = { url: '', zones: new Map(), failing: false, requests: [], tokens: [] };
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    fake.requests.push(`${u.pathname}${u.search} ${String(req.headers.authorization).split(',')[0]}`);
    fake.tokens.push(String(req.headers['x-amz-security-token'] ?? ''));
    const send = (status: number, body: string): void => {
      res.writeHead(status, { 'content-type': 'application/xml', 'x-amzn-requestid': 'r-1' }).end(body);
    };
    if (fake.failing)
      return send(
        500,
        `<ErrorResponse ${NS}><Error><Code>InternalFailure</Code><Message>boom</Message></Error></ErrorResponse>`,
      );
    const byName = /^\/2013-04-01\/hostedzonesbyname$/.exec(u.pathname);
    const id = byName
      ? u.searchParams.get('hostedzoneid')!
      : (/^\/2013-04-01\/hostedzone\/([^/]+)\/rrset$/.exec(u.pathname)?.[1] ?? '');
    const pages = fake.zones.get(id);
    if (!pages) return send(404, NO_ZONE);
    if (byName) return send(200, `<ListHostedZonesByNameResponse ${NS}><HostedZones/></ListHostedZonesByNameResponse>`);
    send(200, pages.get(u.searchParams.get('name') ?? '') ?? page([]));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  return fake;
}

/** Point route53 at the fake with static keys; `over` replaces (undefined: removes) variables. */
function awsEnv(fake: Fake, over: Record<string, string | undefined> = {}): void {
  const env: Record<string, string | undefined> = {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'AKIDTEST',
    AWS_SECRET_ACCESS_KEY: 'secret',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
    AWS_CONFIG_FILE: '/nonexistent',
    AWS_ENDPOINT_URL_ROUTE_53: fake.url,
    AWS_EC2_METADATA_DISABLED: 'true',
    ...over,
  };
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  cleanups.push(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}

describe('route53 serving', () => {
  it('answers from the listed zones, pages and all; private zone first; falls through', async () => {
    const fake = await fakeRoute53();
    awsEnv(fake);
    fake.zones.set(
      'ZPRIV',
      new Map([['', page([SOA('example.org.', 2), rrset('www.example.org.', 'TXT', 30, ['"private"'])])]]),
    );
    fake.zones.set(
      'ZPUB',
      new Map([
        ['', page([SOA('example.org.', 1), rrset('\\052.w.example.org.', 'A', 60, ['192.0.2.7'])], 'www.example.org.')],
        [
          'www.example.org.',
          page([
            rrset('www.example.org.', 'A', 300, ['192.0.2.1']),
            rrset('mail.example.org.', 'A', 300, ['192.0.2.2']),
          ]),
        ],
      ]),
    );
    fake.zones.set('ZGOV', new Map([['', page([SOA('example.gov.', 1)])]]));
    const run = await runCorefile(`example.org example.gov {
  route53 example.org.:ZPRIV example.org.:ZPUB example.gov.:ZGOV {
    fallthrough example.gov.
  }
  whoami
}`);
    cleanups.push(() => run.stop());
    expect(rrLines((await run.ask('mail.example.org', 'A')).answers)).toEqual(['mail.example.org. 300 IN A 192.0.2.2']);
    expect(rrLines((await run.ask('x.w.example.org', 'A')).answers)).toEqual(['x.w.example.org. 60 IN A 192.0.2.7']);
    // NODATA from the private zone ends the search.
    const nodata = await run.ask('www.example.org', 'A');
    expect(nodata.answers).toEqual([]);
    expect(rrLines(nodata.authorities)).toEqual([
      'example.org. 900 IN SOA ns-1.awsdns-01.org. hostmaster.example.org. 2 7200 900 1209600 86400',
    ]);
    // NXDOMAIN comes from the last hosted zone.
    const nx = await run.ask('nosuch.example.org', 'A');
    expect(nx.flags! & 0xf).toBe(3);
    expect(rrLines(nx.authorities)[0]).toContain('hostmaster.example.org. 1 ');
    // example.gov falls through to whoami.
    expect(rrLines((await run.ask('nosuch.example.gov', 'A')).additionals)).toHaveLength(2);
    expect(fake.requests.every((r) => r.includes('/us-east-1/route53/aws4_request'))).toBe(true);
  });

  it('keeps serving the last data when a refresh fails, and logs it', async () => {
    const fake = await fakeRoute53();
    awsEnv(fake);
    fake.zones.set(
      'Z1',
      new Map([['', page([SOA('example.org.', 1), rrset('a.example.org.', 'A', 5, ['192.0.2.1'])])]]),
    );
    const logs = captureLogs(cleanups);
    const run = await runCorefile(`example.org {
  route53 example.org.:Z1 {
    refresh 1
  }
}`);
    cleanups.push(() => run.stop());
    fake.failing = true;
    await waitFor('the failed refresh to be logged', () =>
      logs.lines.some((l) =>
        l.startsWith(
          '[ERROR] plugin/route53: Failed to update zones [example.org.]: errors updating zones: [failed to list resource records for example.org.:Z1 from route53: operation error Route 53: ListResourceRecordSets, https response error StatusCode: 500, RequestID: r-1, InternalFailure: boom]',
        ),
      ),
    );
    expect(rrLines((await run.ask('a.example.org', 'A')).answers)).toEqual(['a.example.org. 5 IN A 192.0.2.1']);
  });

  it('signs with web identity keys from STS (moto), the session token sent', async () => {
    const moto = await MotoServer.start();
    cleanups.push(() => moto.stop());
    const fake = await fakeRoute53();
    const dir = mkdtempSync(join(tmpdir(), 'r53-webid-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'token'), 'eyJhbGciOiJSUzI1NiJ9.e30.sig');
    awsEnv(fake, {
      AWS_ACCESS_KEY_ID: undefined,
      AWS_SECRET_ACCESS_KEY: undefined,
      AWS_WEB_IDENTITY_TOKEN_FILE: join(dir, 'token'),
      AWS_ROLE_ARN: 'arn:aws:iam::123456789012:role/clusterdns',
      AWS_ROLE_SESSION_NAME: 'clusterdns',
      AWS_ENDPOINT_URL_STS: moto.url,
    });
    fake.zones.set(
      'Z1',
      new Map([['', page([SOA('example.org.', 1), rrset('a.example.org.', 'A', 5, ['192.0.2.1'])])]]),
    );
    const run = await runCorefile('example.org {\n  route53 example.org.:Z1\n}');
    cleanups.push(() => run.stop());
    expect(rrLines((await run.ask('a.example.org', 'A')).answers)).toEqual(['a.example.org. 5 IN A 192.0.2.1']);
    // moto issues ASIA… keys; every request is signed with them and carries the session token.
    expect(fake.requests.length).toBeGreaterThan(0);
    expect(
      fake.requests.every((r) => /Credential=ASIA[A-Z0-9]+\/\d{8}\/us-east-1\/route53\/aws4_request/.test(r)),
    ).toBe(true);
    expect(fake.tokens.every((t) => t !== '')).toBe(true);
  });

  it('takes the region and the instance role from EC2 instance metadata (amazon-ec2-metadata-mock)', async () => {
    const imds = await startEc2Metadata({
      region: 'eu-west-3',
      role: 'dns-role',
      accessKeyId: 'ASIAIMDSROLE',
      secretAccessKey: 'imds-secret',
      token: 'imds-token',
      expiration: '2099-01-01T00:00:00Z',
    });
    cleanups.push(() => imds.stop());
    const fake = await fakeRoute53();
    awsEnv(fake, {
      AWS_REGION: undefined,
      AWS_DEFAULT_REGION: undefined,
      AWS_ACCESS_KEY_ID: undefined,
      AWS_SECRET_ACCESS_KEY: undefined,
      AWS_EC2_METADATA_DISABLED: undefined,
      AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.endpoint,
    });
    fake.zones.set(
      'Z1',
      new Map([['', page([SOA('example.org.', 1), rrset('a.example.org.', 'A', 5, ['192.0.2.1'])])]]),
    );
    const run = await runCorefile('example.org {\n  route53 example.org.:Z1\n}');
    cleanups.push(() => run.stop());
    expect(rrLines((await run.ask('a.example.org', 'A')).answers)).toEqual(['a.example.org. 5 IN A 192.0.2.1']);
    // A configured endpoint is signed for the region, here the instance's.
    expect(
      fake.requests.every((r) => r.includes('Credential=ASIAIMDSROLE/') && r.includes('/eu-west-3/route53/')),
    ).toBe(true);
    expect(fake.tokens.every((t) => t === 'imds-token')).toBe(true);
  });

  it('fails the start with the instance metadata error when no credentials are found, as CoreDNS', async () => {
    // The text .bin/coredns prints for the same environment (instance metadata refused on port 1).
    const fake = await fakeRoute53();
    awsEnv(fake, {
      AWS_ACCESS_KEY_ID: undefined,
      AWS_SECRET_ACCESS_KEY: undefined,
      AWS_EC2_METADATA_DISABLED: undefined,
      AWS_EC2_METADATA_SERVICE_ENDPOINT: 'http://127.0.0.1:1',
    });
    fake.zones.set('Z1', new Map([['', page([SOA('example.org.', 1)])]]));
    const err = await runCorefile('example.org {\n  route53 example.org.:Z1\n}').then(
      () => null,
      (e: unknown) => e,
    );
    expect((err as ConfigError).describe()).toBe(
      'plugin/route53: Corefile:2 - Error during parsing: failed to create route53 plugin: operation error Route 53: ListHostedZonesByName, exceeded maximum number of attempts, 3, get identity: get credentials: failed to refresh cached credentials, no EC2 IMDS role found, operation error ec2imds: GetMetadata, exceeded maximum number of attempts, 3, request send failed, Get "http://127.0.0.1:1/latest/meta-data/iam/security-credentials/": dial tcp 127.0.0.1:1: connect: connection refused',
    );
  });

  it('fails the start when a hosted zone does not exist, as CoreDNS', async () => {
    const fake = await fakeRoute53();
    awsEnv(fake);
    const err = await runCorefile('example.org {\n  route53 example.org.:ZNOPE\n}').then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).describe()).toBe(
      'plugin/route53: Corefile:2 - Error during parsing: failed to create route53 plugin: operation error Route 53: ListHostedZonesByName, https response error StatusCode: 404, RequestID: r-1, NoSuchHostedZone: No hosted zone found with ID: ZNOPE',
    );
  });
});
