/**
 * The two Nomad HTTP API calls the nomad plugin makes, as the Go `nomad/api` client CoreDNS 1.15.0
 * uses sends them: `GET /v1/service/NAME?namespace=NS[&filter=F][&region=R]` (the service's
 * registrations) and `GET /v1/agent/self` (is this agent up), with `X-Nomad-Token`, basic auth
 * from `NOMAD_HTTP_AUTH` or the URL, over http, https (NOMAD_CACERT, NOMAD_CLIENT_CERT/KEY,
 * NOMAD_SKIP_VERIFY, NOMAD_TLS_SERVER_NAME) or a `unix://` socket. Errors are worded as that
 * client's (`Unexpected response code: 500 (body)`, `Get "URL": dial tcp …`).
 */
import { readFileSync } from 'node:fs';
import type * as http from 'node:http';
import type * as https from 'node:https';
import { httpRequest, keepAliveAgent } from '../../src/util/httpclient.js';

/** One service registration, the fields the plugin reads. */
export interface ServiceRegistration {
  readonly Address: string;
  readonly Port: number;
}

type Env = Readonly<Record<string, string | undefined>>;

/** What `nomad.DefaultConfig()` reads from the environment, with the Corefile's address and token. */
export interface NomadClientConfig {
  readonly address: string;
  readonly token: string;
  readonly region: string;
  readonly namespace: string;
  readonly httpAuth: string;
  readonly tls: https.AgentOptions;
}

export function clientConfig(address: string, token: string, env: Env): NomadClientConfig {
  const tls: https.AgentOptions = {};
  const read = (p: string | undefined): Buffer | undefined => (p ? readFileSync(p) : undefined);
  const ca = read(env.NOMAD_CACERT);
  if (ca) tls.ca = ca;
  const cert = read(env.NOMAD_CLIENT_CERT);
  const key = read(env.NOMAD_CLIENT_KEY);
  if (cert && key) {
    tls.cert = cert;
    tls.key = key;
  }
  if (env.NOMAD_TLS_SERVER_NAME) tls.servername = env.NOMAD_TLS_SERVER_NAME;
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(env.NOMAD_SKIP_VERIFY ?? '')) tls.rejectUnauthorized = false;
  return {
    address: address || env.NOMAD_ADDR || 'http://127.0.0.1:4646',
    token: token || env.NOMAD_TOKEN || '',
    region: env.NOMAD_REGION ?? '',
    namespace: env.NOMAD_NAMESPACE ?? '',
    httpAuth: env.NOMAD_HTTP_AUTH ?? '',
    tls,
  };
}

/** Go's net error words for the errno codes a connection to an agent meets. */
const ERRNO: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connect: connection refused',
  ECONNRESET: 'read: connection reset by peer',
  ETIMEDOUT: 'i/o timeout',
  EHOSTUNREACH: 'connect: no route to host',
  ENETUNREACH: 'connect: network is unreachable',
  ENOENT: 'connect: no such file or directory',
};

export class NomadClient {
  private readonly agent: http.Agent;
  private readonly base: URL;
  private readonly socketPath: string | undefined;

  constructor(readonly cfg: NomadClientConfig) {
    if (cfg.address.startsWith('unix://')) {
      this.socketPath = cfg.address.slice('unix://'.length);
      this.base = new URL('http://127.0.0.1');
      this.agent = keepAliveAgent(false);
    } else {
      this.base = new URL(cfg.address);
      this.agent = keepAliveAgent(this.base.protocol === 'https:', cfg.tls);
    }
  }

  close(): void {
    this.agent.destroy();
  }

  /** GET `path` with the config's region/namespace and `params`; the JSON body of a 200 reply. */
  private async get(path: string, params: [string, string][]): Promise<unknown> {
    const query = new URLSearchParams();
    const all: [string, string][] = [];
    if (this.cfg.region) all.push(['region', this.cfg.region]);
    if (this.cfg.namespace) all.push(['namespace', this.cfg.namespace]);
    for (const [k, v] of params) {
      const i = all.findIndex(([n]) => n === k);
      if (i >= 0) all[i] = [k, v];
      else all.push([k, v]);
    }
    // url.Values.Encode: keys sorted.
    for (const [k, v] of all.sort((a, b) => (a[0] < b[0] ? -1 : 1))) query.append(k, v);
    const qs = query.toString();
    const pathAndQuery = `${this.base.pathname.replace(/\/$/, '')}${path}${qs ? `?${qs}` : ''}`;
    const shown =
      this.socketPath !== undefined ? `http://127.0.0.1${pathAndQuery}` : `${this.base.origin}${pathAndQuery}`;
    const headers: Record<string, string> = { 'accept-encoding': 'identity' };
    if (this.cfg.token) headers['x-nomad-token'] = this.cfg.token;
    const userInfo = this.base.username
      ? `${decodeURIComponent(this.base.username)}:${decodeURIComponent(this.base.password)}`
      : this.cfg.httpAuth;
    if (userInfo) headers.authorization = `Basic ${Buffer.from(userInfo).toString('base64')}`;
    const url = new URL(pathAndQuery, this.base.origin);
    let res;
    try {
      res = await httpRequest({
        method: 'GET',
        url,
        headers,
        agent: this.agent,
        ...(this.socketPath !== undefined ? { socketPath: this.socketPath } : {}),
      });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      const dial = this.socketPath !== undefined ? `dial unix ${this.socketPath}` : `dial tcp ${this.base.host}`;
      throw new Error(`Get ${JSON.stringify(shown)}: ${dial}: ${(err.code && ERRNO[err.code]) ?? err.message}`);
    }
    if (res.status !== 200) {
      throw new Error(`Unexpected response code: ${res.status}${res.body ? ` (${res.body})` : ''}`);
    }
    try {
      return JSON.parse(res.body) as unknown;
    } catch (e) {
      throw new Error(`error decoding response: ${(e as Error).message}`);
    }
  }

  /** `Services().Get(name, {Namespace, Filter})`. */
  async service(name: string, namespace: string, filter: string): Promise<ServiceRegistration[]> {
    const params: [string, string][] = [];
    if (namespace) params.push(['namespace', namespace]);
    if (filter) params.push(['filter', filter]);
    const body = await this.get(`/v1/service/${encodeURIComponent(name)}`, params);
    return Array.isArray(body) ? (body as ServiceRegistration[]) : [];
  }

  /** `Agent().Self()`: resolves when the agent answers. */
  async self(): Promise<void> {
    await this.get('/v1/agent/self', []);
  }
}
