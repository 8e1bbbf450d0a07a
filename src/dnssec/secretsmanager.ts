/**
 * DNSSEC key pairs read from AWS Secrets Manager, for `dnssec { key aws_secretsmanager SECRET... }`
 * (CoreDNS's ParseKeyFromAWSSecretsManager): one `GetSecretValue` call per secret, whose
 * SecretString is JSON `{"key": "<.key file text>", "private": "<.private file text>"}`.
 *
 * No AWS SDK: the call is one signed HTTPS POST (AWS JSON 1.1 protocol, Signature Version 4 by
 * src/aws/sigv4.ts), with the configuration the Go SDK's `config.LoadDefaultConfig` loads:
 * credentials from the same chain as route53's (src/aws/config.ts: the environment's keys, a web
 * identity token through STS, the profile, container credentials, the EC2 instance role), the
 * region from AWS_REGION / AWS_DEFAULT_REGION or the profile's `region` (never from instance
 * metadata: LoadDefaultConfig does not ask it), the endpoint from
 * AWS_ENDPOINT_URL_SECRETS_MANAGER / AWS_ENDPOINT_URL or `https://secretsmanager.REGION.amazonaws.com`.
 */
import { resolveAwsConfig, type ResolveOptions } from '../aws/config.js';
import type { CredentialProvider } from '../aws/provider.js';
import { type AwsCredentials, signRequest } from '../aws/sigv4.js';
import { keyFromTexts, type SigningKey } from './keys.js';

const OP = 'operation error Secrets Manager: GetSecretValue';

export interface AwsConfig {
  readonly region: string;
  readonly credentials: CredentialProvider;
  readonly endpoint: string;
}

/**
 * The configuration the Go SDK would load from `env` and the shared files. Rejects as
 * LoadDefaultConfig does (a named profile that does not exist, a profile source clusterdns does
 * not implement) or, worded as the call's failure, when no region is configured.
 */
export async function awsConfig(env: NodeJS.ProcessEnv = process.env, ro: ResolveOptions = {}): Promise<AwsConfig> {
  const { credentials, region } = await resolveAwsConfig({}, env, { ...ro, imdsRegion: false });
  if (region === '')
    throw new Error(`${OP}, failed to resolve service endpoint, an AWS region is required, but was not found`);
  const endpoint = (
    env.AWS_ENDPOINT_URL_SECRETS_MANAGER ??
    env.AWS_ENDPOINT_URL ??
    `https://secretsmanager.${region}.amazonaws.com`
  ).replace(/\/+$/, '');
  return { region, credentials, endpoint };
}

/** The keys to sign the call with, or the SDK's error when the chain has none. */
export async function callCredentials(cfg: AwsConfig): Promise<AwsCredentials> {
  try {
    return await cfg.credentials.get();
  } catch (e) {
    throw new Error(
      `${OP}, get identity: get credentials: failed to refresh cached credentials, ${(e as Error).message}`,
    );
  }
}

/** The headers of a SigV4-signed AWS JSON 1.1 POST of `body` to `url` calling `target`. */
export function signedHeaders(
  cfg: Pick<AwsConfig, 'region'>,
  credentials: AwsCredentials,
  url: URL,
  target: string,
  body: string,
  now: Date,
): Record<string, string> {
  const { accessKeyId, secretAccessKey, sessionToken } = credentials;
  return signRequest({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': target },
    body,
    region: cfg.region,
    service: 'secretsmanager',
    credentials: { accessKeyId, secretAccessKey, ...(sessionToken !== undefined ? { sessionToken } : {}) },
    now,
  });
}

/** GetSecretValue of `secretId`: its SecretString. */
export async function getSecretString(cfg: AwsConfig, secretId: string, timeoutMs = 10_000): Promise<string> {
  const url = new URL(`${cfg.endpoint}/`);
  const body = JSON.stringify({ SecretId: secretId });
  const headers = signedHeaders(
    cfg,
    await callCredentials(cfg),
    url,
    'secretsmanager.GetSecretValue',
    body,
    new Date(),
  );
  delete headers.host;
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    const cause = (e as { cause?: { message?: string } }).cause?.message ?? (e as Error).message;
    throw new Error(`${OP}, https response error: ${cause}`);
  }
  const text = await res.text();
  if (!res.ok) {
    let type = res.headers.get('x-amzn-errortype') ?? '';
    let message = text;
    try {
      const j = JSON.parse(text) as { __type?: string; message?: string; Message?: string };
      type = j.__type ?? type;
      message = j.message ?? j.Message ?? text;
    } catch {
      // not JSON: the body as it is
    }
    const requestId = res.headers.get('x-amzn-requestid') ?? '';
    throw new Error(
      `${OP}, https response error StatusCode: ${res.status}, RequestID: ${requestId}, ${type.split('#').pop()}: ${message}`,
    );
  }
  const j = JSON.parse(text) as { SecretString?: string };
  if (typeof j.SecretString !== 'string') throw new Error('unexpected end of JSON input');
  return j.SecretString;
}

/** The key pair stored under `secretId` (errors worded as CoreDNS's where they are its own). */
export async function keyFromSecretsManager(cfg: AwsConfig, secretId: string): Promise<SigningKey> {
  const s = await getSecretString(cfg, secretId);
  let data: { key?: unknown; private?: unknown };
  try {
    data = JSON.parse(s) as { key?: unknown; private?: unknown };
  } catch (e) {
    throw new Error((e as Error).message);
  }
  const key = typeof data.key === 'string' ? data.key : '';
  const priv = typeof data.private === 'string' ? data.private : '';
  try {
    return keyFromTexts(key, priv, secretId);
  } catch (e) {
    const m = (e as Error).message;
    throw new Error(m === 'no public key found' ? 'invalid public key format' : m);
  }
}
