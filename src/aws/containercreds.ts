/**
 * Container credentials (ECS task roles, EKS Pod Identity) as aws-sdk-go-v2's endpointcreds
 * provider fetches them: `GET` the URL, with the token of `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`
 * (read again on every fetch: EKS rotates it) or `AWS_CONTAINER_AUTHORIZATION_TOKEN` as the
 * `Authorization` header, and a JSON answer `{AccessKeyId, SecretAccessKey, Token, Expiration}`.
 * The URL is `http://169.254.170.2` + `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`, else
 * `AWS_CONTAINER_CREDENTIALS_FULL_URI`, whose host, for plain http, must be loopback or the ECS/EKS
 * agent's address (the SDK's isAllowedHost). Keys are refreshed five minutes before expiry.
 * API: https://docs.aws.amazon.com/sdkref/latest/guide/feature-container-credentials.html
 */
import { readFileSync } from 'node:fs';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { metadataRequest } from '../util/metadatahttp.js';
import { CachedProvider, type CredentialProvider, type ExpiringCredentials } from './provider.js';

type Env = Readonly<Record<string, string | undefined>>;

const ECS_ENDPOINT = 'http://169.254.170.2';
/** ECS's agent, EKS Pod Identity's agent (IPv4 and IPv6). */
const AGENT_IPS = new Set(['169.254.170.2', '169.254.170.23', 'fd00:ec2::23']);

function allowedIp(ip: string): boolean {
  if (ip.startsWith('127.') || ip === '::1') return true;
  return AGENT_IPS.has(ip.toLowerCase());
}

/** The credentials URL the environment names, or null when neither variable is set. */
export function containerCredentialsUrl(env: Env): { url: string; full: boolean } | null {
  if (env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI) {
    return { url: ECS_ENDPOINT + env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, full: false };
  }
  if (env.AWS_CONTAINER_CREDENTIALS_FULL_URI) return { url: env.AWS_CONTAINER_CREDENTIALS_FULL_URI, full: true };
  return null;
}

/** The SDK's check of a full URI (resolveLocalHTTPCredProvider); throws its error. */
export async function checkFullUri(uri: string): Promise<void> {
  let u: URL;
  try {
    u = new URL(uri);
  } catch (e) {
    throw new Error(`invalid URL, ${(e as Error).message}`);
  }
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (host === '') throw new Error('unable to parse host from local HTTP cred provider URL');
  if (u.protocol !== 'http:') return;
  let ips: string[];
  if (isIP(host)) ips = [host];
  else {
    try {
      ips = (await lookup(host, { all: true })).map((a) => a.address);
    } catch (e) {
      throw new Error(`failed to resolve host ${JSON.stringify(host)}, ${(e as Error).message}`);
    }
  }
  if (!ips.every(allowedIp)) {
    throw new Error(`invalid endpoint host, ${JSON.stringify(host)}, only loopback/ecs/eks hosts are allowed`);
  }
}

/** One fetch; errors worded as the SDK's (`failed to load credentials, …`). */
export async function fetchContainerCredentials(
  url: string,
  env: Env,
  signal?: AbortSignal,
): Promise<ExpiringCredentials> {
  let token = env.AWS_CONTAINER_AUTHORIZATION_TOKEN ?? '';
  const file = env.AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE;
  if (file) {
    try {
      token = readFileSync(file, 'utf8');
    } catch (e) {
      throw new Error(
        `failed to load credentials, resolve auth token: failed to read authorization token from ${file}: ${(e as Error).message}`,
      );
    }
  }
  if (/[\r\n]/.test(token)) {
    throw new Error(
      'failed to load credentials, resolve auth token: authorization token contains invalid newline sequence',
    );
  }
  const op = 'operation error endpointcreds: GetCredentials';
  let res;
  try {
    res = await metadataRequest({
      method: 'GET',
      url: new URL(url),
      headers: { accept: 'application/json', ...(token ? { authorization: token } : {}) },
      timeoutMs: 5000,
      ...(signal ? { signal } : {}),
    });
  } catch (e) {
    throw new Error(`failed to load credentials, ${op}, request send failed, ${(e as Error).message}`);
  }
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(res.body) as Record<string, unknown>;
  } catch (e) {
    throw new Error(
      `failed to load credentials, ${op}, StatusCode: ${res.status}, failed to deserialize json response, ${(e as Error).message}`,
    );
  }
  if (res.status !== 200) {
    throw new Error(
      `failed to load credentials, ${op}, StatusCode: ${res.status}, ${String(body.code ?? '')}: ${String(body.message ?? '')}`,
    );
  }
  const { AccessKeyId: id, SecretAccessKey: secret, Token: sessionToken } = body;
  if (typeof id !== 'string' || typeof secret !== 'string' || id === '' || secret === '') {
    throw new Error(`failed to load credentials, ${op}, no AccessKeyId or SecretAccessKey in the response from ${url}`);
  }
  const expires = Date.parse(String(body.Expiration ?? ''));
  return {
    credentials: {
      accessKeyId: id,
      secretAccessKey: secret,
      ...(typeof sessionToken === 'string' && sessionToken !== '' ? { sessionToken } : {}),
    },
    ...(Number.isNaN(expires) ? {} : { expires }),
  };
}

/** The cached provider (the SDK's endpointcreds wrapped with a five-minute expiry window). */
export function containerProvider(url: string, env: Env, onStale?: (err: Error) => void): CredentialProvider {
  return new CachedProvider('CredentialsEndpointProvider', (signal) => fetchContainerCredentials(url, env, signal), {
    expiryWindowMs: 5 * 60_000,
    ...(onStale ? { onStale } : {}),
  });
}
