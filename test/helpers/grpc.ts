/**
 * A gRPC client of the tests' own over node:http2, for CoreDNS's `coredns.dns.DnsService/Query`
 * (src/grpc/wire.ts): one call per request on a connection the caller opens and closes, with the
 * HTTP status, the gRPC status and message, and the reply's DNS bytes as received.
 */
import * as http2 from 'node:http2';
import { decodeDnsPacket, frameDnsPacket, QUERY_PATH, unframe } from '../../src/grpc/wire.js';

export interface GrpcResult {
  readonly httpStatus: number;
  /** grpc-status from the trailers (or a trailers-only response); null when none came. */
  readonly grpcStatus: number | null;
  readonly grpcMessage: string;
  /** The reply's DNS message (null without a response message). */
  readonly reply: Buffer | null;
}

/** A connection to a grpc:// listener on 127.0.0.1 (TLS when `ca` is given). */
export function grpcConnect(port: number, o: { ca?: Buffer; servername?: string } = {}): http2.ClientHttp2Session {
  const s = o.ca
    ? http2.connect(`https://127.0.0.1:${port}`, { ca: o.ca, ...(o.servername ? { servername: o.servername } : {}) })
    : http2.connect(`http://127.0.0.1:${port}`);
  s.on('error', () => undefined);
  return s;
}

/**
 * One call: `body` is the request body as sent (build it with `frameDnsPacket(query)`, or send
 * anything to test the server's checks); `path` and `contentType` default to the Query method's.
 */
export function grpcCall(
  session: http2.ClientHttp2Session,
  body: Buffer,
  o: { path?: string; contentType?: string } = {},
): Promise<GrpcResult> {
  return new Promise((resolve, reject) => {
    const req = session.request({
      ':method': 'POST',
      ':path': o.path ?? QUERY_PATH,
      'content-type': o.contentType ?? 'application/grpc',
      te: 'trailers',
    });
    let httpStatus = 0;
    let grpcStatus: number | null = null;
    let grpcMessage = '';
    const chunks: Buffer[] = [];
    const status = (h: http2.IncomingHttpHeaders): void => {
      if (h['grpc-status'] !== undefined) {
        grpcStatus = Number(h['grpc-status']);
        grpcMessage = decodeURIComponent(String(h['grpc-message'] ?? ''));
      }
    };
    req.on('response', (h) => {
      httpStatus = Number(h[':status']);
      status(h);
    });
    req.on('trailers', status);
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', reject);
    req.on('close', () => {
      const data = Buffer.concat(chunks);
      const reply = grpcStatus === 0 && data.length >= 5 && httpStatus === 200 ? decodeDnsPacket(unframe(data)) : null;
      resolve({ httpStatus, grpcStatus, grpcMessage, reply });
    });
    req.end(body);
  });
}

/** One DNS query over a fresh connection. */
export async function grpcQuery(port: number, query: Buffer, o: { ca?: Buffer } = {}): Promise<GrpcResult> {
  const s = grpcConnect(port, o);
  try {
    return await grpcCall(s, frameDnsPacket(query));
  } finally {
    s.close();
  }
}
