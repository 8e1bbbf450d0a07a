/**
 * TCP and DNS-over-TLS connections to one upstream, with a pool of idle connections (RFC 7766
 * framing, one exchange at a time per connection). Idle connections older than `expire` (or
 * older than `max_age` since they were opened) are closed when picked or by the sweep.
 */
import * as net from 'node:net';
import type * as tls from 'node:tls';
import { FrameReader, framed } from '../../src/dns/tcpframes.js';
import { nodeTls } from '../../src/util/require.js';
import { goNetError, goTimeout, hostPort } from './goerr.js';
import type { LocalAddress } from './localaddress.js';

export type StreamProto = 'tcp' | 'tcp-tls';

/** Error raised when a connection taken from the pool turns out to be closed: retried on a new one. */
export class CachedClosedError extends Error {}

class StreamConn {
  readonly created = Date.now();
  lastUsed = Date.now();
  closed = false;
  private readonly frames = new FrameReader();
  private waiter: ((frame: Buffer | Error) => void) | null = null;

  /** `IP:port` of our end and of the upstream, for Go-style error texts. */
  readonly local: string | null;

  constructor(
    readonly sock: net.Socket,
    private readonly remote: string,
  ) {
    this.local =
      sock.localAddress !== undefined && sock.localPort !== undefined
        ? hostPort(sock.localAddress, sock.localPort)
        : null;
    sock.on('data', (chunk: Buffer) => this.frames.push(chunk, this.onFrame));
    // A close without an error is Go's bare `EOF` (what dns.Conn.ReadMsg returns).
    const end = (err?: Error): void => {
      this.closed = true;
      const w = this.waiter;
      if (w) w(err ? goNetError('read', 'tcp', this.local, this.remote, err) : new Error('EOF'));
    };
    sock.on('error', (err) => end(err));
    sock.on('close', () => end());
    sock.on('end', () => end());
  }

  private readonly onFrame = (frame: Buffer): void => {
    const w = this.waiter;
    if (w) w(Buffer.from(frame));
  };

  /** Write one framed query and wait for the frame answering it (by id and question). */
  exchange(packet: Buffer, timeoutMs: number): Promise<Buffer> {
    const id = packet.readUInt16BE(0);
    return new Promise<Buffer>((resolve, reject) => {
      let got = false;
      const timer = setTimeout(() => {
        this.waiter = null;
        this.destroy();
        reject(goTimeout('read', 'tcp', this.local, this.remote));
      }, timeoutMs);
      this.waiter = (frame) => {
        if (frame instanceof Error) {
          clearTimeout(timer);
          this.waiter = null;
          reject(got ? frame : Object.assign(frame, { noData: true }));
          return;
        }
        got = true;
        if (frame.length >= 12 && frame.readUInt16BE(0) !== id) return; // stale answer: keep reading
        clearTimeout(timer);
        this.waiter = null;
        this.lastUsed = Date.now();
        resolve(frame);
      };
      this.sock.write(framed(packet));
    });
  }

  destroy(): void {
    this.closed = true;
    this.sock.destroy();
  }
}

export interface StreamPoolOptions {
  readonly host: string;
  readonly port: number;
  readonly label: string;
  readonly proto: StreamProto;
  /** TLS options (servername, CA, client cert) for `tcp-tls`. */
  readonly tls: tls.ConnectionOptions | null;
  readonly sourceAddress: string | null;
  readonly expireMs: number;
  /** 0 = no limit on a connection's lifetime. */
  readonly maxAgeMs: number;
  /** 0 = unlimited idle connections. */
  readonly maxIdle: number;
  readonly onConn: (hit: boolean) => void;
}

const MIN_DIAL_MS = 1000;
const MAX_DIAL_MS = 30_000;

export class StreamPool {
  private idle: StreamConn[] = [];
  /** Moving average of dial times (ms); the dial timeout is twice it, within [1 s, 30 s]. */
  private avgDialMs = MAX_DIAL_MS / 2;
  private closedPool = false;

  constructor(private readonly o: StreamPoolOptions) {}

  get dialTimeoutMs(): number {
    return Math.min(MAX_DIAL_MS, Math.max(MIN_DIAL_MS, 2 * this.avgDialMs));
  }

  private usable(c: StreamConn, now: number): boolean {
    if (c.closed) return false;
    if (now - c.lastUsed > this.o.expireMs) return false;
    if (this.o.maxAgeMs > 0 && now - c.created > this.o.maxAgeMs) return false;
    return true;
  }

  private take(): StreamConn | null {
    const now = Date.now();
    while (this.idle.length > 0) {
      const c = this.idle.shift()!;
      if (this.usable(c, now)) return c;
      c.destroy();
    }
    return null;
  }

  private dial(timeoutMs: number): Promise<StreamConn> {
    const started = Date.now();
    return new Promise<StreamConn>((resolve, reject) => {
      const base: net.NetConnectOpts = { host: this.o.host, port: this.o.port };
      if (this.o.sourceAddress) base.localAddress = this.o.sourceAddress;
      const sock =
        this.o.proto === 'tcp-tls'
          ? nodeTls().connect({
              ...this.o.tls,
              host: this.o.host,
              port: this.o.port,
              ...(this.o.sourceAddress ? { localAddress: this.o.sourceAddress } : {}),
            })
          : net.connect(base);
      // DNS over TLS dials TCP too: Go words its errors `dial tcp …`.
      const timer = setTimeout(
        () => {
          sock.destroy();
          reject(goTimeout('dial', 'tcp', null, this.o.label));
        },
        Math.min(timeoutMs, this.dialTimeoutMs),
      );
      const onError = (err: Error): void => {
        clearTimeout(timer);
        sock.destroy();
        reject(goNetError('dial', 'tcp', null, this.o.label, err));
      };
      sock.once('error', onError);
      sock.once(this.o.proto === 'tcp-tls' ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        sock.off('error', onError);
        sock.setNoDelay(true);
        const took = Date.now() - started;
        this.avgDialMs = (this.avgDialMs * 3 + took) / 4;
        resolve(new StreamConn(sock, this.o.label));
      });
    });
  }

  /** One exchange over a pooled or new connection; a cached connection found closed is replaced once. */
  async exchange(packet: Buffer, timeoutMs: number, local?: LocalAddress): Promise<Buffer> {
    for (let attempt = 0; attempt < 2; attempt++) {
      let conn = this.take();
      const cached = conn !== null;
      this.o.onConn(cached);
      if (!conn) conn = await this.dial(timeoutMs);
      if (local !== undefined && conn.sock.localAddress !== undefined) {
        local.address = conn.sock.localAddress;
        local.port = conn.sock.localPort ?? 0;
      }
      let reply: Buffer;
      try {
        reply = await conn.exchange(packet, timeoutMs);
      } catch (e) {
        conn.destroy();
        if (cached && (e as { noData?: boolean }).noData) continue; // closed by the upstream while idle
        throw e;
      }
      this.release(conn);
      return reply; // the caller checks the question (FORMERR on mismatch)
    }
    throw new CachedClosedError('EOF');
  }

  private release(c: StreamConn): void {
    if (
      this.closedPool ||
      c.closed ||
      this.o.expireMs === 0 ||
      (this.o.maxIdle > 0 && this.idle.length >= this.o.maxIdle)
    ) {
      c.destroy();
      return;
    }
    c.lastUsed = Date.now();
    this.idle.push(c);
  }

  sweep(now = Date.now()): void {
    this.idle = this.idle.filter((c) => {
      if (this.usable(c, now)) return true;
      c.destroy();
      return false;
    });
  }

  get size(): number {
    return this.idle.length;
  }

  close(): void {
    this.closedPool = true;
    for (const c of this.idle) c.destroy();
    this.idle = [];
  }
}
