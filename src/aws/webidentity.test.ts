/**
 * Web identity credentials: STS AssumeRoleWithWebIdentity against moto_server (which implements
 * it), the request's fields and an STS error against a local stand-in that records them, the
 * token file read again on each refresh, and the endpoint variables aws-sdk-go-v2 reads.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MotoServer } from '../../test/helpers/moto.js';
import { assumeRoleWithWebIdentity, stsEndpoint, webIdentityProvider } from './webidentity.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function tokenFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'webid-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'token');
  writeFileSync(path, text);
  return path;
}

const ROLE = 'arn:aws:iam::123456789012:role/clusterdns';

describe('web identity', () => {
  it('exchanges the token for temporary keys at moto STS', async () => {
    const moto = await MotoServer.start();
    cleanups.push(() => moto.stop());
    const c = await assumeRoleWithWebIdentity({
      tokenFile: tokenFile('eyJhbGciOiJSUzI1NiJ9.e30.sig'),
      roleArn: ROLE,
      sessionName: 'clusterdns-test',
      region: 'us-east-1',
      env: { AWS_ENDPOINT_URL_STS: moto.url },
    });
    expect(c.credentials.accessKeyId).toMatch(/^ASIA/);
    expect(c.credentials.secretAccessKey).not.toBe('');
    expect(c.credentials.sessionToken).not.toBe('');
    expect(c.expires).toBeGreaterThan(Date.now());
  });

  it('sends the role, session name and current token; words an STS error as the SDK', async () => {
    const bodies: URLSearchParams[] = [];
    let fail = false;
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        bodies.push(new URLSearchParams(body));
        if (fail) {
          res
            .writeHead(400, { 'x-amzn-requestid': 'req-9' })
            .end(
              '<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>expired token</Message></Error><RequestId>req-9</RequestId></ErrorResponse>',
            );
          return;
        }
        res
          .writeHead(200)
          .end(
            `<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIA${bodies.length}</AccessKeyId><SecretAccessKey>s</SecretAccessKey><SessionToken>t</SessionToken><Expiration>${new Date(Date.now() + 60_000).toISOString()}</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`,
          );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const file = tokenFile('first-token');
    // Keys valid for one minute are inside the five-minute window: every get() refreshes.
    const p = webIdentityProvider({
      tokenFile: file,
      roleArn: ROLE,
      sessionName: '',
      region: 'eu-west-1',
      env: { AWS_ENDPOINT_URL: url },
    });
    expect((await p.get()).accessKeyId).toBe('ASIA1');
    writeFileSync(file, 'rotated-token');
    expect((await p.get()).accessKeyId).toBe('ASIA2');
    expect(bodies.map((b) => [b.get('Action'), b.get('RoleArn'), b.get('WebIdentityToken')])).toEqual([
      ['AssumeRoleWithWebIdentity', ROLE, 'first-token'],
      ['AssumeRoleWithWebIdentity', ROLE, 'rotated-token'],
    ]);
    // No session name: the SDK's default, the time in Unix nanoseconds.
    expect(bodies[0]!.get('RoleSessionName')).toMatch(/^\d{19}$/);
    fail = true;
    const stale: string[] = [];
    const p2 = webIdentityProvider({
      tokenFile: file,
      roleArn: ROLE,
      sessionName: 's',
      region: 'eu-west-1',
      env: { AWS_ENDPOINT_URL_STS: url },
      onStale: (e) => stale.push(e.message),
    });
    await expect(p2.get()).rejects.toThrow(
      'failed to retrieve credentials, operation error STS: AssumeRoleWithWebIdentity, https response error StatusCode: 400, RequestID: req-9, api error InvalidIdentityToken: expired token',
    );
    expect(stale).toEqual([]);
    await expect(
      assumeRoleWithWebIdentity({
        tokenFile: '/nonexistent/token',
        roleArn: ROLE,
        sessionName: 's',
        region: 'eu-west-1',
        env: {},
      }),
    ).rejects.toThrow(/^failed to retrieve jwt from provide source, unable to read file at \/nonexistent\/token: /);
  });

  it('uses the SDK endpoint variables, else the regional endpoint', () => {
    expect(stsEndpoint('eu-west-1', {})).toBe('https://sts.eu-west-1.amazonaws.com');
    expect(stsEndpoint('cn-north-1', {})).toBe('https://sts.cn-north-1.amazonaws.com.cn');
    expect(stsEndpoint('eu-west-1', { AWS_ENDPOINT_URL: 'http://a/', AWS_ENDPOINT_URL_STS: 'http://b/' })).toBe(
      'http://b',
    );
    expect(stsEndpoint('eu-west-1', { AWS_ENDPOINT_URL: 'http://a' })).toBe('http://a');
    expect(
      stsEndpoint('eu-west-1', { AWS_ENDPOINT_URL: 'http://a', AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true' }),
    ).toBe('https://sts.eu-west-1.amazonaws.com');
  });
});
