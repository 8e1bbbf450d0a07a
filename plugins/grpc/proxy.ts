/**
 * One upstream of the grpc plugin: a lazily dialled HTTP/2 connection (plain, or TLS when the
 * plugin has `tls`/`tls_servername`) carrying `coredns.dns.DnsService/Query` calls, one DNS message
 * each (src/grpc/wire.ts). As grpc-go's ClientConn it reconnects on the next call after the
 * connection closed, and message sizes are capped at 65535 + 4 bytes each way.
 */
import * as net from 'node:net';
import type * as http2 from 'node:http2';
import type * as tls from 'node:tls';
import { performance } from 'node:perf_hooks';
import { rcodeName } from '../../src/dns/constants.js';
import {
  decodeDnsPacket,
  decodeGrpcMessage,
  frameDnsPacket,
  GrpcStatus,
  GrpcWireError,
  MAX_DNS_MESSAGE,
  QUERY_PATH,
  unframe,
} from '../../src/grpc/wire.js';
import { nodeHttp2 } from '../../src/util/require.js';
import * as m from './metrics.js';
import type { Upstream } from './setup.js';

/** grpc-go's code names, for its `rpc error: code = X desc = Y` text. */
const CODE_NAMES = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
];

/** A call that ended with a gRPC status other than OK, worded as grpc-go's status error. */
export class GrpcCallError extends Error {
  constructor(
    readonly code: number,
    readonly desc: string,
  ) {
    super(`rpc error: code = ${CODE_NAMES[code] ?? `Code(${code})`} desc = ${desc}`);
  }
}

/** The DNS message is larger than 65535 bytes (CoreDNS's ErrDNSMessageTooLarge). */
function sizeError(n: number): Error {
  return new Error(`dns message exceeds size limit: ${n} bytes (limit ${MAX_DNS_MESSAGE})`);
}

export class GrpcProxy {
  private session: http2.ClientHttp2Session | null = null;

  constructor(
    readonly upstream: Upstream,
    /** TLS options, or null for a plain HTTP/2 connection. */
    private readonly tls: tls.ConnectionOptions | null,
  ) {}

  /** The `to` label. */
  get addr(): string {
    return this.upstream.label;
  }

  private connect(): http2.ClientHttp2Session {
    const s = this.session;
    if (s !== null && !s.closed && !s.destroyed) return s;
    const up = this.upstream;
    const host = up.host.includes(':') ? `[${up.host}]` : up.host;
    const authority = `${this.tls ? 'https' : 'http'}://${up.socketPath ? 'localhost' : `${host}:${up.port}`}`;
    const opts: http2.SecureClientSessionOptions = {
      ...(this.tls ?? {}),
      // One DNS message per call: a small window is enough and keeps per-connection memory low.
      settings: { enablePush: false },
    };
    if (up.socketPath !== null) {
      const path = up.socketPath;
      opts.createConnection = () => net.connect(path);
    }
    const session = nodeHttp2().connect(authority, opts);
    session.on('error', () => undefined);
    const forget = (): void => {
      if (this.session === session) this.session = null;
    };
    session.once('close', forget);
    session.once('goaway', forget);
    // An idle connection does not keep the process alive; calls in flight hold their own timers.
    session.unref();
    this.session = session;
    return session;
  }

  /**
   * Send `packet` and resolve to the reply's bytes, or reject with the call's error. A NotFound
   * status resolves to null (the handler answers NXDOMAIN, as CoreDNS's proxy does).
   */
  query(packet: Buffer, timeoutMs: number): Promise<Buffer | null> {
    if (packet.length > MAX_DNS_MESSAGE) return Promise.reject(sizeError(packet.length));
    const start = performance.now();
    return new Promise<Buffer | null>((resolve, reject) => {
      let settled = false;
      const chunks: Buffer[] = [];
      let status: number | null = null;
      let message = '';
      let httpStatus = 0;
      let req: http2.ClientHttp2Stream;
      const finish = (err: Error | null, reply?: Buffer | null): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) {
          if (!req.closed) req.close(http2Cancel());
          reject(err);
        } else resolve(reply ?? null);
      };
      const timer = setTimeout(() => finish(new GrpcCallError(4, 'context deadline exceeded')), Math.max(1, timeoutMs));
      try {
        req = this.connect().request({
          ':method': 'POST',
          ':path': QUERY_PATH,
          'content-type': 'application/grpc',
          te: 'trailers',
          'grpc-timeout': `${Math.max(1, Math.ceil(timeoutMs))}m`,
        });
      } catch (e) {
        clearTimeout(timer);
        reject(new GrpcCallError(GrpcStatus.UNAVAILABLE, `connection error: ${(e as Error).message}`));
        return;
      }
      const readStatus = (h: http2.IncomingHttpHeaders): void => {
        const s = h['grpc-status'];
        if (s !== undefined) {
          status = Number(s);
          message = decodeGrpcMessage(String(h['grpc-message'] ?? ''));
        }
      };
      req.on('response', (h) => {
        httpStatus = Number(h[':status'] ?? 0);
        readStatus(h);
      });
      req.on('trailers', readStatus);
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('error', (e: Error) =>
        finish(new GrpcCallError(GrpcStatus.UNAVAILABLE, `connection error: desc = ${JSON.stringify(e.message)}`)),
      );
      req.on('close', () => {
        if (settled) return;
        if (httpStatus !== 200) {
          finish(
            new GrpcCallError(
              httpStatus === 0 ? GrpcStatus.UNAVAILABLE : GrpcStatus.UNKNOWN,
              httpStatus === 0
                ? 'error reading from server: EOF'
                : `unexpected HTTP status code received from server: ${httpStatus}`,
            ),
          );
          return;
        }
        if (status === null) {
          finish(new GrpcCallError(GrpcStatus.INTERNAL, 'server closed the stream without sending trailers'));
          return;
        }
        if (status === GrpcStatus.NOT_FOUND) {
          finish(null, null);
          return;
        }
        if (status !== GrpcStatus.OK) {
          finish(new GrpcCallError(status, message));
          return;
        }
        let wire: Buffer;
        try {
          wire = decodeDnsPacket(unframe(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
        } catch (e) {
          if (!(e instanceof GrpcWireError)) throw e;
          finish(new GrpcCallError(e.status, e.message));
          return;
        }
        if (wire.length > MAX_DNS_MESSAGE) {
          finish(sizeError(wire.length));
          return;
        }
        if (wire.length < 12) {
          finish(new Error('dns: overflow unpacking uint16'));
          return;
        }
        const to = this.upstream.label;
        m.requests.labels(to).inc();
        m.responses.labels(rcodeName(wire[3]! & 0xf), to).inc();
        m.duration.labels(to).observe((performance.now() - start) / 1000);
        finish(null, wire);
      });
      req.end(frameDnsPacket(packet));
    });
  }

  /** Close the connection (the plugin's shutdown). */
  close(): void {
    this.session?.close();
    this.session = null;
  }
}

/** NGHTTP2_CANCEL: the call was abandoned (a deadline), as grpc-go resets a cancelled stream. */
function http2Cancel(): number {
  return nodeHttp2().constants.NGHTTP2_CANCEL;
}
