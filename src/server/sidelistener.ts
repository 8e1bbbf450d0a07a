/**
 * An HTTP(S) side listener for the operational endpoints (`/health`, `/ready`, `/metrics`).
 *
 * One TCP socket per address, kept open across reloads (the plugins get it through
 * `ctx.shared('<plugin>:<address>', ...)`), so a reload never fails because the old instance still
 * holds the port. The request handler and the TLS setting can be swapped by each (re)load: new
 * connections are handed to a plain `http.Server` or to an `https.Server`, neither of which listens
 * itself. Sockets are tracked so `stop()` really closes (idle keep-alive connections included).
 */
import type * as http from 'node:http';
import type * as https from 'node:https';
import * as net from 'node:net';
import { listenPort, splitHostPort, type HostPort } from './sideaddress.js';
import { nodeHttp, nodeHttps } from '../util/require.js';

/** Server timeouts, as CoreDNS's side servers (5 s read/write/idle). */
const TIMEOUT_MS = 5000;

export type RequestHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

function notFound(_req: http.IncomingMessage, res: http.ServerResponse): void {
  sendText(res, 404, '404 page not found\n');
}

/** Go's `http.Error`-like plain-text reply. */
export function sendText(
  res: http.ServerResponse,
  status: number,
  body: string,
  contentType = 'text/plain; charset=utf-8',
): void {
  res.writeHead(status, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(body),
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(body);
}

/**
 * Open every side listener with SO_REUSEPORT: set once at start by `clusterdns node-cache`, whose
 * replacement binds the same health and metrics ports before the old instance leaves
 * (docs/node-cache.md, "Upgrades without a gap"). A process setting, as the log format is.
 */
let sharePorts = false;

export function shareSidePorts(on: boolean): void {
  sharePorts = on;
}

export class SideListener {
  readonly hostPort: HostPort;
  handler: RequestHandler = notFound;
  private readonly plain: http.Server;
  private secure: https.Server | null = null;
  private readonly tcp: net.Server;
  /** Socket → number of requests in progress on it. */
  private readonly sockets = new Map<net.Socket, number>();
  private starting: Promise<void> | null = null;
  private stopped = false;

  /**
   * `queryThread` (ProcessInfo.queryThread): the listener never opens; the main thread's listener
   * on the same address answers (docs/multicore.md).
   */
  constructor(
    readonly address: string,
    private readonly queryThread = false,
  ) {
    this.hostPort = splitHostPort(address);
    this.plain = this.decorate(nodeHttp.createServer((req, res) => this.dispatch(req, res)));
    this.tcp = net.createServer((socket) => this.accept(socket));
  }

  /** Serve new connections with TLS (`options`) or plain HTTP (`null`). */
  setTls(options: https.ServerOptions | null): void {
    if (options === null) {
      this.secure = null;
      return;
    }
    this.secure = this.decorate(nodeHttps().createServer(options, (req, res) => this.dispatch(req, res)));
  }

  get isTls(): boolean {
    return this.secure !== null;
  }

  /** Start listening (idempotent; a failed attempt can be retried). */
  start(): Promise<void> {
    if (this.stopped) return Promise.reject(new Error(`listen tcp ${this.address}: listener already stopped`));
    if (this.starting) return this.starting;
    // Query threads serve DNS only: the main thread's listener answers (docs/multicore.md).
    if (this.queryThread) return Promise.resolve();
    let port: number;
    try {
      port = listenPort(this.address, this.hostPort);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    // '' = all interfaces (dual-stack). `localhost` binds IPv4 loopback as Go's net.Listen does,
    // whatever order /etc/hosts lists 127.0.0.1 and ::1 in (scrapers use 127.0.0.1).
    const host =
      this.hostPort.host === '' ? undefined : this.hostPort.host === 'localhost' ? '127.0.0.1' : this.hostPort.host;
    this.starting = new Promise<void>((resolve, reject) => {
      const onError = (e: Error): void => {
        this.tcp.off('listening', onListening);
        this.starting = null;
        reject(new Error(`listen tcp ${this.address}: ${e.message}`));
      };
      const onListening = (): void => {
        this.tcp.off('error', onError);
        resolve();
      };
      this.tcp.once('error', onError);
      this.tcp.once('listening', onListening);
      this.tcp.listen(sharePorts ? { port, host, reusePort: true } : { port, host });
    });
    return this.starting;
  }

  get listening(): boolean {
    return this.tcp.listening;
  }

  /** The bound port (useful with port 0). */
  get port(): number {
    const a = this.tcp.address();
    return a !== null && typeof a === 'object' ? a.port : 0;
  }

  /**
   * Stop accepting, close idle connections at once and the others after their current request
   * (or after `graceMs`). Idempotent.
   */
  stop(graceMs = TIMEOUT_MS): Promise<void> {
    this.stopped = true;
    for (const [socket, active] of this.sockets) if (active === 0) socket.destroy();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        for (const socket of this.sockets.keys()) socket.destroy();
      }, graceMs);
      timer.unref();
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      if (!this.tcp.listening) {
        if (this.sockets.size === 0) done();
        else this.waitDrained(done);
        return;
      }
      this.tcp.close(() => done());
    });
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  private waitDrained(done: () => void): void {
    const check = (): void => {
      if (this.sockets.size === 0) done();
      else setTimeout(check, 10).unref();
    };
    check();
  }

  private decorate<S extends http.Server>(s: S): S {
    s.timeout = TIMEOUT_MS;
    s.keepAliveTimeout = TIMEOUT_MS;
    s.headersTimeout = TIMEOUT_MS;
    s.requestTimeout = TIMEOUT_MS;
    // The TLS handshake failing or a client resetting must not crash the process.
    s.on('clientError', (_err, socket) => socket.destroy());
    s.on('tlsClientError', (_err: Error, socket: net.Socket) => socket.destroy());
    return s;
  }

  private accept(socket: net.Socket): void {
    if (this.stopped) {
      socket.destroy();
      return;
    }
    this.sockets.set(socket, 0);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    (this.secure ?? this.plain).emit('connection', socket);
  }

  private dispatch(req: http.IncomingMessage, res: http.ServerResponse): void {
    // With TLS, req.socket is the TLSSocket wrapping the tracked TCP socket.
    const tracked = this.trackedSocket(req.socket);
    if (tracked) this.sockets.set(tracked, (this.sockets.get(tracked) ?? 0) + 1);
    res.on('close', () => {
      if (!tracked) return;
      const left = (this.sockets.get(tracked) ?? 1) - 1;
      if (this.sockets.has(tracked)) this.sockets.set(tracked, left);
      if (this.stopped && left <= 0) tracked.destroy();
    });
    if (this.stopped) res.setHeader('Connection', 'close');
    try {
      this.handler(req, res);
    } catch (e) {
      if (!res.headersSent) sendText(res, 500, `${(e as Error).message}\n`);
      else res.destroy();
    }
  }

  private trackedSocket(s: net.Socket): net.Socket | undefined {
    if (this.sockets.has(s)) return s;
    const inner = (s as net.Socket & { _parent?: net.Socket })._parent;
    return inner && this.sockets.has(inner) ? inner : undefined;
  }
}
