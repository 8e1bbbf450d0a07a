/**
 * A small pool of connected UDP sockets to one upstream. Several queries share a socket; replies
 * are matched by the random message id and the question, and a reply whose id is unknown (late
 * answer to a query that already timed out) or whose question differs is ignored. Every query
 * has its own timer, so nothing waits forever, and sockets idle longer than `expire` are closed.
 */
import * as dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import { randomId } from '../../src/dns/ids.js';
import { replyMatches, type QuestionKey } from '../../src/dns/match.js';
import { goNetError, goTimeout, hostPort } from './goerr.js';

interface Pending {
  readonly q: QuestionKey;
  readonly resolve: (buf: Buffer) => void;
  readonly reject: (err: Error) => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * A failed send on the connected upstream socket in Go's words. Linux reports ECONNREFUSED on a
 * connected UDP socket only as the pending ICMP error of an earlier datagram; Node hands it to the
 * next send, where Go's exchange meets it on its read (`read udp L->R: read: connection refused`),
 * so it is worded as that read.
 */
function sendError(err: Error, local: string | null, remote: string): Error {
  if ((err as NodeJS.ErrnoException).code === 'ECONNREFUSED')
    return goNetError('read', 'udp', local, remote, 'read: connection refused');
  return goNetError('write', 'udp', local, remote, err);
}

class UdpSocket {
  readonly sock: dgram.Socket;
  readonly pending = new Map<number, Pending>();
  readonly ready: Promise<void>;
  lastUsed = Date.now();
  /** Connected: queries are sent at once instead of after `ready`. */
  connected = false;
  closed = false;
  /** Close as soon as no query is in flight (pool shut down while queries were pending). */
  draining = false;

  /** Our end once connected (`IP:port`), for Go-style error texts (`read udp L->R: …`). */
  local: string | null = null;

  constructor(
    host: string,
    port: number,
    sourceAddress: string | null,
    private readonly label: string,
    private readonly onDead: (s: UdpSocket) => void,
  ) {
    this.sock = dgram.createSocket(isIPv6(host) ? 'udp6' : 'udp4');
    this.sock.on('message', (msg) => this.onMessage(msg));
    // After connect, socket errors are the ICMP errors of earlier sends, reported on receive
    // (Go: `read udp L->R: read: connection refused`). Before, `ready` reports them as dial errors.
    this.sock.on('error', (err) => {
      if (this.connected) this.fail(goNetError('read', 'udp', this.local, label, err));
    });
    this.ready = new Promise<void>((resolve, reject) => {
      const connect = (): void => {
        // Node hands a failed connect (ENETUNREACH, …) to this callback, not to 'error'.
        this.sock.connect(port, host, (err?: Error) => {
          if (err) {
            reject(err);
            return;
          }
          this.connected = true;
          try {
            const a = this.sock.address();
            this.local = hostPort(a.address, a.port);
          } catch {
            // closed meanwhile
          }
          resolve();
        });
      };
      this.sock.once('error', reject);
      if (sourceAddress) this.sock.bind(0, sourceAddress, connect);
      else connect();
    });
    // A socket that could not connect is dropped, so the next query dials again; every query
    // waiting on it gets the dial error.
    this.ready.catch((e: Error) => this.fail(goNetError('dial', 'udp', null, label, e)));
  }

  private onMessage(msg: Buffer): void {
    if (msg.length < 12) return;
    const p = this.pending.get(msg.readUInt16BE(0));
    if (!p || !replyMatches(msg, p.q)) return;
    this.pending.delete(msg.readUInt16BE(0));
    clearTimeout(p.timer);
    this.lastUsed = Date.now();
    p.resolve(msg);
    this.drained();
  }

  /** Send query `id` (still pending) to the upstream. */
  write(id: number, out: Buffer): void {
    if (this.closed || !this.pending.has(id)) return;
    try {
      this.sock.send(out, (err) => {
        if (err) this.settle(id, sendError(err, this.local, this.label));
      });
    } catch (e) {
      this.settle(id, goNetError('write', 'udp', this.local, this.label, e as Error));
    }
  }

  /** Fail query `id` if it is still waiting. */
  settle(id: number, err: Error): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    p.reject(err);
    this.drained();
  }

  /** Called whenever a query leaves `pending`: finish a pending close. */
  drained(): void {
    if (this.draining && this.pending.size === 0)
      this.fail(goNetError('read', 'udp', this.local, this.label, 'use of closed network connection'));
  }

  /** Fail every waiting query and close the socket. */
  fail(err: Error): void {
    if (this.closed) return;
    this.closed = true;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
    try {
      this.sock.close();
    } catch {
      // already closed
    }
    this.onDead(this);
  }

  freeId(): number {
    for (let i = 0; i < 16; i++) {
      const id = randomId();
      if (!this.pending.has(id)) return id;
    }
    for (let id = 0; id < 0x10000; id++) if (!this.pending.has(id)) return id;
    return -1;
  }
}

export interface UdpPoolOptions {
  readonly host: string;
  readonly port: number;
  /** `IP:port` of the upstream, for error messages. */
  readonly label: string;
  readonly sourceAddress: string | null;
  /** Idle time after which a socket is closed (0: close after every exchange). */
  readonly expireMs: number;
  /** Sockets kept per upstream. */
  readonly size: number;
  /** Called with true on reuse of a cached socket, false when a new one was opened. */
  readonly onConn: (hit: boolean) => void;
}

/** In-flight queries per socket before another socket is opened (when the pool has room). */
const SOCKET_BUSY = 64;

export class UdpPool {
  private sockets: UdpSocket[] = [];
  private closedPool = false;

  constructor(private readonly o: UdpPoolOptions) {}

  private pick(): UdpSocket {
    const now = Date.now();
    // Close idle sockets past their expiry when we come by (the sweep timer does the rest).
    this.sweep(now);
    let best: UdpSocket | undefined;
    for (const s of this.sockets) {
      if (s.draining || s.closed) continue;
      if (!best || s.pending.size < best.pending.size) best = s;
    }
    const live = this.sockets.filter((x) => !x.draining && !x.closed).length;
    if (best && (best.pending.size < SOCKET_BUSY || live >= this.o.size)) {
      this.o.onConn(true);
      return best;
    }
    this.o.onConn(false);
    const s = new UdpSocket(this.o.host, this.o.port, this.o.sourceAddress, this.o.label, (dead) => {
      this.sockets = this.sockets.filter((x) => x !== dead);
    });
    this.sockets.push(s);
    // After shutdown a straggler still gets its answer, on a socket that closes right after.
    if (this.closedPool) s.draining = true;
    return s;
  }

  /**
   * Send `packet` (its id is replaced by a fresh random one) and wait for the matching reply for
   * at most `timeoutMs`.
   */
  exchange(packet: Buffer, q: QuestionKey, timeoutMs: number): Promise<Buffer> {
    const s = this.pick();
    // Register the query before the socket is ready, so that concurrent callers see it as busy
    // and spread over the pool (one socket's receive buffer overflows under a burst otherwise).
    const id = s.freeId();
    if (id < 0) return Promise.reject(new Error(`write udp ${this.o.label}: no free message id`));
    const out = Buffer.from(packet);
    out.writeUInt16BE(id, 0);
    s.lastUsed = Date.now();
    const label = this.o.label;
    const reply = new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => s.settle(id, goTimeout('read', 'udp', s.local, label)), timeoutMs);
      s.pending.set(id, { q, resolve, reject, timer });
    });
    // A failed connect fails the socket, and with it this query (with the dial error).
    if (s.connected) s.write(id, out);
    else
      s.ready.then(
        () => s.write(id, out),
        () => undefined,
      );
    if (this.o.expireMs !== 0) return reply;
    // expire 0: the socket closes after each exchange.
    return reply.finally(() => {
      if (s.pending.size === 0) s.fail(new Error('expired'));
    });
  }

  /** Close sockets idle for longer than `expire` and without queries in flight. */
  sweep(now = Date.now()): void {
    for (const s of this.sockets) {
      if (s.pending.size === 0 && now - s.lastUsed > this.o.expireMs) s.fail(new Error('expired'));
    }
  }

  get size(): number {
    return this.sockets.length;
  }

  /**
   * Shut the pool down: idle sockets close now, sockets with queries in flight once those are
   * answered or timed out (so a reload does not fail the old instance's last queries).
   */
  close(): void {
    this.closedPool = true;
    for (const s of [...this.sockets]) {
      s.draining = true;
      s.drained();
    }
  }
}
