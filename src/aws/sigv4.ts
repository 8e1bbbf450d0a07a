/**
 * AWS Signature Version 4, the one signer for every AWS call clusterdns makes: route53's GET
 * requests, dnssec's Secrets Manager `GetSecretValue` (src/dnssec/secretsmanager.ts), and the
 * moto test helper. Written here rather than taken from the AWS SDK for JavaScript: the calls need
 * only the signer (some 60 lines over node:crypto), while the SDK clients bring ~40 packages and
 * several MB that a query thread would load (plugins/route53/README.md, "Authentication").
 * Specification: https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html
 */
import { createHash, createHmac } from 'node:crypto';

export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface SignInput {
  readonly method: string;
  readonly url: URL;
  /** Headers besides host and x-amz-*, lower-case names. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly region: string;
  readonly service: string;
  readonly credentials: AwsCredentials;
  /** The signing time (tests fix it). */
  readonly now?: Date;
}

/** RFC 3986 percent-encoding as SigV4 wants it (unreserved characters kept). */
function uriEncode(s: string, keepSlash: boolean): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9\-._~]/.test(c) || (keepSlash && c === '/')) out += c;
    else out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function sha256Hex(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex');
}

function hmac(key: Buffer | string, s: string): Buffer {
  return createHmac('sha256', key).update(s, 'utf8').digest();
}

/** The headers to send: the input's, plus host, x-amz-date, x-amz-security-token and authorization. */
export function signRequest(input: SignInput): Record<string, string> {
  const now = input.now ?? new Date();
  const amzDate = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const headers: Record<string, string> = { ...(input.headers ?? {}) };
  headers.host = input.url.host;
  headers['x-amz-date'] = amzDate;
  if (input.credentials.sessionToken) headers['x-amz-security-token'] = input.credentials.sessionToken;
  const names = Object.keys(headers)
    .map((h) => h.toLowerCase())
    .sort();
  const canonicalHeaders = names.map((n) => `${n}:${headers[n]!.trim().replace(/\s+/g, ' ')}\n`).join('');
  const signedHeaders = names.join(';');
  const query = [...input.url.searchParams.entries()]
    .map(([k, v]) => [uriEncode(k, false), uriEncode(v, false)] as const)
    .sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  // The path as sent (already encoded once by URL), encoded again per segment except for S3.
  const path = uriEncode(decodeURIComponent(input.url.pathname || '/'), true);
  const canonical = [input.method, path, query, canonicalHeaders, signedHeaders, sha256Hex(input.body ?? '')].join(
    '\n',
  );
  const scope = `${day}/${input.region}/${input.service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonical)].join('\n');
  let key = hmac(`AWS4${input.credentials.secretAccessKey}`, day);
  key = hmac(key, input.region);
  key = hmac(key, input.service);
  key = hmac(key, 'aws4_request');
  const signature = createHmac('sha256', key).update(toSign, 'utf8').digest('hex');
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${input.credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
  return headers;
}
