/**
 * The GCE/GKE metadata server as cloud.google.com/go/compute/metadata (v0.10.0, which CoreDNS
 * 1.15.0's Google client uses) reaches it: `http://HOST/computeMetadata/v1/SUFFIX` with
 * `Metadata-Flavor: Google`, HOST from `GCE_METADATA_HOST` (host:port) or 169.254.169.254; a 404 is
 * "not defined". `onGce` is the library's OnGCE: true when `GCE_METADATA_HOST` is set, else the
 * first of two probes (the metadata address answering with `Metadata-Flavor: Google`, or
 * metadata.google.internal resolving to it), waited on longer when the BIOS names Google.
 * `computeTokenSource` is the auth library's compute credentials: the default service account's
 * token for the given scopes (on GKE with Workload Identity, the pod's Google service account).
 */
import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { metadataRequest } from '../util/metadatahttp.js';

type Env = Readonly<Record<string, string | undefined>>;

const METADATA_IP = '169.254.169.254';
const ATTEMPTS = 3;

function host(env: Env): string {
  return env.GCE_METADATA_HOST || METADATA_IP;
}

/** GET a metadata value; errors worded as the Go library's. */
export async function getMetadata(suffix: string, env: Env, timeoutMs = 5000): Promise<string> {
  const url = new URL(`http://${host(env)}/computeMetadata/v1/${suffix}`);
  let last: Error | null = null;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    let res;
    try {
      res = await metadataRequest({ method: 'GET', url, headers: { 'metadata-flavor': 'Google' }, timeoutMs });
    } catch (e) {
      last = e as Error;
      continue;
    }
    if (res.status === 404) throw new Error(`metadata: GCE metadata ${JSON.stringify(suffix)} not defined`);
    if (res.status === 200) return res.body;
    last = new Error(`compute: Received ${res.status} \`${res.body}\``);
    if (res.status < 500) break;
  }
  throw last!;
}

/** Whether the BIOS says this is a Google machine (the library's systemInfoSuggestsGCE on Linux). */
function biosSuggestsGce(): boolean {
  try {
    const name = readFileSync('/sys/class/dmi/id/product_name', 'utf8').trim();
    return name === 'Google' || name === 'Google Compute Engine';
  } catch {
    return false;
  }
}

/** The library's OnGCE; memoized per process, as there. */
let onGceMemo: Promise<boolean> | null = null;
export function onGce(env: Env = process.env): Promise<boolean> {
  if (env.GCE_METADATA_HOST) return Promise.resolve(true);
  onGceMemo ??= probeGce();
  return onGceMemo;
}

async function probeGce(): Promise<boolean> {
  const http = metadataRequest({ method: 'GET', url: new URL(`http://${METADATA_IP}`), timeoutMs: 2000 }).then(
    (r) => r.headers['metadata-flavor'] === 'Google',
    () => false,
  );
  const dns = lookup('metadata.google.internal.', { all: true }).then(
    (as) => as.some((a) => a.address === METADATA_IP),
    () => false,
  );
  if (!biosSuggestsGce()) return Promise.race([http, dns]);
  // On a Google BIOS: either probe saying yes is enough; give them five seconds.
  const yes = Promise.any([http, dns].map((p) => p.then((ok) => (ok ? true : Promise.reject(new Error('no'))))));
  const deadline = new Promise<boolean>((r) => setTimeout(() => r(false), 5000).unref());
  return Promise.race([yes.catch(() => false), deadline]);
}

export interface AccessToken {
  readonly token: string;
  /** Seconds the token is valid for. */
  readonly expiresIn: number;
}

/** The default service account's access token (credentials/compute.go's computeProvider.Token). */
export async function computeToken(scopes: readonly string[], env: Env): Promise<AccessToken> {
  const suffix = `instance/service-accounts/default/token${scopes.length ? `?${new URLSearchParams({ scopes: scopes.join(',') }).toString()}` : ''}`;
  let body: string;
  try {
    body = await getMetadata(suffix, env);
  } catch (e) {
    throw new Error(`credentials: cannot fetch token: ${(e as Error).message}`);
  }
  let j: { access_token?: unknown; expires_in?: unknown };
  try {
    j = JSON.parse(body) as typeof j;
  } catch (e) {
    throw new Error(`credentials: invalid token JSON from metadata: ${(e as Error).message}`);
  }
  if (
    typeof j.access_token !== 'string' ||
    j.access_token === '' ||
    typeof j.expires_in !== 'number' ||
    j.expires_in === 0
  ) {
    throw new Error('credentials: incomplete token received from metadata');
  }
  return { token: j.access_token, expiresIn: j.expires_in };
}
