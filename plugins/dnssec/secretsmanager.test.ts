/**
 * dnssec `key aws_secretsmanager`: keys fetched with GetSecretValue (SigV4-signed, AWS JSON 1.1)
 * from moto_server, a local server speaking the Secrets Manager API; a missing secret and a missing
 * region fail the setup with the Go SDK's wording.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { readKeyPair } from '../../src/dnssec/keys.js';
import { awsConfig, callCredentials, signedHeaders } from '../../src/dnssec/secretsmanager.js';
import { startMoto, type Moto } from '../../test/helpers/moto.js';
import { dispenserFor } from '../../test/helpers/setup.js';
import { parseDnssec, resolveDnssec } from './index.js';

let moto: Moto;
let dir = '';
let base = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dnssec-aws-'));
  base = join(
    dir,
    execFileSync('dnssec-keygen', ['-q', '-K', dir, '-a', 'ECDSAP256SHA256', '-f', 'KSK', 'example.org'], {
      encoding: 'utf8',
    }).trim(),
  );
  moto = await startMoto();
  await moto.createSecret(
    'Kexample.org.key',
    JSON.stringify({ key: readFileSync(`${base}.key`, 'utf8'), private: readFileSync(`${base}.private`, 'utf8') }),
  );
}, 90_000);
afterAll(async () => {
  await moto?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const parse = (text: string) => parseDnssec(dispenserFor(text, 'dnssec'), ['example.org.']);

describe('dnssec: the GetSecretValue request', () => {
  it('is signed by src/aws/sigv4.ts exactly as the former dedicated signer did', () => {
    const h = signedHeaders(
      { region: 'us-east-1' },
      {
        accessKeyId: 'AKIDEXAMPLE',
        secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
        sessionToken: 'tok',
      },
      new URL('https://secretsmanager.us-east-1.amazonaws.com/'),
      'secretsmanager.GetSecretValue',
      '{"SecretId":"k"}',
      new Date('2015-08-30T12:36:00Z'),
    );
    // The headers and signature the signer of src/dnssec/secretsmanager.ts produced before it was
    // replaced by the shared one (computed with the build before this change).
    expect(h).toEqual({
      'content-type': 'application/x-amz-json-1.1',
      host: 'secretsmanager.us-east-1.amazonaws.com',
      'x-amz-date': '20150830T123600Z',
      'x-amz-target': 'secretsmanager.GetSecretValue',
      'x-amz-security-token': 'tok',
      authorization:
        'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/secretsmanager/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-amz-target, Signature=38a08e992cd3f378ab3871cc4c98181551f64b947874a0f7665745aae12c177a',
    });
  });
});

describe('dnssec: key aws_secretsmanager', () => {
  it('reads the key pair stored in the secret', async () => {
    const cfg = await resolveDnssec(parse('dnssec {\n key aws_secretsmanager Kexample.org.key\n}'), moto.env);
    const want = readKeyPair(base);
    expect(cfg.keys).toHaveLength(1);
    expect(cfg.keys[0]!.tag).toBe(want.tag);
    expect(cfg.keys[0]!.rdata).toEqual(want.rdata);
  });

  it('a missing secret fails the setup with the service error', async () => {
    const err = await resolveDnssec(parse('dnssec {\n key aws_secretsmanager nosuch\n}'), moto.env).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).describe()).toMatch(
      /^plugin\/dnssec: operation error Secrets Manager: GetSecretValue, https response error StatusCode: \d+, RequestID: \S*, ResourceNotFoundException: /,
    );
  });

  it('needs a region and credentials, as the SDK does', async () => {
    // Instance metadata switched off: the chain's last source must not reach 169.254.169.254.
    const none = { HOME: dir, AWS_EC2_METADATA_DISABLED: 'true' };
    await expect(awsConfig(none)).rejects.toThrow(/an AWS region is required, but was not found/);
    const noKeys = await awsConfig({ ...none, AWS_REGION: 'eu-west-1' });
    await expect(callCredentials(noKeys)).rejects.toThrow(
      'operation error Secrets Manager: GetSecretValue, get identity: get credentials: failed to refresh cached credentials, no EC2 IMDS role found, operation error ec2imds: GetMetadata, access disabled to EC2 IMDS via client option, or "AWS_EC2_METADATA_DISABLED" environment variable',
    );
    const keys = await awsConfig({
      ...none,
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'a',
      AWS_SECRET_ACCESS_KEY: 'b',
    });
    expect(keys.endpoint).toBe('https://secretsmanager.eu-west-1.amazonaws.com');
  });

  it('takes web identity credentials (EKS IRSA) through STS, as route53 does', async () => {
    const token = join(dir, 'web-identity-token');
    writeFileSync(token, 'eyJhbGciOiJSUzI1NiJ9.e30.sig');
    const env = {
      ...moto.env,
      AWS_ACCESS_KEY_ID: undefined,
      AWS_SECRET_ACCESS_KEY: undefined,
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_WEB_IDENTITY_TOKEN_FILE: token,
      AWS_ROLE_ARN: 'arn:aws:iam::123456789012:role/clusterdns',
      AWS_ROLE_SESSION_NAME: 'clusterdns',
      AWS_ENDPOINT_URL_STS: moto.endpoint,
    };
    const cfg = await awsConfig(env);
    expect(cfg.credentials.source).toBe('WebIdentityCredentials');
    // moto's STS issues temporary ASIA… keys with a session token.
    expect(await callCredentials(cfg)).toMatchObject({ accessKeyId: expect.stringMatching(/^ASIA/) });
    const dnssec = await resolveDnssec(parse('dnssec {\n key aws_secretsmanager Kexample.org.key\n}'), env);
    expect(dnssec.keys[0]!.tag).toBe(readKeyPair(base).tag);
  });
});
