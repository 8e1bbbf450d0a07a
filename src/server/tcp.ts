/**
 * DNS over TCP connections (RFC 7766) for one listener, with the limits that keep one client from
 * exhausting the server:
 *
 * - Back-pressure: a connection is read only while its queries in flight plus its replies not yet
 *   handed to the kernel stay under `maxInFlightPerConnection`, and its unsent reply bytes under
 *   `maxQueuedBytesPerConnection` (and, while the listener's total is above `maxQueuedBytes`, a
 *   connection with unsent bytes is not read at all). Queries already received but not yet
 *   processed wait in the connection's read buffer (at most one socket read); the rest wait in
 *   the kernel, which closes the client's TCP window. A connection dispatches at most 128 messages
 *   per turn of the event loop, so a long pipeline cannot starve the other clients.
 * - Idle: a connection with no complete query read and no flush of its unsent replies for
 *   `idleTimeoutMs` is closed, so a peer that does not read its replies is closed too; a message
 *   started but not completed within `readTimeoutMs` closes the connection, and so does a new
 *   connection without a complete first query within it (CoreDNS's read timeout).
 * - `timeouts` plugin: `writeTimeoutMs` (when set) closes a connection whose replies do not reach
 *   the kernel for that long; `maxQueries` closes it once that many queries were answered.
 * - Fair caps: at most `maxConnectionsPerSource` connections per client address (a new one beyond
 *   it is closed at once); at `maxConnections` the connection idle the longest is closed to make
 *   room for the new one, so a client holding many connections cannot keep others out.
 */
import type * as net from 'node:net';
import type { ReplyStream } from '../query.js';
import { unmapV4 } from '../util/ip.js';
import type { Dispatch, Exchange } from './listener.js';
import { policyFor, type ProxyPolicy, type ProxyProtoSettings } from '../proxyproto/policy.js';
import { readStreamStart } from '../proxyproto/stream.js';
import { ConnectionAdmission } from './admission.js';

export interface TcpLimits {
  /** Close a connection with no query read and no reply written for this long (ms). CoreDNS: 10 s. */
  idleTimeoutMs: number;
  /** Close a connection that started but did not finish a message within this long (ms). CoreDNS: 3 s. */
  readTimeoutMs: number;
  /** Close a connection whose written replies stay unsent this long (ms); 0 = off (`timeouts { write }`). */
  writeTimeoutMs?: number;
  /** Queries answered on one connection before it is closed; -1/absent = unlimited (`timeouts { maxtcpqueries }`). */
  maxQueries?: number;
  /** Maximum concurrent TCP connections per listener; at the cap the longest-idle one is closed. */
  maxConnections: number;
  /** Maximum concurrent TCP connections from one client address (0 = no per-address cap). */
  maxConnectionsPerSource: number;
  /** Queries being processed plus replies not yet sent, per connection; reading pauses at it. */
  maxInFlightPerConnection: number;
  /** Reply bytes not yet handed to the kernel, per connection; reading pauses at it. */
  maxQueuedBytesPerConnection: number;
  /** Reply bytes not yet handed to the kernel, all connections of the listener together. */
  maxQueuedBytes: number;
}

export const DEFAULT_TCP_LIMITS: TcpLimits = {
  idleTimeoutMs: 10_000,
  readTimeoutMs: 3_000,
  maxConnections: 10_000,
  maxConnectionsPerSource: 256,
  maxInFlightPerConnection: 128,
  maxQueuedBytesPerConnection: 64 * 1024,
  maxQueuedBytes: 32 * 1024 * 1024,
};

/** What a listener tells its connections about itself. */
export interface ListenerInfo {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  /** A query of the listener finished (see Exchange.done). */
  finished(): void;
  started(): void;
  readonly dispatchFn: Dispatch;
}

/** A snapshot of one connection, for tests and diagnostics. */
export interface TcpConnectionStats {
  remoteAddress: string;
  remotePort: number;
  inFlight: number;
  queuedReplies: number;
  queuedBytes: number;
  readPaused: boolean;
}

/** The connections of one listener: per-source counts, idle order, the sweeper. */
export class TcpPool {
  /** Connections in the order of their last activity, and the caps (src/server/admission.ts). */
  private readonly admission = new ConnectionAdmission<TcpConnection>(
    (c) => c.remoteAddress,
    (c) => c.close(),
    () => this.sweep(),
  );
  /** Unsent reply bytes of all connections. */
  queuedBytes = 0;
  idleClosed = 0;
  /** `proxyproto` settings for connections accepted from now on; null = none. */
  proxy: ProxyProtoSettings | null = null;

  constructor(
    /** Replaced by the `timeouts` plugin's values on a (re)load; connections read it when they need it. */
    public limits: TcpLimits,
    readonly listener: ListenerInfo,
  ) {}

  get size(): number {
    return this.admission.size;
  }

  /** Connections closed because of the caps, for diagnostics. */
  get evicted(): number {
    return this.admission.evicted;
  }

  get refused(): number {
    return this.admission.refused;
  }

  /** Connections holding replies corked until the end of this event-loop turn (TLS). */
  private readonly corked: TcpConnection[] = [];
  private readonly uncorkAll = (): void => {
    const list = this.corked.splice(0);
    for (const conn of list) conn.release();
  };

  /** Hold a TLS connection's replies until the turn ends: one record and one write for all of them. */
  holdUntilTurnEnds(conn: TcpConnection): void {
    if (this.corked.push(conn) === 1) setImmediate(this.uncorkAll);
  }

  /** Take a new connection, applying the per-source and global caps. */
  add(c: net.Socket, remote: string, family: 1 | 2): void {
    const limits = this.limits;
    if (!this.admission.admit(remote, limits.maxConnectionsPerSource, limits.maxConnections)) {
      c.destroy();
      return;
    }
    // Caps count the socket's peer (a proxy's connections share its cap): a header is not read yet,
    // and a client could claim any address in one.
    const policy = this.proxy === null ? null : policyFor(this.proxy, remote);
    const conn = new TcpConnection(this, c, family, remote, c.remotePort ?? 0, policy === 'skip' ? null : policy);
    this.admission.add(conn, Math.max(50, Math.min(1000, limits.idleTimeoutMs >> 2)));
  }

  /** A connection closed: forget it. */
  removed(conn: TcpConnection): void {
    this.admission.remove(conn);
  }

  /** Move a connection to the end of the idle order. */
  touched(conn: TcpConnection): void {
    // (A closed connection's late write callbacks must not bring it back.)
    this.admission.touch(conn);
  }

  /** Close connections idle longer than the idle timeout (oldest first; stop at the first recent one). */
  sweep(now = Date.now()): void {
    const limit = now - this.limits.idleTimeoutMs;
    for (const conn of this.admission.values()) {
      if (conn.orderedAt > limit) break;
      if (conn.lastActive <= limit) {
        this.idleClosed++;
        conn.close();
      } else {
        conn.orderedAt = conn.lastActive;
        this.touched(conn);
      }
    }
  }

  connections(): IterableIterator<TcpConnection> {
    return this.admission.values();
  }

  stats(): TcpConnectionStats[] {
    return [...this.admission.values()].map((c) => c.stats());
  }

  /** Connections from one address. */
  countFrom(remote: string): number {
    return this.admission.countFrom(remote);
  }

  stop(): void {
    this.admission.stop();
  }
}

const REORDER_MS = 1000;
const EMPTY = Buffer.alloc(0);
/** Messages one connection may dispatch before the others get a turn (setImmediate). */
const PUMP_BUDGET = 128;
/** Bytes a connection waiting for its next turn may read ahead. */
const YIELD_BUFFER = 64 * 1024;
/** A frame of the largest DNS message: the length prefix and 65,535 bytes. */
const STREAM_FRAME_BYTES = 2 + 0xffff;
/**
 * Frames a connection keeps for reuse: a transfer waits for the socket after each message, so it
 * has one or two out at a time; transfers pipelined on one connection allocate beyond that.
 */
const STREAM_FRAMES_KEPT = 2;

/** One TCP connection: framing, back-pressure, the in-flight cap, activity for the idle order. */
export class TcpConnection {
  private inFlight = 0;
  private queuedReplies = 0;
  /** Unsent bytes as last accounted in the pool's total. */
  private accounted = 0;
  private readPaused = false;
  private pumping = false;
  private closed = false;
  /** Received bytes not yet framed (a partial message, or messages waiting for capacity). */
  private buf: Buffer | null = null;
  private readTimer: NodeJS.Timeout | null = null;
  private writeTimer: NodeJS.Timeout | null = null;
  /** When the unsent replies last reached the kernel (write timeout). */
  private lastFlush = 0;
  /** Queries dispatched (`maxQueries`). */
  private served = 0;
  /** Frame buffers of a zone transfer's messages not being written now (send, `streamed`). */
  private streamFrames: Buffer[] | null = null;
  lastActive: number;
  /** When the connection was last moved in the pool's idle order. */
  orderedAt: number;
  readonly family: 1 | 2;
  readonly listener: ListenerInfo;
  private readonly maxInFlight: number;
  private readonly maxQueued: number;
  /** An empty write is queued behind the unsent replies to learn when they are flushed. */
  private flushWaiting = false;
  private readonly onFlushed: () => void;
  private yieldScheduled = false;
  private readonly onYield: () => void;
  /** TLS: each record read is its own 'data' event, so replies are held to the turn's end (release). */
  private readonly coalesce: boolean;
  private held = false;
  private local: string | null = null;
  /** The query's source: the socket's peer, or the client a PROXY header named. */
  clientAddress: string;
  clientPort: number;
  clientFamily: 1 | 2;
  /** `proxyproto/tlv` of the connection's header. */
  proxyTlv: string | null = null;

  constructor(
    private readonly pool: TcpPool,
    private readonly c: net.Socket,
    family: 1 | 2,
    readonly remoteAddress: string,
    readonly remotePort: number,
    /** A PROXY header is looked for before the first message, with this policy (null: not). */
    private proxyPolicy: ProxyPolicy | null = null,
  ) {
    this.family = family;
    this.clientAddress = remoteAddress;
    this.clientPort = remotePort;
    this.clientFamily = family;
    this.listener = pool.listener;
    this.lastActive = this.orderedAt = Date.now();
    this.maxInFlight = pool.limits.maxInFlightPerConnection;
    this.maxQueued = Math.max(pool.limits.maxQueuedBytesPerConnection, 1);
    this.coalesce = 'encrypted' in c;
    this.onYield = () => {
      this.yieldScheduled = false;
      this.pump();
    };
    this.onFlushed = () => {
      this.flushWaiting = false;
      this.flushed();
    };
    // The first query must arrive within the read timeout (cleared by the first complete message).
    this.readTimer = setTimeout(() => c.destroy(), pool.limits.readTimeoutMs);
    c.on('data', (chunk: Buffer) => this.onData(chunk));
    c.on('drain', () => this.flushed());
    c.on('close', () => this.onClose());
    c.on('error', () => c.destroy());
  }

  /** Close at once (caps, idle); the pool forgets the connection now, not at its 'close' event. */
  close(): void {
    this.c.destroy();
    this.pool.removed(this);
  }

  /** End gracefully (shutdown): half-close after the replies already queued. */
  end(): void {
    this.c.end();
  }

  stats(): TcpConnectionStats {
    return {
      remoteAddress: this.remoteAddress,
      remotePort: this.remotePort,
      inFlight: this.inFlight,
      queuedReplies: this.queuedReplies,
      queuedBytes: this.c.writableLength,
      readPaused: this.readPaused,
    };
  }

  private touch(): void {
    const now = Date.now();
    this.lastActive = now;
    if (now - this.orderedAt >= REORDER_MS) {
      this.orderedAt = now;
      this.pool.touched(this);
    }
  }

  private onData(chunk: Buffer): void {
    this.buf = this.buf ? Buffer.concat([this.buf, chunk]) : chunk;
    if (this.proxyPolicy !== null && !this.takeProxyHeader()) return;
    if (this.yieldScheduled) {
      // The rest of a long pipeline waits for its turn; stop reading if it piles up.
      if (this.buf.length >= YIELD_BUFFER && !this.readPaused) {
        this.readPaused = true;
        this.c.pause();
      }
      return;
    }
    this.pump();
  }

  /**
   * The connection's first bytes with `proxyproto`: take a header off (false while it is
   * incomplete, or when it closed the connection). The read timeout for the first query bounds the
   * wait, as CoreDNS's read deadline bounds go-proxyproto's header read.
   */
  private takeProxyHeader(): boolean {
    const start = readStreamStart(this.pool.proxy!, this.proxyPolicy!, this.buf!);
    if (start.kind === 'more') return false;
    this.proxyPolicy = null;
    if (start.kind === 'close') {
      this.close();
      return false;
    }
    this.buf = start.rest.length === 0 ? null : start.rest;
    if (start.client !== null) {
      this.clientAddress = start.client.address;
      this.clientPort = start.client.port;
      this.clientFamily = start.client.family;
      if (start.local !== null) this.local = start.local.address;
    }
    this.proxyTlv = start.tlv;
    return true;
  }

  /** Too much outstanding to read more. */
  private over(): boolean {
    const q = this.c.writableLength;
    return (
      this.inFlight + this.queuedReplies >= this.maxInFlight ||
      q >= this.maxQueued ||
      (q > 0 && this.pool.queuedBytes >= this.pool.limits.maxQueuedBytes)
    );
  }

  /** Dispatch the complete messages received while there is capacity; pause or resume reading. */
  private pump(): void {
    if (this.pumping || this.closed) return;
    this.pumping = true;
    const c = this.c;
    let got = false;
    let budget = PUMP_BUDGET;
    for (;;) {
      // Replies computed synchronously for these queries leave in one write (pipelining).
      c.cork();
      let buf = this.buf;
      const maxQ = this.pool.limits.maxQueries ?? -1;
      while (budget > 0 && buf !== null && buf.length >= 2 && !this.over() && (maxQ < 0 || this.served < maxQ)) {
        const len = buf.readUInt16BE(0);
        if (buf.length < 2 + len) break;
        const msg = Buffer.from(buf.subarray(2, 2 + len));
        buf = buf.length === 2 + len ? null : buf.subarray(2 + len);
        this.buf = buf;
        if (len === 0) continue;
        got = true;
        budget--;
        this.served++;
        this.inFlight++;
        this.listener.started();
        this.listener.dispatchFn(msg, new TcpExchange(this));
        if (this.closed) break;
      }
      c.uncork();
      this.account();
      if (this.closed) break;
      if (maxQ >= 0 && this.served >= maxQ) {
        // The last query this connection may ask: later ones are not read; it ends once answered.
        this.buf = null;
        this.endWhenAnswered();
        break;
      }
      // Replies handed to the kernel at once (the usual case) are no longer queued.
      if (this.accounted === 0) this.queuedReplies = 0;
      const complete = buf !== null && buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0);
      if (complete && this.over()) {
        // Wait for finished queries, or the unsent replies to reach the kernel.
        if (!this.readPaused) {
          this.readPaused = true;
          c.pause();
        }
        this.waitFlush();
        break;
      }
      if (!complete) {
        if (this.readPaused) {
          this.readPaused = false;
          c.resume();
        }
        break;
      }
      if (budget === 0) {
        // A long pipeline: let other connections and UDP have the event loop, then go on
        // (reading goes on meanwhile, up to YIELD_BUFFER bytes: see onData).
        if (!this.yieldScheduled) {
          this.yieldScheduled = true;
          setImmediate(this.onYield);
        }
        break;
      }
      // The flush at uncork made room: go on with the messages already received.
    }
    if (got) this.touch();
    // A started message must complete within the read timeout (counted from the last complete one).
    const partial = this.buf !== null && !this.readPaused && !this.yieldScheduled;
    if (got && this.readTimer) {
      clearTimeout(this.readTimer);
      this.readTimer = null;
    }
    if (partial && !this.readTimer) {
      this.readTimer = setTimeout(() => c.destroy(), this.pool.limits.readTimeoutMs);
    } else if (!partial && this.readTimer) {
      clearTimeout(this.readTimer);
      this.readTimer = null;
    }
    if (partial && this.buf!.byteOffset > 0) {
      // Keep only the partial message, not the whole chunk it came in.
      this.buf = Buffer.from(this.buf!);
    }
    this.pumping = false;
  }

  /** Update the pool's total of unsent bytes with this connection's share. */
  private account(): void {
    const q = this.c.writableLength;
    if (q !== this.accounted) {
      this.pool.queuedBytes += q - this.accounted;
      this.accounted = q;
    }
  }

  private maybeResume(): void {
    this.account();
    if (!this.readPaused || this.pumping || this.closed) return;
    const q = this.c.writableLength;
    if (
      this.inFlight + this.queuedReplies <= this.maxInFlight >> 1 &&
      q <= this.maxQueued >> 1 &&
      !(q > 0 && this.pool.queuedBytes >= this.pool.limits.maxQueuedBytes)
    ) {
      this.pump();
    } else {
      this.waitFlush();
    }
  }

  /** Learn when the unsent replies reach the kernel ('drain' only follows a write over the high-water mark). */
  private waitFlush(): void {
    if (this.accounted > 0 && !this.flushWaiting) {
      this.flushWaiting = true;
      this.c.write(EMPTY, this.onFlushed);
    }
  }

  /** Everything written so far reached the kernel ('drain', or the empty write's callback). */
  private flushed(): void {
    if (this.closed || this.c.destroyed) return;
    this.account();
    if (this.accounted > 0) return;
    this.lastFlush = Date.now();
    this.queuedReplies = 0;
    this.touch();
    this.maybeResume();
  }

  /**
   * Sends one reply with its length prefix. `streamed` (a transfer's messages): a large message's
   * frame comes from the connection's own buffers, each back in the free list once the socket has
   * written it, instead of a new buffer of up to 64 KiB per message that the collector has to free.
   */
  send(reply: Buffer, streamed = false): void {
    if (this.closed || this.c.destroyed) return;
    if (this.coalesce && !this.held) {
      this.held = true;
      this.c.cork();
      this.pool.holdUntilTurnEnds(this);
    }
    let frame: Buffer;
    let written: (() => void) | undefined;
    if (streamed && reply.length >= STREAM_FRAME_BYTES >> 1) {
      // Only messages of at least half a frame: a queued frame then holds at most twice the bytes
      // the write limits count for it (they see the message, not the buffer behind it).
      const free = (this.streamFrames ??= []);
      const whole = free.pop() ?? Buffer.allocUnsafe(STREAM_FRAME_BYTES);
      frame = whole.subarray(0, 2 + reply.length);
      written = () => {
        if (this.streamFrames !== null && this.streamFrames.length < STREAM_FRAMES_KEPT) this.streamFrames.push(whole);
      };
    } else {
      frame = Buffer.allocUnsafe(2 + reply.length);
    }
    frame.writeUInt16BE(reply.length, 0);
    frame.set(reply, 2);
    // A reply counts as queued (against the in-flight cap) until the socket's buffer empties.
    this.queuedReplies++;
    this.c.write(frame, written);
    if (!this.pumping) {
      this.account();
      if (this.accounted === 0) this.queuedReplies = 0;
    }
    if (this.pool.limits.writeTimeoutMs) this.armWriteTimer();
  }

  /**
   * One message of a stream of replies to one query (a zone transfer): sent like a reply, and the
   * promise resolves when the socket wants more (its buffer drained) and after a turn of the event
   * loop, so a long transfer neither piles up in memory nor keeps other connections waiting.
   */
  sendStreamed(reply: Buffer): Promise<boolean> {
    if (this.closed || this.c.destroyed) return Promise.resolve(false);
    this.send(reply, true);
    // A client that keeps up never makes the socket drain, so nothing else marks the connection
    // active: without this a transfer longer than the idle timeout was closed by the sweep, and
    // at the connection cap it looked the idlest one to evict.
    this.touch();
    return new Promise((resolve) => {
      const c = this.c;
      const go = (): void => {
        c.off('drain', go);
        c.off('close', go);
        setImmediate(() => resolve(!this.closed && !c.destroyed));
      };
      if (!c.writableNeedDrain || c.destroyed) go();
      else {
        c.on('drain', go);
        c.on('close', go);
      }
    });
  }

  /** The turn ended: what the held cork kept leaves in one write. */
  release(): void {
    if (!this.held) return;
    this.held = false;
    this.c.uncork();
    if (this.closed || this.c.destroyed) return;
    this.account();
    if (this.accounted === 0) this.queuedReplies = 0;
    // Reading may have paused on replies this hold kept (the flush callback found them unsent):
    // with nothing else in flight, nothing but this would resume it.
    if (this.readPaused) this.maybeResume();
  }

  /** `timeouts { write }`: unsent replies that make no progress for that long close the connection. */
  private armWriteTimer(): void {
    if (this.writeTimer) return;
    this.account();
    if (this.accounted === 0) return;
    const limit = this.pool.limits.writeTimeoutMs ?? 0;
    this.lastFlush = Date.now();
    this.waitFlush();
    const check = (): void => {
      this.writeTimer = null;
      if (this.closed) return;
      this.account();
      if (this.accounted === 0) return;
      const left = this.lastFlush + limit - Date.now();
      if (left <= 0) this.close();
      else {
        this.waitFlush();
        this.writeTimer = setTimeout(check, left);
      }
    };
    this.writeTimer = setTimeout(check, limit);
  }

  /** `maxQueries` reached: half-close once every dispatched query is answered. */
  private endWhenAnswered(): void {
    if (this.readTimer) clearTimeout(this.readTimer);
    this.readTimer = null;
    if (this.inFlight === 0) this.c.end();
  }

  finished(): void {
    this.inFlight--;
    this.listener.finished();
    const maxQ = this.pool.limits.maxQueries ?? -1;
    if (maxQ >= 0 && this.served >= maxQ) {
      if (this.inFlight === 0 && !this.closed) this.c.end();
      return;
    }
    if (this.readPaused) this.maybeResume();
  }

  /**
   * The address the connection was accepted on, as CoreDNS's {local} (the connection's LocalAddr):
   * a wildcard listener's own address is `::` or `0.0.0.0`. Read on first use, once per connection.
   */
  get localAddress(): string {
    if (this.local === null) this.local = unmapV4(this.c.localAddress ?? this.listener.host);
    return this.local;
  }

  private onClose(): void {
    this.closed = true;
    if (this.readTimer) clearTimeout(this.readTimer);
    this.readTimer = null;
    if (this.writeTimer) clearTimeout(this.writeTimer);
    this.writeTimer = null;
    this.buf = null;
    this.streamFrames = null;
    this.pool.queuedBytes -= this.accounted;
    this.accounted = 0;
    this.pool.removed(this);
  }
}

class TcpExchange implements Exchange {
  readonly proto = 'tcp';
  readonly family: 1 | 2;
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly localPort: number;
  readonly server: string;
  readonly proxyTlv: string | null;
  private answered = false;

  constructor(private readonly conn: TcpConnection) {
    this.family = conn.clientFamily;
    this.remoteAddress = conn.clientAddress;
    this.remotePort = conn.clientPort;
    this.proxyTlv = conn.proxyTlv;
    const l = conn.listener;
    this.localPort = l.port;
    this.server = l.name;
  }

  get localAddress(): string {
    return this.conn.localAddress;
  }

  respond(reply: Buffer): void {
    if (this.answered) return;
    this.answered = true;
    this.conn.send(reply);
  }

  openStream(): ReplyStream {
    this.answered = true;
    return { send: (msg) => this.conn.sendStreamed(msg), abort: () => this.conn.close() };
  }

  done(): void {
    this.conn.finished();
  }
}
