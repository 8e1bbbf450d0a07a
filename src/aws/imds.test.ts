/**
 * The instance metadata client against AWS's own mock (amazon-ec2-metadata-mock, IMDSv2 only):
 * region from the identity document, the role's keys; against a local stand-in for what the mock
 * cannot do: IMDSv1 fallback when the token call is refused, a 401 that asks for a new token, a
 * server that never answers (the deadline, never a hang) and a disabled client.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startEc2Metadata } from '../../test/helpers/ec2metadata.js';
import { ImdsClient, ec2RoleProvider } from './imds.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function standIn(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('EC2 instance metadata', () => {
  it('reads the region and the role keys from amazon-ec2-metadata-mock over IMDSv2', async () => {
    const mock = await startEc2Metadata({
      region: 'eu-west-3',
      role: 'dns-role',
      accessKeyId: 'ASIAIMDSTEST',
      secretAccessKey: 'imds-secret',
      token: 'imds-session-token',
      expiration: '2099-01-01T00:00:00Z',
    });
    cleanups.push(() => mock.stop());
    const client = new ImdsClient({ env: { AWS_EC2_METADATA_SERVICE_ENDPOINT: mock.endpoint } });
    expect(await client.region()).toBe('eu-west-3');
    const c = await client.roleCredentials();
    expect(c.credentials).toEqual({
      accessKeyId: 'ASIAIMDSTEST',
      secretAccessKey: 'imds-secret',
      sessionToken: 'imds-session-token',
    });
    // Capped at one hour from now, as ec2rolecreds does, so that the keys are fetched again.
    expect(c.expires).toBeLessThanOrEqual(Date.now() + 3_600_000);
    expect(await ec2RoleProvider(client).get()).toEqual(c.credentials);
  });

  it('falls back to IMDSv1 when the token call is refused, and renews a rejected token', async () => {
    const seen: string[] = [];
    let tokens = 0;
    let v2 = false;
    const url = await standIn((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers['x-aws-ec2-metadata-token'] ?? '-'}`);
      if (req.method === 'PUT') {
        if (!v2) return res.writeHead(403).end();
        tokens++;
        return res.writeHead(200, { 'x-aws-ec2-metadata-token-ttl-seconds': '300' }).end(`t${tokens}`);
      }
      // The first token is refused (as after an instance restart); the second works.
      if (v2 && req.headers['x-aws-ec2-metadata-token'] !== 't2') return res.writeHead(401).end();
      res.writeHead(200).end(JSON.stringify({ region: 'ap-south-1' }));
    });
    expect(await new ImdsClient({ env: { AWS_EC2_METADATA_SERVICE_ENDPOINT: url } }).region()).toBe('ap-south-1');
    expect(seen).toEqual(['PUT /latest/api/token -', 'GET /latest/dynamic/instance-identity/document -']);
    seen.length = 0;
    v2 = true;
    expect(await new ImdsClient({ env: { AWS_EC2_METADATA_SERVICE_ENDPOINT: url } }).region()).toBe('ap-south-1');
    expect(seen).toEqual([
      'PUT /latest/api/token -',
      'GET /latest/dynamic/instance-identity/document t1',
      'PUT /latest/api/token -',
      'GET /latest/dynamic/instance-identity/document t2',
    ]);
  });

  it('gives up with a reason when the service does not answer, and when disabled', async () => {
    const url = await standIn(() => {
      // Never answers: each attempt ends at its deadline.
    });
    const client = new ImdsClient({
      env: { AWS_EC2_METADATA_SERVICE_ENDPOINT: url, AWS_EC2_METADATA_V1_DISABLED: 'true' },
      attemptTimeoutMs: 200,
    });
    await expect(client.region()).rejects.toThrow(
      `operation error ec2imds: GetRegion, exceeded maximum number of attempts, 3, request send failed, Put "${url}/latest/api/token": context deadline exceeded (no reply within 200ms)`,
    );
    await expect(new ImdsClient({ env: { AWS_EC2_METADATA_DISABLED: 'true' } }).roleCredentials()).rejects.toThrow(
      'no EC2 IMDS role found, operation error ec2imds: GetMetadata, access disabled to EC2 IMDS via client option, or "AWS_EC2_METADATA_DISABLED" environment variable',
    );
    const refused = new ImdsClient({ env: { AWS_EC2_METADATA_SERVICE_ENDPOINT: 'http://127.0.0.1:1' } });
    await expect(refused.roleCredentials()).rejects.toThrow(
      'no EC2 IMDS role found, operation error ec2imds: GetMetadata, exceeded maximum number of attempts, 3, request send failed, Get "http://127.0.0.1:1/latest/meta-data/iam/security-credentials/": dial tcp 127.0.0.1:1: connect: connection refused',
    );
  });
});
