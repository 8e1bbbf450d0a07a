/**
 * The cluster IP of the `-upstreamsvc` Service (`__PILLAR__CLUSTER__DNS__`). Upstream reads it
 * once from the `<NAME>_SERVICE_HOST` variable Kubernetes puts in the pod's environment, which a
 * Service created after the pod never reaches; clusterdns asks the API server (GET of the Service
 * in the pod's namespace with the pod's service account, or `-kubeapi URL` without credentials) on
 * every configuration poll, and uses the variable when the API cannot be reached
 * (docs/node-cache.md).
 */
import { existsSync, readFileSync } from 'node:fs';
import type * as https from 'node:https';
import { isIP } from 'node:net';
import { isObj } from '../util/json.js';
import { nodeHttp, nodeHttps } from '../util/require.js';

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const REQUEST_TIMEOUT_MS = 10_000;

/** `$KUBE_DNS_UPSTREAM_SERVICE_HOST` for `kube-dns-upstream`, as upstream's toSvcEnv. */
export function serviceEnvName(name: string): string {
  return `${name.replaceAll('-', '_').toUpperCase()}_SERVICE_HOST`;
}

export function namespaceOf(env: NodeJS.ProcessEnv = process.env, saDir = SA_DIR): string {
  if (env['POD_NAMESPACE']) return env['POD_NAMESPACE'];
  try {
    return readFileSync(`${saDir}/namespace`, 'utf8').trim() || 'kube-system';
  } catch {
    return 'kube-system';
  }
}

function getJson(url: URL, opts: https.RequestOptions): Promise<{ status: number; body: unknown }> {
  const mod = url.protocol === 'https:' ? nodeHttps() : nodeHttp;
  return new Promise((resolve, reject) => {
    const req = mod.request(url, { ...opts, method: 'GET', timeout: REQUEST_TIMEOUT_MS }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown });
        } catch (e) {
          reject(e as Error);
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url.host} in ${REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end();
  });
}

export interface ServiceLookup {
  /** The cluster IP, or null with the reason in `error`. */
  ip: string | null;
  source: 'api' | 'env' | null;
  error?: string;
}

export async function lookupServiceIP(
  name: string,
  kubeapi: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ServiceLookup> {
  const ns = namespaceOf(env);
  const path = `/api/v1/namespaces/${encodeURIComponent(ns)}/services/${encodeURIComponent(name)}`;
  let apiError: string;
  try {
    let url: URL;
    const opts: https.RequestOptions = {
      headers: { Accept: 'application/json', 'User-Agent': 'clusterdns/node-cache' },
    };
    if (kubeapi) {
      url = new URL(path, kubeapi);
    } else {
      const host = env['KUBERNETES_SERVICE_HOST'];
      const port = env['KUBERNETES_SERVICE_PORT'];
      if (!host || !port || !existsSync(`${SA_DIR}/token`))
        throw new Error('not in a cluster (no KUBERNETES_SERVICE_HOST or service account)');
      url = new URL(path, `https://${isIP(host) === 6 ? `[${host}]` : host}:${port}`);
      opts.ca = readFileSync(`${SA_DIR}/ca.crt`);
      (opts.headers as Record<string, string>)['Authorization'] =
        `Bearer ${readFileSync(`${SA_DIR}/token`, 'utf8').trim()}`;
    }
    const { status, body } = await getJson(url, opts);
    const spec = isObj(body) && isObj(body['spec']) ? body['spec'] : null;
    const ip = spec && typeof spec['clusterIP'] === 'string' ? spec['clusterIP'] : '';
    if (status === 200 && isIP(ip) !== 0) return { ip, source: 'api' };
    apiError = status === 200 ? `Service ${ns}/${name} has no cluster IP` : `GET ${path}: HTTP ${status}`;
  } catch (e) {
    apiError = (e as Error).message;
  }
  const fromEnv = env[serviceEnvName(name)] ?? '';
  if (isIP(fromEnv) !== 0) return { ip: fromEnv, source: 'env', error: apiError };
  return {
    ip: null,
    source: null,
    error: `${apiError}; $${serviceEnvName(name)} is ${fromEnv ? `"${fromEnv}"` : 'not set'}`,
  };
}
