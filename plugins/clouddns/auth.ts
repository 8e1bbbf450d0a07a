/**
 * Google credentials for the Cloud DNS API, as the Go client CoreDNS 1.15.0 builds finds and uses
 * them: the `credentials` file, else `GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's
 * `application_default_credentials.json`. A service account signs a JWT (RS256, the Cloud DNS
 * scopes, audience its `token_uri`) and exchanges it there for an OAuth access token (RFC 7523);
 * an authorized user exchanges its refresh token. The token is kept until a minute before it
 * expires. Without any file, on GCE/GKE (the metadata server; `GCE_METADATA_HOST` names it), the
 * default service account's token from the metadata server, kept until 225 s before it expires
 * (the auth library's early expiry), as the library's DetectDefault orders it (src/gcp/metadata.ts).
 * Not supported (the start fails saying so): external accounts (workload identity federation) and
 * impersonation (README, "Authentication").
 */
import { createSign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { computeToken, onGce } from '../../src/gcp/metadata.js';
import { metadataRequest } from '../../src/util/metadatahttp.js';

/** The scopes dns/v1's NewService asks for by default. */
export const SCOPES = [
  'https://www.googleapis.com/auth/cloud-platform',
  'https://www.googleapis.com/auth/cloud-platform.read-only',
  'https://www.googleapis.com/auth/ndev.clouddns.readonly',
  'https://www.googleapis.com/auth/ndev.clouddns.readwrite',
];

const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';

type Env = Readonly<Record<string, string | undefined>>;

export interface TokenSource {
  /** A valid access token (fetched or cached). */
  token(): Promise<string>;
}

interface CredentialFile {
  type?: string;
  client_email?: string;
  private_key?: string;
  private_key_id?: string;
  token_uri?: string;
  client_id?: string;
  client_secret?: string;
  refresh_token?: string;
}

function b64url(b: Buffer | string): string {
  return Buffer.from(b).toString('base64url');
}

/** The signed JWT a service account exchanges for a token. */
export function serviceAccountAssertion(c: CredentialFile, nowSec: number): string {
  const header = { alg: 'RS256', typ: 'JWT', ...(c.private_key_id ? { kid: c.private_key_id } : {}) };
  const claims = {
    iss: c.client_email,
    scope: SCOPES.join(' '),
    aud: c.token_uri ?? DEFAULT_TOKEN_URI,
    iat: nowSec,
    exp: nowSec + 3600,
  };
  const unsigned = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  const sig = createSign('RSA-SHA256')
    .update(unsigned)
    .sign(c.private_key ?? '');
  return `${unsigned}.${b64url(sig)}`;
}

async function exchange(uri: string, form: Record<string, string>): Promise<{ token: string; expiresIn: number }> {
  const body = new URLSearchParams(form).toString();
  let res;
  try {
    res = await metadataRequest({
      method: 'POST',
      url: new URL(uri),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
      timeoutMs: 30_000,
    });
  } catch (e) {
    throw new Error(`auth: cannot fetch token: ${(e as Error).message}`);
  }
  if (res.status < 200 || res.status > 299)
    throw new Error(`auth: cannot fetch token: ${res.status}\nResponse: ${res.body}`);
  const j = JSON.parse(res.body) as { access_token?: string; expires_in?: number };
  if (!j.access_token) throw new Error('auth: response missing access token');
  return { token: j.access_token, expiresIn: j.expires_in ?? 3600 };
}

/** A token source that keeps each token until `earlySec` before it expires. */
function cachedTokens(fetchToken: () => Promise<{ token: string; expiresIn: number }>, earlySec: number): TokenSource {
  let cached: { token: string; until: number } | null = null;
  return {
    async token() {
      if (cached !== null && Date.now() < cached.until) return cached.token;
      const t = await fetchToken();
      cached = { token: t.token, until: Date.now() + Math.max(0, t.expiresIn - earlySec) * 1000 };
      return t.token;
    },
  };
}

/** Where the credentials come from; rejects with the Go client's words when there are none. */
export async function googleCredentials(file: string | null, env: Env = process.env): Promise<TokenSource> {
  const path =
    file ??
    (env.GOOGLE_APPLICATION_CREDENTIALS ||
      join(
        env.CLOUDSDK_CONFIG || join(env.HOME ?? homedir(), '.config', 'gcloud'),
        'application_default_credentials.json',
      ));
  let c: CredentialFile;
  try {
    c = JSON.parse(readFileSync(path, 'utf8')) as CredentialFile;
  } catch (e) {
    if (file === null && !env.GOOGLE_APPLICATION_CREDENTIALS && (e as NodeJS.ErrnoException).code === 'ENOENT') {
      // No file anywhere: the metadata server, when this is GCE/GKE (or GCE_METADATA_HOST says so).
      if (await onGce(env)) return cachedTokens(() => computeToken(SCOPES, env), 225);
      throw new Error(
        'credentials: could not find default credentials. See https://cloud.google.com/docs/authentication/external/set-up-adc for more information',
      );
    }
    throw new Error(`credentials: ${(e as Error).message}`);
  }
  const uri = c.token_uri || DEFAULT_TOKEN_URI;
  let fetchToken: () => Promise<{ token: string; expiresIn: number }>;
  switch (c.type) {
    case 'service_account':
      if (!c.client_email || !c.private_key)
        throw new Error('credentials: service account key lacks client_email or private_key');
      fetchToken = () =>
        exchange(uri, {
          grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
          assertion: serviceAccountAssertion(c, Math.floor(Date.now() / 1000)),
        });
      break;
    case 'authorized_user':
      fetchToken = () =>
        exchange(uri, {
          grant_type: 'refresh_token',
          client_id: c.client_id ?? '',
          client_secret: c.client_secret ?? '',
          refresh_token: c.refresh_token ?? '',
        });
      break;
    default:
      throw new Error(
        `credentials: credential type ${JSON.stringify(c.type)} is not supported by clusterdns's clouddns`,
      );
  }
  return cachedTokens(fetchToken, 60);
}
