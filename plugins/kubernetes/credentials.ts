/**
 * The credential helper: a short-lived child process that resolves API server credentials with
 * @kubernetes/client-node's `KubeConfig` and prints them as one JSON object on stdout.
 *
 * Importing @kubernetes/client-node costs about 80 MiB of RSS (it loads every generated API
 * model), so the server process never imports it: `client.ts` runs
 * `node dist/plugins/kubernetes/credentials.js '<request JSON>'` at startup (and again when
 * exec/OIDC credentials expire or are rejected) and applies the printed TLS options and headers to
 * its own requests. Only `import type` of this module is allowed anywhere in the server.
 *
 * Output: `{"ok": Credentials}` or `{"error": "message"}` (exit status 1).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as https from 'node:https';
import { pathToFileURL } from 'node:url';
import { KubeConfig, type User } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { isObj } from '../../src/util/json.js';

export type CredentialRequest =
  /** In-cluster service account; `pathPrefix` prefixes `/var/run/secrets/...` (tests). */
  { mode: 'cluster'; pathPrefix?: string } | { mode: 'kubeconfig'; path: string; context: string | null };

export interface Credentials {
  /** API server URL (`cluster.server`). */
  server: string;
  /** PEM texts. */
  ca?: string;
  cert?: string;
  key?: string;
  /** Request headers: Authorization, Impersonate-User. */
  headers: Record<string, string>;
  /** false: `insecure-skip-tls-verify`. */
  rejectUnauthorized?: boolean;
  /** `tls-server-name`. */
  servername?: string;
  /**
   * The bearer token comes from this file: the parent re-reads it (at most once a minute, and
   * after a 401) instead of running the helper again.
   */
  tokenFile?: string;
  /** When the credentials expire (epoch ms): exec `expirationTimestamp`, or a JWT's `exp`. */
  expiry?: number;
}

function pem(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map((x) => pem(x) ?? '').join('\n');
  throw new Error('unsupported TLS option type in the kubeconfig');
}

/** `token-file` of the kubeconfig user entry `name` (client-node reads it once at load; we rotate it). */
function kubeconfigTokenFile(file: string, name: string): string | undefined {
  const doc: unknown = parseYaml(fs.readFileSync(file, 'utf8'));
  if (!isObj(doc) || !Array.isArray(doc['users'])) return undefined;
  for (const u of doc['users'] as unknown[]) {
    if (isObj(u) && u['name'] === name && isObj(u['user'])) {
      const user = u['user'];
      if (typeof user['token'] === 'string' && user['token'] !== '') return undefined;
      const tf = user['token-file'];
      // client-node reads a relative token-file from the working directory.
      return typeof tf === 'string' && tf !== '' ? path.resolve(tf) : undefined;
    }
  }
  return undefined;
}

/** `exp` of a JWT bearer token, in epoch ms. */
function jwtExpiry(authorization: string | undefined): number | undefined {
  const m = /^Bearer ([\w-]+)\.([\w-]+)\.([\w-]*)$/.exec(authorization ?? '');
  if (!m) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(m[2]!, 'base64url').toString('utf8'));
    return isObj(claims) && typeof claims['exp'] === 'number' ? claims['exp'] * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `expirationTimestamp` of the exec credential client-node just obtained. KubeConfig keeps its
 * ExecAuth instance private, so it is looked up structurally.
 */
function execExpiry(kc: KubeConfig, user: User): number | undefined {
  const auths = (kc as unknown as { authenticators?: unknown }).authenticators;
  if (!Array.isArray(auths)) return undefined;
  for (const a of auths as unknown[]) {
    if (!isObj(a) || !isObj(a['tokenCache'])) continue;
    const cred = a['tokenCache'][user.name];
    if (isObj(cred) && isObj(cred['status']) && typeof cred['status']['expirationTimestamp'] === 'string') {
      const t = Date.parse(cred['status']['expirationTimestamp']);
      if (!Number.isNaN(t)) return t;
    }
  }
  return undefined;
}

/** Resolve credentials with client-node (runs in the helper process). */
export async function resolveWithKubeConfig(req: CredentialRequest): Promise<Credentials> {
  const kc = new KubeConfig();
  let tokenFile: string | undefined;
  if (req.mode === 'cluster') {
    if (!process.env['KUBERNETES_SERVICE_HOST'] || !process.env['KUBERNETES_SERVICE_PORT']) {
      throw new Error(
        'unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined',
      );
    }
    kc.loadFromCluster(req.pathPrefix ?? '');
    if (!kc.getCurrentCluster()) throw new Error('unable to load in-cluster configuration');
  } else {
    kc.loadFromFile(req.path);
    if (req.context) {
      if (!kc.getContextObject(req.context)) throw new Error(`context "${req.context}" does not exist in ${req.path}`);
      kc.setCurrentContext(req.context);
    }
    if (!kc.getCurrentCluster()) throw new Error(`no current cluster in kubeconfig ${req.path}`);
  }
  const cluster = kc.getCurrentCluster()!;
  const user = kc.getCurrentUser();
  if (cluster.proxyUrl) throw new Error(`proxy-url in kubeconfig (cluster "${cluster.name}") is not supported`);

  const opts: https.RequestOptions = { headers: {} };
  await kc.applyToHTTPSOptions(opts);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.headers ?? {})) {
    if (v === undefined) continue;
    headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
  }
  if (typeof opts.auth === 'string' && opts.auth !== '') {
    headers['Authorization'] = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
  }

  if (user) {
    const cfg = user.authProvider?.config as Record<string, unknown> | undefined;
    const fileAuth =
      !user.token &&
      !user.exec &&
      user.authProvider?.name !== 'azure' &&
      user.authProvider?.name !== 'gcp' &&
      user.authProvider?.name !== 'exec' &&
      !cfg?.['exec'] &&
      typeof cfg?.['tokenFile'] === 'string';
    if (fileAuth) tokenFile = path.resolve(cfg['tokenFile'] as string);
    else if (req.mode === 'kubeconfig') tokenFile = kubeconfigTokenFile(req.path, user.name);
  }

  const out: Credentials = { server: cluster.server, headers };
  const ca = pem(opts.ca);
  const cert = pem(opts.cert);
  const key = pem(opts.key);
  if (ca) out.ca = ca;
  if (cert) out.cert = cert;
  if (key) out.key = key;
  if (opts.rejectUnauthorized !== undefined) out.rejectUnauthorized = opts.rejectUnauthorized;
  if (opts.servername) out.servername = opts.servername;
  if (tokenFile) out.tokenFile = tokenFile;
  else if (user) {
    const expiry = execExpiry(kc, user) ?? jwtExpiry(headers['Authorization']);
    if (expiry !== undefined) out.expiry = expiry;
  }
  return out;
}

async function main(): Promise<void> {
  let out: string;
  let status = 0;
  try {
    const req = JSON.parse(process.argv[2] ?? '') as CredentialRequest;
    out = JSON.stringify({ ok: await resolveWithKubeConfig(req) });
  } catch (e) {
    out = JSON.stringify({ error: e instanceof Error ? e.message : String(e) });
    status = 1;
  }
  process.stdout.write(`${out}\n`, () => process.exit(status));
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) void main();
