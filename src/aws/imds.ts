/**
 * The EC2 instance metadata service (IMDS) as aws-sdk-go-v2's feature/ec2/imds client uses it:
 * IMDSv2 (a session token from `PUT /latest/api/token`, sent on every GET), falling back to IMDSv1
 * when the token call answers 403/404/405 or cannot be sent; up to three attempts per call, each
 * with a deadline. It gives the region (`GetRegion`: the instance identity document) and the
 * instance role's temporary keys (ec2rolecreds: the role name, then its credentials).
 * Endpoint: `AWS_EC2_METADATA_SERVICE_ENDPOINT`, else `AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE`
 * (`IPv6`: http://[fd00:ec2::254]), else http://169.254.169.254; `AWS_EC2_METADATA_DISABLED=true`
 * turns it off. API: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html
 */
import { metadataRequest } from '../util/metadatahttp.js';
import type { HttpReply } from '../util/httpclient.js';
import { CachedProvider, type CredentialProvider, type ExpiringCredentials } from './provider.js';

type Env = Readonly<Record<string, string | undefined>>;

const ATTEMPTS = 3;
/** The session token's lifetime the SDK asks for (5 minutes). */
const TOKEN_TTL_S = 300;

export interface ImdsOptions {
  readonly env: Env;
  /** Deadline of one attempt (the SDK: 250 ms to connect, 500 ms to the reply headers). */
  readonly attemptTimeoutMs?: number;
  readonly onStale?: (err: Error) => void;
}

/** An error of one attempt, and whether another attempt may help (send failures and 5xx). */
class AttemptError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

export class ImdsClient {
  private token: { value: string; expires: number } | null = null;
  /** IMDSv2 is unavailable here: use v1 (the SDK's fallback). */
  private v1 = false;
  private readonly base: string;
  private readonly timeoutMs: number;

  constructor(private readonly opts: ImdsOptions) {
    const env = opts.env;
    const mode = (env.AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE ?? '').toLowerCase();
    this.base = (
      env.AWS_EC2_METADATA_SERVICE_ENDPOINT || (mode === 'ipv6' ? 'http://[fd00:ec2::254]' : 'http://169.254.169.254')
    ).replace(/\/+$/, '');
    this.timeoutMs = opts.attemptTimeoutMs ?? 2000;
  }

  private disabled(): boolean {
    return (this.opts.env.AWS_EC2_METADATA_DISABLED ?? '').toLowerCase() === 'true';
  }

  private v1Disabled(): boolean {
    return (this.opts.env.AWS_EC2_METADATA_V1_DISABLED ?? '').toLowerCase() === 'true';
  }

  private async once(
    method: string,
    path: string,
    headers: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<HttpReply> {
    try {
      return await metadataRequest({
        method,
        url: new URL(this.base + path),
        headers,
        timeoutMs: this.timeoutMs,
        ...(signal ? { signal } : {}),
      });
    } catch (e) {
      throw new AttemptError(`request send failed, ${(e as Error).message}`, true);
    }
  }

  /** The session token, or null to go without (IMDSv1). */
  private async sessionToken(signal?: AbortSignal): Promise<string | null> {
    if (this.v1) return null;
    if (this.token !== null && Date.now() < this.token.expires) return this.token.value;
    let res: HttpReply;
    try {
      res = await this.once(
        'PUT',
        '/latest/api/token',
        { 'x-aws-ec2-metadata-token-ttl-seconds': String(TOKEN_TTL_S) },
        signal,
      );
    } catch (e) {
      if (this.v1Disabled()) throw e;
      // The SDK stops asking for tokens after a send failure or timeout and goes on with v1.
      this.v1 = true;
      return null;
    }
    if (res.status === 403 || res.status === 404 || res.status === 405) {
      if (this.v1Disabled()) throw new AttemptError(`failed to get API token, StatusCode: ${res.status}`, false);
      this.v1 = true;
      return null;
    }
    if (res.status !== 200)
      throw new AttemptError(`failed to get API token, StatusCode: ${res.status}`, res.status >= 500);
    const ttl = Number(res.headers['x-aws-ec2-metadata-token-ttl-seconds'] ?? TOKEN_TTL_S);
    this.token = { value: res.body, expires: Date.now() + Math.max(0, ttl - 1) * 1000 };
    return res.body;
  }

  /** GET a path, as the SDK's operation `op`: up to three attempts; the body of a 200. */
  async get(op: string, path: string, signal?: AbortSignal): Promise<string> {
    if (this.disabled()) {
      throw new Error(
        `operation error ec2imds: ${op}, access disabled to EC2 IMDS via client option, or "AWS_EC2_METADATA_DISABLED" environment variable`,
      );
    }
    let last: AttemptError | null = null;
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      try {
        const token = await this.sessionToken(signal);
        const res = await this.once('GET', path, token === null ? {} : { 'x-aws-ec2-metadata-token': token }, signal);
        if (res.status === 200) return res.body;
        // A rejected token (expired, or the instance restarted): ask for a new one next attempt.
        if (res.status === 401) this.token = null;
        throw new AttemptError(
          `http response error StatusCode: ${res.status}, request to EC2 IMDS failed`,
          res.status === 401 || res.status >= 500,
        );
      } catch (e) {
        last = e instanceof AttemptError ? e : new AttemptError((e as Error).message, false);
        if (!last.retryable || signal?.aborted) break;
      }
    }
    const tries = last?.retryable ? `exceeded maximum number of attempts, ${ATTEMPTS}, ` : '';
    throw new Error(`operation error ec2imds: ${op}, ${tries}${last?.message ?? ''}`);
  }

  /** The instance's region (the SDK's GetRegion reads the instance identity document). */
  async region(signal?: AbortSignal): Promise<string> {
    const doc = await this.get('GetRegion', '/latest/dynamic/instance-identity/document', signal);
    let region: unknown;
    try {
      region = (JSON.parse(doc) as { region?: unknown }).region;
    } catch (e) {
      throw new Error(
        `operation error ec2imds: GetRegion, failed to decode instance identity document, ${(e as Error).message}`,
      );
    }
    if (typeof region !== 'string' || region === '') {
      throw new Error('operation error ec2imds: GetRegion, instance identity document has no region');
    }
    return region;
  }

  /** The instance role's keys (ec2rolecreds.Provider.Retrieve), their expiry capped at one hour. */
  async roleCredentials(signal?: AbortSignal): Promise<ExpiringCredentials> {
    let list: string;
    try {
      list = await this.get('GetMetadata', '/latest/meta-data/iam/security-credentials/', signal);
    } catch (e) {
      throw new Error(`no EC2 IMDS role found, ${(e as Error).message}`);
    }
    const role = list
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l !== '');
    if (role === undefined) throw new Error('unexpected empty EC2 IMDS role list');
    let body: string;
    try {
      body = await this.get('GetMetadata', `/latest/meta-data/iam/security-credentials/${role}`, signal);
    } catch (e) {
      throw new Error(`failed to get ${role} EC2 IMDS role credentials, ${(e as Error).message}`);
    }
    let c: Record<string, unknown>;
    try {
      c = JSON.parse(body) as Record<string, unknown>;
    } catch (e) {
      throw new Error(`failed to decode ${role} EC2 IMDS role credentials, ${(e as Error).message}`);
    }
    if (c.Code !== 'Success') {
      throw new Error(`failed to get ${role} EC2 IMDS role credentials, ${String(c.Code)}: ${String(c.Message ?? '')}`);
    }
    const { AccessKeyId: id, SecretAccessKey: secret, Token: token } = c;
    if (typeof id !== 'string' || typeof secret !== 'string' || typeof token !== 'string') {
      throw new Error(`failed to get ${role} EC2 IMDS role credentials, incomplete credentials`);
    }
    const parsed = Date.parse(String(c.Expiration ?? ''));
    const hour = Date.now() + 3_600_000;
    return {
      credentials: { accessKeyId: id, secretAccessKey: secret, sessionToken: token },
      expires: Number.isNaN(parsed) ? hour : Math.min(parsed, hour),
    };
  }
}

/** The instance role as a cached credential provider (the SDK's EC2RoleProvider). */
export function ec2RoleProvider(client: ImdsClient, onStale?: (err: Error) => void): CredentialProvider {
  return new CachedProvider('EC2RoleProvider', (signal) => client.roleCredentials(signal), {
    expiryWindowMs: 0,
    ...(onStale ? { onStale } : {}),
  });
}
