/**
 * The grpc:// listener (docs/corefile.md §6.5): CoreDNS's `coredns.dns.DnsService/Query` over
 * HTTP/2, optionally in TLS. Each call carries one DNS message; it goes through the same dispatch
 * (routes, chains, metrics) as a query on a plain listener, as a TCP query (CoreDNS's `proto`
 * label for gRPC is "tcp": its peer is a TCP address), and the reply goes back as the call's one
 * response message. Like a plain listener it outlives reloads: the dispatch, the limits and the
 * TLS material are swapped, the socket stays.
 *
 * Limits, as CoreDNS's ServergRPC sets them: SETTINGS_MAX_CONCURRENT_STREAMS per connection
 * (`max_streams`, 256), at most `max_connections` (200) connections served at once — more are
 * accepted by the kernel but left unread until one closes, as Go's netutil.LimitListener leaves
 * them in the backlog — and messages of at most 65535 + 4 bytes each way.
 */
import * as net from 'node:net';
import type * as http2 from 'node:http2';
import type * as tls from 'node:tls';
import type { Dispatch, Exchange } from './listener.js';
import type { GrpcServerLimits } from './listenopts.js';
import { serverTlsOptions, type TlsServerConfig } from './tlsconfig.js';
import { openOnEphemeralPort } from './ephemeralport.js';
import { nodeHttp2 } from '../util/require.js';
import { unmapV4 } from '../util/ip.js';
import {
  decodeDnsPacket,
  encodeGrpcMessage,
  frameDnsPacket,
  GrpcStatus,
  GrpcWireError,
  MAX_DNS_MESSAGE,
  MAX_PROTOBUF_PAYLOAD,
  QUERY_PATH,
  unframe,
} from '../grpc/wire.js';

/** CoreDNS's DefaultGRPCMaxStreams and DefaultGRPCMaxConnections. */
export const DEFAULT_GRPC_MAX_STREAMS = 256;
export const DEFAULT_GRPC_MAX_CONNECTIONS = 200;

const SERVICE = 'coredns.dns.DnsService';

export class GrpcListener {
  private server: net.Server | null = null;
  /** The HTTP/2 servers connections are handed to (created on first use, per TLS or not). */
  private plain: http2.Http2Server | null = null;
  private secure: http2.Http2SecureServer | null = null;
  private tls: TlsServerConfig | null = null;
  private maxStreams = DEFAULT_GRPC_MAX_STREAMS;
  private maxConnections = DEFAULT_GRPC_MAX_CONNECTIONS;
  /** Connections being served, and those accepted beyond the limit, waiting (paused). */
  private readonly served = new Set<net.Socket>();
  private readonly waiting: net.Socket[] = [];
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  private inFlight = 0;
  private drainWaiters: (() => void)[] = [];
  private closing = false;
  port: number;

  constructor(
    /** `grpc://host:port`, the `server` metric label. */
    readonly name: string,
    readonly host: string,
    port: number,
    private dispatch: Dispatch,
    private readonly reusePort = false,
  ) {
    this.port = port;
  }

  setDispatch(d: Dispatch): void {
    this.dispatch = d;
  }

  /**
   * The block's `grpc_server` limits and `tls` material, applied on every (re)load: new
   * connections get them; open ones keep the settings they were given.
   */
  configure(limits: GrpcServerLimits, tls: TlsServerConfig | null): void {
    this.maxStreams = limits.maxStreams ?? DEFAULT_GRPC_MAX_STREAMS;
    this.maxConnections = limits.maxConnections ?? DEFAULT_GRPC_MAX_CONNECTIONS;
    if (tls !== this.tls) {
      this.tls = tls;
      if (tls && this.secure) this.secure.setSecureContext(secureOptions(tls));
    }
    this.admitWaiting();
  }

  get busy(): number {
    return this.inFlight;
  }

  /** Open connections (served and waiting), for tests and the limits' checks. */
  get connectionCount(): { served: number; waiting: number } {
    return { served: this.served.size, waiting: this.waiting.length };
  }

  async open(): Promise<void> {
    await openOnEphemeralPort(
      this.port === 0,
      () => this.listen(),
      () => {
        this.port = 0;
      },
    );
  }

  private listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      const srv = net.createServer({ noDelay: true }, (c) => this.onConnection(c));
      srv.once('error', reject);
      const opts: net.ListenOptions & { reusePort?: boolean } = { port: this.port, exclusive: false };
      if (this.reusePort) opts.reusePort = true;
      if (this.host !== '') opts.host = this.host;
      srv.listen(opts, () => {
        srv.off('error', reject);
        this.server = srv;
        this.port = (srv.address() as net.AddressInfo).port;
        resolve();
      });
    });
  }

  private onConnection(c: net.Socket): void {
    if (this.closing) {
      c.destroy();
      return;
    }
    c.on('error', () => {
      /* a reset connection is the client's business */
    });
    if (this.maxConnections > 0 && this.served.size >= this.maxConnections) {
      c.pause();
      this.waiting.push(c);
      c.once('close', () => {
        const i = this.waiting.indexOf(c);
        if (i >= 0) this.waiting.splice(i, 1);
      });
      return;
    }
    this.serve(c);
  }

  private serve(c: net.Socket): void {
    this.served.add(c);
    c.once('close', () => {
      this.served.delete(c);
      this.admitWaiting();
    });
    // Settings are per connection: a reload's limits reach the connections that come after it.
    const h2 = this.h2Server();
    h2.updateSettings(this.settings());
    h2.emit('connection', c);
    c.resume();
  }

  private admitWaiting(): void {
    while (this.waiting.length > 0 && (this.maxConnections === 0 || this.served.size < this.maxConnections)) {
      const c = this.waiting.shift()!;
      if (!c.destroyed) this.serve(c);
    }
  }

  private settings(): http2.Settings {
    return this.maxStreams > 0 ? { maxConcurrentStreams: this.maxStreams } : {};
  }

  /** The HTTP/2 server for the current TLS choice, created the first time it is needed. */
  private h2Server(): http2.Http2Server | http2.Http2SecureServer {
    const h2 = nodeHttp2();
    const common = { settings: this.settings() };
    if (this.tls) {
      if (!this.secure) {
        this.secure = h2.createSecureServer({ ...common, ...secureOptions(this.tls), allowHTTP1: false });
        this.hook(this.secure);
      }
      return this.secure;
    }
    if (!this.plain) {
      this.plain = h2.createServer(common);
      this.hook(this.plain);
    }
    return this.plain;
  }

  private hook(h2: http2.Http2Server | http2.Http2SecureServer): void {
    h2.on('session', (s: http2.ServerHttp2Session) => {
      this.sessions.add(s);
      s.on('error', () => undefined);
      s.once('close', () => this.sessions.delete(s));
    });
    h2.on('stream', (stream, headers) => this.onStream(stream, headers));
    // A TLS handshake that fails is the client's business.
    h2.on('tlsClientError', () => undefined);
  }

  private onStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
    stream.on('error', () => undefined);
    const contentType = String(headers['content-type'] ?? '');
    if (!contentType.startsWith('application/grpc')) {
      // grpc-go answers a request that is not gRPC with HTTP 415 (and an InvalidArgument status).
      stream.respond(
        {
          ':status': 415,
          'content-type': 'text/plain',
          'grpc-status': String(GrpcStatus.INVALID_ARGUMENT),
          'grpc-message': encodeGrpcMessage(`invalid gRPC request content-type ${JSON.stringify(contentType)}`),
        },
        { endStream: true },
      );
      return;
    }
    const path = String(headers[':path'] ?? '');
    if (headers[':method'] !== 'POST' || path !== QUERY_PATH) {
      const slash = path.lastIndexOf('/');
      const service = path.slice(1, Math.max(slash, 1));
      const method = path.slice(slash + 1);
      endWithStatus(
        stream,
        GrpcStatus.UNIMPLEMENTED,
        service === SERVICE ? `unknown method ${method} for service ${service}` : `unknown service ${service}`,
      );
      return;
    }
    const encoding = headers['grpc-encoding'];
    if (encoding !== undefined && encoding !== 'identity') {
      endWithStatus(
        stream,
        GrpcStatus.UNIMPLEMENTED,
        `grpc: Decompressor is not installed for grpc-encoding "${String(encoding)}"`,
      );
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      if (size < 0) return;
      size += chunk.length;
      if (size > 5 + MAX_PROTOBUF_PAYLOAD) {
        size = -1;
        endWithStatus(
          stream,
          GrpcStatus.RESOURCE_EXHAUSTED,
          `grpc: received message larger than max (${chunks.length ? Buffer.concat(chunks).readUInt32BE(1) : 0} vs. ${MAX_PROTOBUF_PAYLOAD})`,
        );
        return;
      }
      chunks.push(chunk);
    });
    stream.on('end', () => {
      if (size < 0 || this.closing) {
        if (size >= 0) endWithStatus(stream, GrpcStatus.UNAVAILABLE, 'transport is closing');
        return;
      }
      let packet: Buffer;
      try {
        packet = decodeDnsPacket(unframe(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
      } catch (e) {
        if (!(e instanceof GrpcWireError)) throw e;
        endWithStatus(stream, e.status, e.message);
        return;
      }
      // Shorter than a header: what miekg/dns's unpack says of it (CoreDNS's UnpackRequest error).
      if (packet.length < 12) {
        endWithStatus(stream, GrpcStatus.UNKNOWN, 'dns: buffer size too small');
        return;
      }
      if (packet.length > MAX_DNS_MESSAGE) {
        endWithStatus(stream, GrpcStatus.UNKNOWN, `dns message exceeds size limit: ${packet.length}`);
        return;
      }
      this.inFlight++;
      this.dispatch(packet, new GrpcExchange(this, stream, packet));
    });
  }

  /** A call finished (GrpcExchange.done). */
  finished(): void {
    this.inFlight--;
    if (this.inFlight === 0 && this.drainWaiters.length) for (const w of this.drainWaiters.splice(0)) w();
  }

  private drained(graceMs: number): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const t = setTimeout(resolve, graceMs);
      this.drainWaiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  /** Stop accepting and finish the calls in flight; another SO_REUSEPORT process takes new ones. */
  async handOff(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = null;
    await this.drained(5000);
  }

  /**
   * Stop accepting, let calls in flight finish (at most `graceMs`), then end every connection:
   * a GOAWAY first (grpc-go's GracefulStop), a second later whatever is left is destroyed.
   */
  async close(graceMs = 5000): Promise<void> {
    this.closing = true;
    const closed = new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    for (const c of this.waiting.splice(0)) c.destroy();
    await this.drained(graceMs);
    for (const s of this.sessions) s.close();
    const destroy = setTimeout(() => {
      for (const c of this.served) c.destroy();
    }, 1000);
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (this.served.size === 0) resolve();
      };
      for (const c of this.served) c.once('close', check);
      check();
    });
    clearTimeout(destroy);
    await closed;
    this.server = null;
  }
}

/** The `tls` directive's material for the HTTP/2 server: gRPC speaks only h2 (ALPN). */
function secureOptions(t: TlsServerConfig): tls.TlsOptions {
  return serverTlsOptions(t, ['h2']);
}

/** A trailers-only response: the call failed with `status`. */
function endWithStatus(stream: http2.ServerHttp2Stream, status: number, message: string): void {
  if (stream.destroyed || stream.closed) return;
  if (stream.headersSent) {
    stream.close();
    return;
  }
  stream.respond(
    {
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': String(status),
      'grpc-message': encodeGrpcMessage(message),
    },
    { endStream: true },
  );
}

/** One gRPC call's query: its reply goes back as the call's response message. */
class GrpcExchange implements Exchange {
  readonly proto = 'tcp';
  readonly family: 1 | 2;
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly localAddress: string;
  readonly localPort: number;
  readonly server: string;
  private answered = false;

  constructor(
    private readonly listener: GrpcListener,
    private readonly stream: http2.ServerHttp2Stream,
    private readonly request: Buffer,
  ) {
    const sock = stream.session?.socket;
    this.remoteAddress = unmapV4(sock?.remoteAddress ?? '');
    this.remotePort = sock?.remotePort ?? 0;
    this.family = net.isIPv4(this.remoteAddress) ? 1 : 2;
    this.localAddress = listener.host;
    this.localPort = listener.port;
    this.server = listener.name;
  }

  respond(reply: Buffer): void {
    if (this.answered) return;
    this.answered = true;
    const stream = this.stream;
    if (stream.destroyed || stream.closed) return;
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(frameDnsPacket(reply));
  }

  done(): void {
    // Nothing written (acl's drop, a request the server does not answer): CoreDNS's gRPC server
    // sends the request message back as it came, its response writer still holding it.
    if (!this.answered) this.respond(this.request);
    this.listener.finished();
  }
}
