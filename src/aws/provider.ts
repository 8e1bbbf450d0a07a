/**
 * AWS credentials that may expire (web identity, instance roles, container credentials) behind one
 * interface, cached as aws-sdk-go-v2's `aws.CredentialsCache` caches them: a caller asks before
 * every signed request, the source is asked again only when the cached keys are within the expiry
 * window of their expiration, and a failed refresh keeps keys that have not expired yet (logged by
 * the caller through `onStale`). Static keys never expire.
 */
import type { AwsCredentials } from './sigv4.js';

/** Keys and, for temporary ones, when they stop working. */
export interface ExpiringCredentials {
  readonly credentials: AwsCredentials;
  /** Milliseconds since the epoch; absent for keys that do not expire. */
  readonly expires?: number;
}

export interface CredentialProvider {
  /** Where the keys come from, for logs ("EnvConfigCredentials", "EC2RoleProvider"…, the SDK's names). */
  readonly source: string;
  /** Keys to sign the next request with; rejects with the source's error. */
  get(signal?: AbortSignal): Promise<AwsCredentials>;
}

/** Keys that were given (Corefile, environment, shared files). */
export function staticProvider(credentials: AwsCredentials, source: string): CredentialProvider {
  return { source, get: () => Promise.resolve(credentials) };
}

export interface CacheOptions {
  /** Refresh this long before expiry (aws-sdk-go-v2: 5 minutes for container credentials). */
  readonly expiryWindowMs: number;
  /** A refresh failed and the previous keys, still valid, are kept. */
  readonly onStale?: (err: Error) => void;
  readonly now?: () => number;
}

/** A source of temporary keys with aws.CredentialsCache's behaviour; one fetch at a time. */
export class CachedProvider implements CredentialProvider {
  private cached: ExpiringCredentials | null = null;
  private inflight: Promise<AwsCredentials> | null = null;

  constructor(
    readonly source: string,
    private readonly fetch: (signal?: AbortSignal) => Promise<ExpiringCredentials>,
    private readonly opts: CacheOptions,
  ) {}

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  /** Whether cached keys are past (expiry − window), i.e. due for a refresh. */
  private due(c: ExpiringCredentials): boolean {
    return c.expires !== undefined && this.now() >= c.expires - this.opts.expiryWindowMs;
  }

  get(signal?: AbortSignal): Promise<AwsCredentials> {
    const c = this.cached;
    if (c !== null && !this.due(c)) return Promise.resolve(c.credentials);
    this.inflight ??= this.refresh(signal).finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  private async refresh(signal?: AbortSignal): Promise<AwsCredentials> {
    try {
      const fresh = await this.fetch(signal);
      this.cached = fresh;
      return fresh.credentials;
    } catch (e) {
      const prev = this.cached;
      // Keys that still work are better than none while the source is away (the SDK's
      // HandleFailToRefresh for instance roles); they are asked for again on the next request.
      if (prev !== null && prev.expires !== undefined && this.now() < prev.expires) {
        this.opts.onStale?.(e as Error);
        return prev.credentials;
      }
      throw e;
    }
  }
}
