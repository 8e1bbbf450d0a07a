/**
 * Azure managed identity tokens as go-autorest's adal v0.9.22 (which CoreDNS 1.15.0's azure uses
 * through auth.EnvironmentSettings.GetAuthorizer) fetches them. The environment picks the kind
 * (adal's getMSIType):
 * - `MSI_ENDPOINT` and `MSI_SECRET`: App Service (api-version 2017-09-01), `GET` with the `secret`
 *   header, a user-assigned identity as `clientid`;
 * - `MSI_ENDPOINT` alone: Cloud Shell, `POST` of the form `resource`, `client_id`, `Metadata: true`;
 * - otherwise the instance metadata service (IMDS, api-version 2018-02-01), `GET
 *   http://169.254.169.254/metadata/identity/oauth2/token` with `Metadata: true`. adal has no
 *   variable to move it; clusterdns takes azidentity's `AZURE_POD_IDENTITY_AUTHORITY_HOST` (the
 *   aad-pod-identity host) so that tests can point it at a stand-in.
 * `msiAvailable` is adal's MSIAvailable: true for App Service and Cloud Shell, else whether IMDS
 * answers within two seconds. Each token request has a deadline and is tried up to three times on
 * a send failure or a status IMDS asks to retry (404, 429, 5xx).
 */
import { metadataRequest } from '../util/metadatahttp.js';
import type { HttpReply } from '../util/httpclient.js';

type Env = Readonly<Record<string, string | undefined>>;

const ATTEMPTS = 3;
const IMDS_API_VERSION = '2018-02-01';

export type MsiType = 'AppServiceV20170901' | 'CloudShell' | 'IMDS';

/** The managed identity kind and its token endpoint (adal's getMSIType). */
export function msiEndpoint(env: Env): { type: MsiType; url: string } {
  if (env.MSI_ENDPOINT) return { type: env.MSI_SECRET ? 'AppServiceV20170901' : 'CloudShell', url: env.MSI_ENDPOINT };
  const host = (env.AZURE_POD_IDENTITY_AUTHORITY_HOST || 'http://169.254.169.254').replace(/\/+$/, '');
  return { type: 'IMDS', url: `${host}/metadata/identity/oauth2/token` };
}

/** adal's MSIAvailable: App Service and Cloud Shell are, IMDS when it answers at all within 2 s. */
export async function msiAvailable(env: Env): Promise<boolean> {
  const { type, url } = msiEndpoint(env);
  if (type !== 'IMDS') return true;
  const u = new URL(url);
  u.searchParams.set('api-version', IMDS_API_VERSION);
  try {
    await metadataRequest({ method: 'GET', url: u, timeoutMs: 2000 });
    return true;
  } catch {
    return false;
  }
}

export interface AzureToken {
  readonly token: string;
  /** Seconds the token is valid for. */
  readonly expiresIn: number;
}

/** The token's lifetime from `expires_in`, else `expires_on` (epoch seconds), else an hour. */
function lifetime(j: { expires_in?: unknown; expires_on?: unknown }): number {
  const inSec = Number(j.expires_in);
  if (j.expires_in !== undefined && j.expires_in !== '' && Number.isFinite(inSec)) return inSec;
  const on = Number(j.expires_on);
  if (j.expires_on !== undefined && Number.isFinite(on)) return on - Math.floor(Date.now() / 1000);
  return 3600;
}

/** A token for `resource` from the managed identity (`clientId`: a user-assigned one); adal's errors. */
export async function managedIdentityToken(resource: string, clientId: string, env: Env): Promise<AzureToken> {
  const { type, url: endpoint } = msiEndpoint(env);
  const url = new URL(endpoint);
  const headers: Record<string, string> = {};
  let method = 'GET';
  let body: string | undefined;
  if (type === 'CloudShell') {
    method = 'POST';
    headers.metadata = 'true';
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams({ resource, ...(clientId ? { client_id: clientId } : {}) }).toString();
  } else {
    url.searchParams.set('resource', resource);
    if (type === 'AppServiceV20170901') {
      url.searchParams.set('api-version', '2017-09-01');
      if (clientId) url.searchParams.set('clientid', clientId);
      headers.secret = env.MSI_SECRET ?? '';
    } else {
      url.searchParams.set('api-version', IMDS_API_VERSION);
      if (clientId) url.searchParams.set('client_id', clientId);
      headers.metadata = 'true';
    }
    // Go's url.Values.Encode sorts by key.
    url.searchParams.sort();
  }
  let res: HttpReply | null = null;
  let sendError: Error | null = null;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    try {
      res = await metadataRequest({ method, url, headers, ...(body !== undefined ? { body } : {}), timeoutMs: 10_000 });
      sendError = null;
    } catch (e) {
      sendError = e as Error;
      continue;
    }
    if (!(res.status === 404 || res.status === 429 || res.status >= 500)) break;
  }
  if (sendError !== null || res === null) {
    throw new Error(`adal: Failed to execute the refresh request. Error = '${sendError?.message ?? 'no reply'}'`);
  }
  if (res.status !== 200) {
    throw new Error(
      `adal: Refresh request failed. Status Code = '${res.status}'. Response body: ${res.body} Endpoint ${url.href}`,
    );
  }
  let j: { access_token?: unknown; expires_in?: unknown; expires_on?: unknown };
  try {
    j = JSON.parse(res.body) as typeof j;
  } catch (e) {
    throw new Error(
      `adal: Failed to unmarshal the service principal token during refresh. Error = '${(e as Error).message}' JSON = '${res.body}'`,
    );
  }
  if (typeof j.access_token !== 'string' || j.access_token === '') {
    throw new Error('adal: Empty service principal token received during refresh');
  }
  return { token: j.access_token, expiresIn: lifetime(j) };
}
