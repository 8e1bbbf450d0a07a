/**
 * One HTTP(S) request and its whole reply, for the plugins that call a cloud or cluster API
 * (route53, nomad): through `node:http`/`node:https` loaded with `require` (src/util/require.ts), not
 * the global `fetch`, whose undici costs every process and query thread megabytes of RSS
 * (docs/multicore.md §8). Errors carry Node's `code` (ECONNREFUSED…) for the caller to word.
 */
import type * as http from 'node:http';
import type * as https from 'node:https';
import { nodeHttp, nodeHttps } from './require.js';

export interface HttpRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** A Unix socket to connect to instead of the URL's host (the URL then gives path and query). */
  readonly socketPath?: string;
  /** Keep-alive agent (http.Agent for http:, https.Agent for https:). */
  readonly agent?: http.Agent;
  readonly tls?: https.RequestOptions;
  readonly signal?: AbortSignal;
}

export interface HttpReply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

export function httpRequest(r: HttpRequest): Promise<HttpReply> {
  const secure = r.url.protocol === 'https:' && r.socketPath === undefined;
  const headers: Record<string, string> = { ...(r.headers ?? {}) };
  if (r.body !== undefined) headers['content-length'] = String(Buffer.byteLength(r.body));
  const opts: https.RequestOptions = {
    method: r.method,
    path: `${r.url.pathname}${r.url.search}`,
    headers,
    ...(r.agent ? { agent: r.agent } : {}),
    ...(r.signal ? { signal: r.signal } : {}),
    ...(r.socketPath !== undefined
      ? { socketPath: r.socketPath }
      : { hostname: r.url.hostname.replace(/^\[|\]$/g, ''), ...(r.url.port ? { port: Number(r.url.port) } : {}) }),
    ...(secure ? (r.tls ?? {}) : {}),
  };
  return new Promise((resolve, reject) => {
    const req = (secure ? nodeHttps() : nodeHttp).request(opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('error', reject);
    if (r.body !== undefined) req.write(r.body);
    req.end();
  });
}

/** An agent that keeps connections to one API open between calls. */
export function keepAliveAgent(secure: boolean, tls: https.AgentOptions = {}): http.Agent {
  return secure ? new (nodeHttps().Agent)({ keepAlive: true, ...tls }) : new nodeHttp.Agent({ keepAlive: true });
}
