/**
 * A connected UDP socket to one server with the queries in flight on it (a `PendingExchanges`
 * table): the one UDP exchange core of forward's pooled sockets and shadow's reference sockets.
 * Each query gets a free random id written into its packet and its own timer; each reply goes to
 * the query whose id it carries, and every query ends exactly once, in `answered` or `failed`.
 *
 * What the two users do differently is configured, not copied:
 * - how hard to look for a free id (`ids`);
 * - a datagram that carries the id of no query in flight (`unmatched`: shadow counts it, forward
 *   drops it) and a reply whose question is not the query's (`accepts`: forward drops it and
 *   keeps waiting; shadow takes every reply and judges it in `answered`);
 * - an error reported on the socket, which on a connected UDP socket is the ICMP error of an
 *   earlier datagram (`socketErrors`): forward fails the socket with every query on it, shadow
 *   charges the oldest query still waiting.
 * The users word the failures (`failed` says what happened); nothing here logs or counts.
 */
import * as dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { isIPv6 } from 'node:net';
import { type IdChoice, type PendingExchange, PendingExchanges } from './pendingexchanges.js';

/**
 * Why a query ended without a reply: its timer fired, its send failed, an ICMP error was
 * charged to it, the socket could not be opened (`dial`), or the socket was closed under it.
 */
export type ExchangeFailure = 'timeout' | 'send' | 'icmp' | 'dial' | 'closed';

export interface ExchangeSocketOptions<P extends PendingExchange> {
  /** Server IP address (a name is resolved by the caller) and port. */
  readonly host: string;
  readonly port: number;
  /** Bind to this local address before connecting (null: the system chooses). */
  readonly sourceAddress: string | null;
  readonly ids: IdChoice;
  /** Unref the query timers (a waiting query does not keep the process alive). */
  readonly unrefTimers: boolean;
  /**
   * An error on the connected socket: `fail-socket` closes it, failing every query in flight
   * with `icmp`; `fail-oldest` fails only the query sent first among those in flight.
   */
  readonly socketErrors: 'fail-socket' | 'fail-oldest';
  /**
   * Does `reply` (carrying `p`'s id) answer `p`? When not, the datagram is dropped and `p` keeps
   * waiting. Absent: every datagram carrying a query's id answers it.
   */
  readonly accepts?: (reply: Buffer, p: P) => boolean;
  /** `p`'s reply arrived (`p` is no longer in flight). */
  readonly answered: (p: P, reply: Buffer) => void;
  /** A datagram shorter than a header or carrying the id of no query in flight. */
  readonly unmatched?: (datagram: Buffer) => void;
  /** `p` ended without a reply; `err` is the socket's error (null for `timeout`). */
  readonly failed: (p: P, why: ExchangeFailure, err: Error | null) => void;
  /** The socket closed (after failing what was in flight). */
  readonly closed?: () => void;
}

export class ExchangeSocket<P extends PendingExchange> {
  readonly pending: PendingExchanges<P>;
  /** Settles once the socket is connected; a failed connect closes it with `dial`. */
  readonly ready: Promise<void>;
  connected = false;
  closed = false;
  /** Our end once connected. */
  local: AddressInfo | null = null;
  private readonly sock: dgram.Socket;

  constructor(private readonly o: ExchangeSocketOptions<P>) {
    this.pending = new PendingExchanges<P>(o.ids, (p) => o.failed(p, 'timeout', null), o.unrefTimers);
    const sock = dgram.createSocket(isIPv6(o.host) ? 'udp6' : 'udp4');
    this.sock = sock;
    sock.on('message', this.onMessage);
    // Before connect, errors reject `ready` (dial errors); after, they are ICMP errors of earlier sends.
    sock.on('error', (err) => {
      if (this.connected) this.onSocketError(err);
    });
    this.ready = new Promise<void>((resolve, reject) => {
      const connect = (): void => {
        // Node hands a failed connect (ENETUNREACH, EINVAL, …) to this callback, not to 'error'.
        sock.connect(o.port, o.host, (err?: Error) => {
          if (err) {
            reject(err);
            return;
          }
          this.connected = true;
          try {
            this.local = sock.address();
          } catch {
            // closed meanwhile
          }
          resolve();
        });
      };
      sock.once('error', reject);
      if (o.sourceAddress !== null) sock.bind(0, o.sourceAddress, connect);
      else connect();
    });
    // Whoever waits on `ready` sees the error too; queries already registered fail with `dial`.
    this.ready.catch((e: Error) => this.close('dial', e));
  }

  /** Register `p` as query `id` (from `pending.freeId()`), write `id` into `packet` and send it (once connected). */
  send(id: number, p: P, packet: Buffer, timeoutMs: number): void {
    this.pending.add(id, p, timeoutMs);
    packet.writeUInt16BE(id, 0);
    if (this.connected) this.write(id, packet);
    else
      this.ready.then(
        () => this.write(id, packet),
        () => undefined,
      );
  }

  /**
   * Fail every query in flight with `why`/`err` and close the socket (once; later calls do
   * nothing).
   */
  close(why: ExchangeFailure, err: Error | null): void {
    if (this.closed) return;
    this.closed = true;
    for (const p of this.pending.takeAll()) this.o.failed(p, why, err);
    try {
      this.sock.close();
    } catch {
      // already closed
    }
    this.o.closed?.();
  }

  private write(id: number, packet: Buffer): void {
    if (this.closed || !this.pending.has(id)) return;
    try {
      this.sock.send(packet, (err) => {
        if (err) this.fail(id, 'send', err);
      });
    } catch (e) {
      this.fail(id, 'send', e as Error);
    }
  }

  /** End query `id` without a reply, if it is still in flight. */
  private fail(id: number, why: ExchangeFailure, err: Error | null): void {
    const p = this.pending.take(id);
    if (p !== undefined) this.o.failed(p, why, err);
  }

  private onSocketError(err: Error): void {
    if (this.o.socketErrors === 'fail-socket') {
      this.close('icmp', err);
      return;
    }
    const oldest = this.pending.oldest();
    if (oldest !== undefined) this.fail(oldest, 'icmp', err);
  }

  private readonly onMessage = (msg: Buffer): void => {
    const id = msg.length < 12 ? -1 : msg.readUInt16BE(0);
    const p = id < 0 ? undefined : this.pending.get(id);
    if (p === undefined) {
      this.o.unmatched?.(msg);
      return;
    }
    if (this.o.accepts !== undefined && !this.o.accepts(msg, p)) return;
    this.pending.remove(id, p);
    this.o.answered(p, msg);
  };
}
