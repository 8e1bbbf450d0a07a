/**
 * A small pool of connected UDP sockets to one upstream. Several queries share a socket; replies
 * are matched by the random message id and the question, and a reply whose id is unknown (late
 * answer to a query that already timed out) or whose question differs is ignored. Every query
 * has its own timer, so nothing waits forever, and sockets idle longer than `expire` are closed.
 * The exchanges on a socket are kept by `ExchangeSocket` (src/dns/exchangesocket.ts); what is
 * forward's own is the pool, the wording of failures as Go's and the health-check contract: an
 * ICMP error fails the whole socket with every query on it.
 */
import { type ExchangeFailure, ExchangeSocket } from '../../src/dns/exchangesocket.js';
import { type QuestionKey, replyMatches } from '../../src/dns/match.js';
import type { PendingExchange } from '../../src/dns/pendingexchanges.js';
import { goNetError, goTimeout, hostPort } from './goerr.js';
import type { LocalAddress } from './localaddress.js';

interface Waiting extends PendingExchange {
  readonly q: QuestionKey;
  readonly resolve: (buf: Buffer) => void;
  readonly reject: (err: Error) => void;
}

/** 16 random ids, then the lowest free one: a query fails for want of an id only at 65,536 in flight. */
const IDS = { randomTries: 16, scan: true } as const;

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
  readonly conn: ExchangeSocket<Waiting>;
  lastUsed = Date.now();
  /** Close as soon as no query is in flight (pool shut down while queries were pending). */
  draining = false;

  constructor(
    host: string,
    port: number,
    sourceAddress: string | null,
    private readonly label: string,
    onDead: (s: UdpSocket) => void,
  ) {
    this.conn = new ExchangeSocket<Waiting>({
      host,
      port,
      sourceAddress,
      ids: IDS,
      unrefTimers: false,
      // After connect, socket errors are the ICMP errors of earlier sends, reported on receive
      // (Go: `read udp L->R: read: connection refused`): the socket and its queries fail, and
      // each failed query starts the upstream's health check.
      socketErrors: 'fail-socket',
      accepts: (reply, p) => replyMatches(reply, p.q),
      answered: (p, reply) => {
        this.lastUsed = Date.now();
        p.resolve(reply);
        this.drained();
      },
      failed: (p, why, err) => {
        p.reject(this.goError(why, err));
        if (why === 'timeout' || why === 'send') this.drained();
      },
      // A socket that could not connect is dropped too, so the next query dials again.
      closed: () => onDead(this),
    });
  }

  /** Our end once connected (`IP:port`), for Go-style error texts (`read udp L->R: …`). */
  private get local(): string | null {
    const a = this.conn.local;
    return a === null ? null : hostPort(a.address, a.port);
  }

  /** A query's failure in Go's words. */
  private goError(why: ExchangeFailure, err: Error | null): Error {
    switch (why) {
      case 'timeout':
        return goTimeout('read', 'udp', this.local, this.label);
      case 'send':
        return sendError(err!, this.local, this.label);
      case 'icmp':
        return goNetError('read', 'udp', this.local, this.label, err!);
      case 'dial':
        return goNetError('dial', 'udp', null, this.label, err!);
      case 'closed':
        return err!;
    }
  }

  get inFlight(): number {
    return this.conn.pending.size;
  }

  /** Called whenever a query leaves `pending`: finish a pending close. */
  drained(): void {
    if (this.draining && this.conn.pending.size === 0)
      this.conn.close('closed', goNetError('read', 'udp', this.local, this.label, 'use of closed network connection'));
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
    let live = 0;
    for (const s of this.sockets) {
      if (s.draining || s.conn.closed) continue;
      live++;
      if (!best || s.inFlight < best.inFlight) best = s;
    }
    if (best && (best.inFlight < SOCKET_BUSY || live >= this.o.size)) {
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
  exchange(packet: Buffer, q: QuestionKey, timeoutMs: number, local?: LocalAddress): Promise<Buffer> {
    const s = this.pick();
    // Register the query before the socket is ready, so that concurrent callers see it as busy
    // and spread over the pool (one socket's receive buffer overflows under a burst otherwise).
    const id = s.conn.pending.freeId();
    if (id < 0) return Promise.reject(new Error(`write udp ${this.o.label}: no free message id`));
    s.lastUsed = Date.now();
    // A failed connect fails the socket, and with it this query (with the dial error).
    let reply = new Promise<Buffer>((resolve, reject) => {
      s.conn.send(id, { q, resolve, reject, timer: undefined }, Buffer.from(packet), timeoutMs);
    });
    if (local !== undefined) {
      // dnstap wants our end of the socket; it is known once the socket connected.
      reply = reply.finally(() => {
        const a = s.conn.local;
        if (a !== null) {
          local.address = a.address;
          local.port = a.port;
        }
      });
    }
    if (this.o.expireMs !== 0) return reply;
    // expire 0: the socket closes after each exchange.
    return reply.finally(() => {
      if (s.inFlight === 0) s.conn.close('closed', new Error('expired'));
    });
  }

  /** Close sockets idle for longer than `expire` and without queries in flight. */
  sweep(now = Date.now()): void {
    for (const s of this.sockets) {
      if (s.inFlight === 0 && now - s.lastUsed > this.o.expireMs) s.conn.close('closed', new Error('expired'));
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
