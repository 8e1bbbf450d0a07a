/**
 * Web identity credentials (EKS IAM roles for service accounts): the projected service-account
 * token in `AWS_WEB_IDENTITY_TOKEN_FILE` exchanged for temporary keys of `AWS_ROLE_ARN` through STS
 * `AssumeRoleWithWebIdentity`, as aws-sdk-go-v2's stscreds.WebIdentityRoleProvider does. The call
 * is unsigned (the token is the proof); the file is read again on every refresh because the kubelet
 * rotates it. API: https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRoleWithWebIdentity.html
 */
import { readFileSync } from 'node:fs';
import { metadataRequest } from '../util/metadatahttp.js';
import { CachedProvider, type CredentialProvider, type ExpiringCredentials } from './provider.js';

type Env = Readonly<Record<string, string | undefined>>;

export interface WebIdentityOptions {
  readonly tokenFile: string;
  readonly roleArn: string;
  /** Empty: the SDK's default, the current time in Unix nanoseconds. */
  readonly sessionName: string;
  /** The STS region (aws-sdk-go-v2 calls the regional endpoint). */
  readonly region: string;
  readonly env: Env;
  readonly timeoutMs?: number;
  readonly onStale?: (err: Error) => void;
}

/**
 * The STS endpoint: `AWS_ENDPOINT_URL_STS` or `AWS_ENDPOINT_URL` (the SDK's service endpoint
 * variables, unless `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`), else the regional endpoint; without a
 * region the global one.
 */
export function stsEndpoint(region: string, env: Env): string {
  const ignore = (env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS ?? '').toLowerCase() === 'true';
  const configured = ignore ? undefined : env.AWS_ENDPOINT_URL_STS || env.AWS_ENDPOINT_URL;
  if (configured) return configured.replace(/\/+$/, '');
  if (region === '') return 'https://sts.amazonaws.com';
  return `https://sts.${region}.${region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com'}`;
}

/** The text of the first `<tag>` element (STS answers in XML). */
function xmlElement(xml: string, tag: string): string | null {
  const m = new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>`).exec(xml);
  return m
    ? m[1]!.replace(
        /&(lt|gt|amp|quot|apos);/g,
        (_, e: string) => ({ lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" })[e] ?? '',
      )
    : null;
}

/** One AssumeRoleWithWebIdentity call; errors worded as the SDK's (`operation error STS: …`). */
export async function assumeRoleWithWebIdentity(
  o: WebIdentityOptions,
  signal?: AbortSignal,
): Promise<ExpiringCredentials> {
  let token: string;
  try {
    token = readFileSync(o.tokenFile, 'utf8');
  } catch (e) {
    throw new Error(
      `failed to retrieve jwt from provide source, unable to read file at ${o.tokenFile}: ${(e as Error).message}`,
    );
  }
  const sessionName = o.sessionName || String(BigInt(Date.now()) * 1_000_000n);
  const url = new URL(`${stsEndpoint(o.region, o.env)}/`);
  const body = new URLSearchParams({
    Action: 'AssumeRoleWithWebIdentity',
    Version: '2011-06-15',
    RoleArn: o.roleArn,
    RoleSessionName: sessionName,
    WebIdentityToken: token,
  }).toString();
  const op = 'operation error STS: AssumeRoleWithWebIdentity';
  let res;
  try {
    res = await metadataRequest({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body,
      timeoutMs: o.timeoutMs ?? 10_000,
      ...(signal ? { signal } : {}),
    });
  } catch (e) {
    throw new Error(
      `failed to retrieve credentials, ${op}, https response error StatusCode: 0, RequestID: , request send failed, ${(e as Error).message}`,
    );
  }
  if (res.status >= 300) {
    const rid = String(res.headers['x-amzn-requestid'] ?? xmlElement(res.body, 'RequestId') ?? '');
    throw new Error(
      `failed to retrieve credentials, ${op}, https response error StatusCode: ${res.status}, RequestID: ${rid}, api error ${xmlElement(res.body, 'Code') ?? 'UnknownError'}: ${xmlElement(res.body, 'Message') ?? ''}`,
    );
  }
  const creds = xmlElement(res.body, 'Credentials') ?? '';
  const accessKeyId = xmlElement(creds, 'AccessKeyId');
  const secretAccessKey = xmlElement(creds, 'SecretAccessKey');
  const sessionToken = xmlElement(creds, 'SessionToken');
  const expiration = Date.parse(xmlElement(creds, 'Expiration') ?? '');
  if (!accessKeyId || !secretAccessKey || !sessionToken || Number.isNaN(expiration)) {
    throw new Error(`failed to retrieve credentials, ${op}, no credentials in the response from ${url.href}`);
  }
  return { credentials: { accessKeyId, secretAccessKey, sessionToken }, expires: expiration };
}

/** The cached provider (refreshed five minutes before the keys expire). */
export function webIdentityProvider(o: WebIdentityOptions): CredentialProvider {
  return new CachedProvider('WebIdentityCredentials', (signal) => assumeRoleWithWebIdentity(o, signal), {
    expiryWindowMs: 5 * 60_000,
    ...(o.onStale ? { onStale: o.onStale } : {}),
  });
}
