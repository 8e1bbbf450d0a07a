/**
 * DNS over HTTPS (RFC 8484) to one upstream: `POST /dns-query` (or `GET ?dns=`) with
 * `application/dns-message`, over a keep-alive agent so connections are reused.
 */
import type * as https from 'node:https';
import { nodeHttps } from '../../src/util/require.js';
import type * as tls from 'node:tls';

export interface DohOptions {
  readonly host: string;
  readonly port: number;
  readonly label: string;
  readonly tls: tls.ConnectionOptions;
  readonly servername: string | null;
  readonly method: 'GET' | 'POST';
  readonly sourceAddress: string | null;
  /** Idle time after which a kept-alive connection is closed. */
  readonly expireMs: number;
  readonly maxIdleConns: number;
}

export class DohClient {
  private readonly agent: https.Agent;

  constructor(private readonly o: DohOptions) {
    this.agent = new (nodeHttps().Agent)({
      ...o.tls,
      keepAlive: o.expireMs > 0,
      timeout: o.expireMs > 0 ? o.expireMs : undefined,
      ...(o.maxIdleConns > 0 ? { maxFreeSockets: o.maxIdleConns } : {}),
    });
  }

  /** Send `packet` (its id is set to 0 as RFC 8484 recommends) and return the reply bytes. */
  exchange(packet: Buffer, timeoutMs: number): Promise<Buffer> {
    const body = Buffer.from(packet);
    body.writeUInt16BE(0, 0);
    const label = this.o.label;
    const get = this.o.method === 'GET';
    return new Promise<Buffer>((resolve, reject) => {
      let settled = false;
      const finish = (err: Error | null, buf?: Buffer): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(buf!);
      };
      const req = nodeHttps().request({
        host: this.o.host,
        port: this.o.port,
        method: this.o.method,
        path: get ? `/dns-query?dns=${body.toString('base64url')}` : '/dns-query',
        agent: this.agent,
        ...(this.o.servername ? { servername: this.o.servername } : {}),
        ...(this.o.sourceAddress ? { localAddress: this.o.sourceAddress } : {}),
        headers: get
          ? { accept: 'application/dns-message' }
          : {
              accept: 'application/dns-message',
              'content-type': 'application/dns-message',
              'content-length': body.length,
            },
      });
      const timer = setTimeout(() => {
        finish(new Error(`read https ${label}: i/o timeout`));
        req.destroy();
      }, timeoutMs);
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          finish(new Error(`https ${label}: unexpected HTTP status ${res.statusCode ?? 0}`));
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => finish(null, Buffer.concat(chunks)));
        res.on('error', (e) => finish(new Error(`read https ${label}: ${e.message}`)));
      });
      req.on('error', (e) => finish(new Error(`https ${label}: ${e.message}`)));
      req.end(get ? undefined : body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
