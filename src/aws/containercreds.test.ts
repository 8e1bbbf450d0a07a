/**
 * Container credentials (ECS task roles, EKS Pod Identity) against a local stand-in speaking the
 * documented API (AWS publishes no mock of the agent): the Authorization header from the token file,
 * read again on each fetch; the JSON keys; the agent's error; the SDK's check of a full URI's host.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkFullUri, containerCredentialsUrl, fetchContainerCredentials } from './containercreds.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('container credentials', () => {
  it('fetches keys with the token file as Authorization, and words the agent error', async () => {
    const auths: string[] = [];
    const server = createServer((req, res) => {
      auths.push(`${req.url} ${req.headers.authorization ?? '-'}`);
      if (req.headers.authorization !== 'tok-2') {
        res.writeHead(403, { 'content-type': 'application/json' }).end('{"code":"AccessDenied","message":"bad token"}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          AccessKeyId: 'ASIAPOD',
          SecretAccessKey: 'pod-secret',
          Token: 'pod-token',
          Expiration: '2099-01-01T00:00:00Z',
          AccountId: '123456789012',
        }),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/credentials`;
    const dir = mkdtempSync(join(tmpdir(), 'podid-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'token');
    writeFileSync(file, 'tok-1');
    const env = {
      AWS_CONTAINER_CREDENTIALS_FULL_URI: url,
      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: file,
      AWS_CONTAINER_AUTHORIZATION_TOKEN: 'ignored',
    };
    await expect(fetchContainerCredentials(url, env)).rejects.toThrow(
      'failed to load credentials, operation error endpointcreds: GetCredentials, StatusCode: 403, AccessDenied: bad token',
    );
    writeFileSync(file, 'tok-2');
    const c = await fetchContainerCredentials(url, env);
    expect(c).toEqual({
      credentials: { accessKeyId: 'ASIAPOD', secretAccessKey: 'pod-secret', sessionToken: 'pod-token' },
      expires: Date.parse('2099-01-01T00:00:00Z'),
    });
    expect(auths).toEqual(['/v1/credentials tok-1', '/v1/credentials tok-2']);
  });

  it('takes the relative URI first; allows only loopback and the agents over plain http', async () => {
    expect(
      containerCredentialsUrl({
        AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/v2/creds/x',
        AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://127.0.0.1/',
      }),
    ).toEqual({ url: 'http://169.254.170.2/v2/creds/x', full: false });
    expect(containerCredentialsUrl({})).toBeNull();
    await checkFullUri('http://127.0.0.1:9/x');
    await checkFullUri('http://169.254.170.23/v1/credentials');
    await checkFullUri('http://[fd00:ec2::23]/v1/credentials');
    await checkFullUri('https://creds.example.test/x');
    await expect(checkFullUri('http://192.0.2.1/x')).rejects.toThrow(
      'invalid endpoint host, "192.0.2.1", only loopback/ecs/eks hosts are allowed',
    );
  });
});
