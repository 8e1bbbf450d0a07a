/**
 * Differential: route53 with the temporary credentials real clusters use, against CoreDNS 1.15.0.
 * Both servers start with no static keys and read the same hosted zone from moto_server, through a
 * recording proxy that notes the access key id each request was signed with:
 * - web identity (EKS IRSA): `AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`, exchanged at moto's STS
 *   (`AWS_ENDPOINT_URL_STS`);
 * - EC2 instance metadata: the region and the instance role's keys from AWS's own mock
 *   (amazon-ec2-metadata-mock, IMDSv2 only; `AWS_EC2_METADATA_SERVICE_ENDPOINT`), no region set;
 * - container credentials (EKS Pod Identity): `AWS_CONTAINER_CREDENTIALS_FULL_URI` with
 *   `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`, served by a local stand-in speaking the documented API
 *   (AWS publishes no mock of the agent), which checks the token.
 * Each case compares the answers of both servers and checks both signed with the source's keys.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Ec2Metadata, ec2MetadataMissing, startEc2Metadata } from '../helpers/ec2metadata.js';
import { type MotoRecordSet, MotoServer, motoMissing } from '../helpers/moto.js';
import {
  assertResult,
  CLUSTERDNS_BIN,
  COREDNS_BIN,
  generate,
  missingBinaries,
  newResult,
  runQueries,
  startPair,
  totalCompared,
  type Pair,
  type Variant,
} from './harness.js';

const RECORDS: MotoRecordSet[] = [
  {
    name: 'example.org.',
    type: 'SOA',
    ttl: 900,
    values: ['ns-1.awsdns-01.org. hostmaster.example.org. 1 7200 900 1209600 86400'],
  },
  { name: 'www.example.org.', type: 'A', ttl: 300, values: ['192.0.2.10'] },
  { name: 'www.example.org.', type: 'AAAA', ttl: 300, values: ['2001:db8::10'] },
  { name: 'alias.example.org.', type: 'CNAME', ttl: 60, values: ['www.example.org.'] },
  { name: 'example.org.', type: 'TXT', ttl: 300, values: ['"v=spf1 -all"'] },
];
const NAMES = ['example.org', 'www.example.org', 'alias.example.org', 'nosuch.example.org'];
const TYPES = ['A', 'AAAA', 'CNAME', 'TXT', 'SOA'];
const VARIANTS: readonly Variant[] = [{ proto: 'udp' }, { proto: 'tcp', edns: 4096 }];

/** A proxy to moto that records the access key id of each request's signature. */
async function signingProxy(target: string): Promise<{ url: string; keys: string[]; close(): Promise<void> }> {
  const keys: string[] = [];
  const t = new URL(target);
  const server: Server = createServer((req, res) => {
    keys.push(/Credential=([^/]+)\//.exec(String(req.headers.authorization ?? ''))?.[1] ?? '');
    const up = request(
      { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.writeHead(502).end());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    keys,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe('differential: route53 with temporary credentials', () => {
  const missing = missingBinaries() ?? motoMissing() ?? ec2MetadataMissing();
  let moto: MotoServer;
  let proxy: Awaited<ReturnType<typeof signingProxy>>;
  let zoneId = '';
  let dir = '';
  const saved: Record<string, string | undefined> = {};
  const stops: (() => Promise<void>)[] = [];

  it('has CoreDNS 1.15.0, moto_server, amazon-ec2-metadata-mock and a build to compare', () => {
    expect(missing).toBeNull();
  });

  /** Set (undefined: remove) process variables the servers inherit; restored after all. */
  const setEnv = (vars: Record<string, string | undefined>): void => {
    for (const [k, v] of Object.entries(vars)) {
      if (!(k in saved)) saved[k] = process.env[k];
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  /** Everything that could give either server credentials or a region, cleared. */
  const BASE: Record<string, string | undefined> = {
    AWS_ACCESS_KEY_ID: undefined,
    AWS_SECRET_ACCESS_KEY: undefined,
    AWS_SESSION_TOKEN: undefined,
    AWS_PROFILE: undefined,
    AWS_REGION: 'us-east-1',
    AWS_DEFAULT_REGION: undefined,
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
    AWS_CONFIG_FILE: '/nonexistent',
    AWS_WEB_IDENTITY_TOKEN_FILE: undefined,
    AWS_ROLE_ARN: undefined,
    AWS_ROLE_SESSION_NAME: undefined,
    AWS_CONTAINER_CREDENTIALS_FULL_URI: undefined,
    AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: undefined,
    AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: undefined,
    AWS_EC2_METADATA_SERVICE_ENDPOINT: 'http://127.0.0.1:1',
    AWS_EC2_METADATA_DISABLED: undefined,
    AWS_ENDPOINT_URL_STS: undefined,
  };

  beforeAll(async () => {
    if (missing) return;
    moto = await MotoServer.start();
    zoneId = await moto.createZone('example.org.');
    await moto.change(zoneId, RECORDS);
    proxy = await signingProxy(moto.url);
    dir = mkdtempSync(join(tmpdir(), 'r53-diff-creds-'));
  }, 120_000);

  afterAll(async () => {
    for (const s of stops.splice(0).reverse()) await s();
    await proxy?.close();
    await moto?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    const t = totalCompared();
    process.stdout.write(`differential route53 credentials: ${t.compared} replies compared over ${t.cases} cases\n`);
  });

  /** Start both servers with `env`, compare their answers, return the keys each signed with. */
  const compare = async (label: string, env: Record<string, string | undefined>): Promise<string[]> => {
    setEnv({ ...BASE, AWS_ENDPOINT_URL_ROUTE_53: proxy.url, ...env });
    proxy.keys.length = 0;
    const pair: Pair = await startPair(
      { corefile: `example.org:{{DNS}} {\n  route53 example.org.:${zoneId}\n}\n` },
      { name: 'www.example.org', type: 'A' },
    );
    stops.push(() => pair.stop());
    try {
      const result = newResult(`route53-${label}`);
      const queries = generate(NAMES, TYPES, VARIANTS, 29);
      await runQueries(pair, result, queries, ['route53'], { concurrency: 4 });
      assertResult(result, queries.length);
    } finally {
      await pair.stop();
    }
    return [...new Set(proxy.keys)];
  };

  it('fails the start with the same words when no source gives credentials or a region', async () => {
    const corefile = join(dir, 'Corefile.fail');
    writeFileSync(corefile, `example.org:0 {\n  route53 example.org.:${zoneId}\n}\n`);
    /** The line each server prints for its failed start. */
    const startError = async (env: Record<string, string | undefined>): Promise<string[]> => {
      setEnv({ ...BASE, AWS_ENDPOINT_URL_ROUTE_53: proxy.url, ...env });
      const run = async (cmd: string, args: string[]): Promise<string> => {
        const out = await promisify(execFile)(cmd, args, { timeout: 60_000, cwd: dir, env: process.env }).then(
          (r) => `${r.stdout}${r.stderr}`,
          (e: { stdout?: string; stderr?: string }) => `${e.stdout ?? ''}${e.stderr ?? ''}`,
        );
        return out.split('\n').find((l) => l.startsWith('plugin/route53:')) ?? `no route53 error in:\n${out}`;
      };
      return Promise.all([
        run(COREDNS_BIN, ['-conf', corefile]),
        run(process.execPath, [CLUSTERDNS_BIN, '-conf', corefile]),
      ]);
    };
    // Nothing answers on port 1: the instance role cannot be found.
    const [ref, cand] = await startError({});
    expect(ref).toMatch(/no EC2 IMDS role found/);
    expect(cand).toBe(ref);
    // No region anywhere, instance metadata turned off.
    const [ref2, cand2] = await startError({ AWS_REGION: undefined, AWS_EC2_METADATA_DISABLED: 'true' });
    expect(ref2).toMatch(/failed to get region from IMDS/);
    expect(cand2).toBe(ref2);
  }, 180_000);

  it('web identity (EKS IRSA): both exchange the token at STS and sign with its keys', async () => {
    const token = join(dir, 'token');
    writeFileSync(token, 'eyJhbGciOiJSUzI1NiJ9.e30.sig');
    const keys = await compare('web-identity', {
      AWS_WEB_IDENTITY_TOKEN_FILE: token,
      AWS_ROLE_ARN: 'arn:aws:iam::123456789012:role/clusterdns',
      AWS_ROLE_SESSION_NAME: 'dns',
      AWS_ENDPOINT_URL_STS: moto.url,
    });
    // moto issues ASIA… keys for each AssumeRoleWithWebIdentity; nothing was signed otherwise.
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((k) => /^ASIA[A-Z0-9]{16}$/.test(k))).toBe(true);
  }, 180_000);

  it('EC2 instance metadata: both take the region and the role keys from the mock', async () => {
    const imds: Ec2Metadata = await startEc2Metadata({
      region: 'eu-west-3',
      role: 'dns-role',
      accessKeyId: 'ASIAIMDSROLEKEY',
      secretAccessKey: 'imds-secret',
      token: 'imds-token',
      expiration: '2099-01-01T00:00:00Z',
    });
    stops.push(() => imds.stop());
    const keys = await compare('imds', { AWS_REGION: undefined, AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.endpoint });
    expect(keys).toEqual(['ASIAIMDSROLEKEY']);
  }, 180_000);

  it('container credentials (EKS Pod Identity): both fetch the keys with the token file', async () => {
    const tokenFile = join(dir, 'pod-token');
    writeFileSync(tokenFile, 'pod-identity-token');
    const auths: string[] = [];
    const agent = createServer((req, res) => {
      auths.push(String(req.headers.authorization ?? ''));
      if (req.headers.authorization !== 'pod-identity-token') {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"code":"AccessDenied","message":"token"}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          AccessKeyId: 'ASIAPODIDENTITY',
          SecretAccessKey: 'pod-secret',
          Token: 'pod-session',
          AccountId: '123456789012',
          Expiration: new Date(Date.now() + 6 * 3_600_000).toISOString(),
        }),
      );
    });
    await new Promise<void>((r) => agent.listen(0, '127.0.0.1', r));
    stops.push(() => new Promise<void>((r) => agent.close(() => r())));
    const keys = await compare('pod-identity', {
      AWS_CONTAINER_CREDENTIALS_FULL_URI: `http://127.0.0.1:${(agent.address() as AddressInfo).port}/v1/credentials`,
      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: tokenFile,
    });
    expect(keys).toEqual(['ASIAPODIDENTITY']);
    expect(auths.length).toBeGreaterThanOrEqual(2);
    expect(auths.every((a) => a === 'pod-identity-token')).toBe(true);
  }, 180_000);
});
