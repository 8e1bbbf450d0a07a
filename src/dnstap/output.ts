/**
 * One dnstap output: a connection to a collector (unix socket, TCP or TLS) with a bounded queue in
 * front of it. The query path encodes each record's frame straight into the next socket write (or
 * counts the record as dropped when that write already holds `capacity` records or no collector is
 * connected, as CoreDNS's dio does). Encoding at once costs the query path about as much as keeping
 * the record for later did, and saves the copies of the wire messages and the queued objects a
 * deferred encoding needed. Writes are batched: once FLUSH_RECORDS are pending, else FLUSH_MS after
 * the first, as CoreDNS's buffered encoder writes a full buffer at once and the rest on its flush
 * tick (1 s). One write per query was what dnstap cost most at moderate rates. A slow collector
 * fills the pending write, never the query path; an absent one is redialled on CoreDNS's 10-second
 * error check, which also logs `Dropped dnstap messages: N`.
 */
import { connect as netConnect, type Socket } from 'node:net';
import type { Logger } from '../log.js';
import { CONTENT_TYPE, Control, FrameReader, controlFrame } from './framestream.js';
import { encodeIdentity, writeTapFrame, type TapIdentity, type TapRecord } from './message.js';
import { ProtoWriter } from './protobuf.js';
import { nodeTls } from '../util/require.js';

/** CoreDNS's dnstap constants (plugin/dnstap/io.go). */
export const QUEUE_SIZE = 10_000;
export const TCP_TIMEOUT_MS = 4000;
export const ERROR_CHECK_INTERVAL_MS = 10_000;
/** Queued records that are written at once (in the next turn of the event loop). */
export const FLUSH_RECORDS = 256;
/** How long fewer records wait for more before they are written. */
export const FLUSH_MS = 100;
/** The size a batch of frames starts at (about 256 records with `full`; it grows when they are larger). */
export const FRAMES_BYTES = 64 * 1024;

export interface OutputOptions {
  network: 'unix' | 'tcp' | 'tls';
  /** A socket path for unix, `host:port` otherwise. */
  address: string;
  /** Queue capacity in records (CoreDNS: queue multiple × 10,000). */
  capacity: number;
  skipVerify: boolean;
  identity: TapIdentity;
  log: Logger;
  errorCheckIntervalMs?: number;
  timeoutMs?: number;
}

/** Go's texts for the dial errors a collector's absence causes (`dial unix /x: connect: …`). */
const GO_ERRNO: Record<string, string> = {
  ENOENT: 'no such file or directory',
  ECONNREFUSED: 'connection refused',
  EACCES: 'permission denied',
  ENETUNREACH: 'network is unreachable',
  EHOSTUNREACH: 'no route to host',
};

function goDialError(network: string, address: string, err: Error): Error {
  const code = (err as NodeJS.ErrnoException).code;
  const text = code !== undefined ? GO_ERRNO[code] : undefined;
  if (text === undefined) return err;
  return new Error(`dial ${network === 'tls' ? 'tcp' : network} ${address}: connect: ${text}`);
}

type State = 'idle' | 'dialing' | 'ready' | 'closed';

/** Where a tap's records go: a collector it dials (TapOutput) or sinks that connect (ListenTap). */
export interface TapSink {
  /** Starts sending; resolves with the error to log, if any. */
  start(): Promise<Error | undefined>;
  /** Takes one record; never blocks, never throws. */
  tap(r: TapRecord): void;
  close(): void;
}

export class TapOutput implements TapSink {
  /** Records encoded into {@link frames} and not yet handed to the socket. */
  private pending = 0;
  /**
   * Records of the last write while the socket has not taken it all ('drain' pending, 0 when it
   * has): they still count against the capacity, so a slow collector holds at most `capacity`
   * records in memory, and no other write starts meanwhile.
   */
  private unsent = 0;
  private state: State = 'idle';
  private socket: Socket | undefined;
  private scheduled = false;
  private flushTimer: NodeJS.Timeout | undefined;
  private dropped = 0;
  private checker: NodeJS.Timeout | undefined;
  /** Records dropped since start (tests and metrics read it; the log counter resets). */
  droppedTotal = 0;
  /** The next socket write: each record's frame is encoded straight into it. */
  private readonly frames = new ProtoWriter(FRAMES_BYTES);
  /** Every record's identity and version fields, encoded once. */
  private readonly identity: Buffer;

  constructor(private readonly opts: OutputOptions) {
    this.identity = encodeIdentity(opts.identity);
  }

  /** Dials the collector and starts the error check; resolves with the dial error, if any. */
  async start(): Promise<Error | undefined> {
    this.checker = setInterval(() => this.errorCheck(), this.opts.errorCheckIntervalMs ?? ERROR_CHECK_INTERVAL_MS);
    this.checker.unref();
    return this.dial();
  }

  /**
   * Encodes one record into the next write; never blocks, never throws. The record's buffers are
   * read now and not kept, so the caller may reuse them once this returns.
   */
  tap(r: TapRecord): void {
    if (this.state !== 'ready' || this.pending + this.unsent >= this.opts.capacity) {
      this.dropped++;
      this.droppedTotal++;
      return;
    }
    writeTapFrame(this.frames, this.identity, r);
    this.pending++;
    if (this.scheduled || this.unsent > 0) return;
    if (this.pending >= FLUSH_RECORDS) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    } else if (this.flushTimer === undefined) {
      this.flushTimer = setTimeout(() => this.flush(), FLUSH_MS);
      this.flushTimer.unref();
    }
  }

  /** Writes what is queued, sends STOP and closes the connection; later records are dropped. */
  close(): void {
    if (this.state === 'ready' && this.unsent === 0 && this.pending > 0) this.flush();
    this.state = 'closed';
    if (this.checker) clearInterval(this.checker);
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const s = this.socket;
    this.socket = undefined;
    if (s && !s.destroyed) s.end(controlFrame(Control.STOP, []));
  }

  private errorCheck(): void {
    if (this.dropped > 0) {
      this.opts.log.warning(`Dropped dnstap messages: ${this.dropped}`);
      this.dropped = 0;
    }
    if (this.state === 'idle') void this.dial();
  }

  private flush(): void {
    this.scheduled = false;
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const s = this.socket;
    if (this.state !== 'ready' || s === undefined || this.pending === 0) return;
    const records = this.pending;
    this.pending = 0;
    if (s.write(this.frames.take())) return;
    // The collector is slow: wait for the socket to take this write; the next one absorbs (or drops).
    this.unsent = records;
    s.once('drain', () => {
      this.unsent = 0;
      if (this.pending > 0) this.flush();
    });
  }

  private dial(): Promise<Error | undefined> {
    if (this.state === 'closed') return Promise.resolve(undefined);
    this.state = 'dialing';
    const { network, address, skipVerify } = this.opts;
    const timeoutMs = this.opts.timeoutMs ?? TCP_TIMEOUT_MS;
    return new Promise((resolve) => {
      let s: Socket;
      if (network === 'unix') s = netConnect({ path: address });
      else {
        const i = address.lastIndexOf(':');
        const host = address.slice(0, i).replace(/^\[|\]$/g, '');
        const port = Number(address.slice(i + 1));
        s =
          network === 'tls'
            ? nodeTls().connect({ host, port, rejectUnauthorized: !skipVerify, servername: host })
            : netConnect({ host, port });
      }
      let settled = false;
      const fail = (err: Error): void => {
        if (settled) return;
        err = goDialError(network, address, err);
        settled = true;
        clearTimeout(timer);
        s.destroy();
        if (this.state !== 'closed') this.state = 'idle';
        resolve(err);
      };
      const timer = setTimeout(() => fail(new Error(`dial ${network} ${address}: i/o timeout`)), timeoutMs);
      timer.unref();
      s.once('error', fail);
      const reader = new FrameReader(
        () => fail(new Error('framestream: data frame during handshake')),
        (frame) => {
          if (settled) {
            // FINISH after our STOP, or anything else: the reader is done with us.
            return;
          }
          if (frame.type !== Control.ACCEPT || !frame.contentTypes.includes(CONTENT_TYPE)) {
            fail(new Error('framestream: content type not accepted'));
            return;
          }
          settled = true;
          clearTimeout(timer);
          s.write(controlFrame(Control.START, [CONTENT_TYPE]));
          this.adopt(s);
          resolve(undefined);
        },
      );
      s.on('data', (chunk: Buffer) => reader.push(chunk));
      s.once(network === 'tls' ? 'secureConnect' : 'connect', () => {
        s.write(controlFrame(Control.READY, [CONTENT_TYPE]));
      });
    });
  }

  /** The handshake is done: records flow until the connection breaks. */
  private adopt(s: Socket): void {
    if (this.state === 'closed') {
      s.end(controlFrame(Control.STOP, []));
      return;
    }
    this.socket = s;
    this.state = 'ready';
    s.setNoDelay(false);
    s.removeAllListeners('error');
    s.on('error', () => s.destroy());
    s.once('close', () => {
      if (this.socket !== s) return;
      this.socket = undefined;
      this.unsent = 0;
      if (this.state === 'closed') return;
      // Records still pending for the broken connection are lost, as CoreDNS's are; redial once
      // now (CoreDNS redials on the failed write), then on the error check.
      this.dropped += this.pending;
      this.droppedTotal += this.pending;
      this.pending = 0;
      // Drops what was encoded, and a buffer grown by a backlog with it.
      this.frames.take();
      this.state = 'idle';
      void this.dial();
    });
    if (this.pending > 0) this.flush();
  }
}
