/**
 * `dnstap listen SOCKET` (CoreDNS 1.15.0 plugin/dnstap/listener.go): the server listens and dnstap
 * sinks connect to it. Each connection gets the writer's side of the bidirectional Frame Streams
 * handshake (READY, ACCEPT, START), then every record from then on. There is no queue: a sink that
 * does not keep up, or goes away, loses its connection, and the others go on (CoreDNS drops the
 * message for that sink and closes it).
 *
 * Two parts. `TapListener` is the socket and its sinks, one per endpoint for the process, kept
 * across reloads (`ctx.shared`: CoreDNS closes and reopens it, which here would race the new
 * configuration's bind against the old one's close). `ListenTap` is one `dnstap listen` occurrence:
 * it encodes the query path's records with its identity and version as they come, and hands the
 * frames to the listener in batches. In a query thread the frames go to
 * the main thread's listener over a BroadcastChannel named after the endpoint, since one socket
 * cannot be bound once per thread (docs/multicore.md).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { BroadcastChannel } from 'node:worker_threads';
import type { Logger } from '../log.js';
import { counter, gauge } from '../metrics/registry.js';
import { nodeTls } from '../util/require.js';
import { CONTENT_TYPE, Control, FrameReader, controlFrame } from './framestream.js';
import { encodeIdentity, writeTapFrame, type TapIdentity, type TapRecord } from './message.js';
import { ProtoWriter } from './protobuf.js';
import { FLUSH_MS, FLUSH_RECORDS, FRAMES_BYTES, TCP_TIMEOUT_MS, type TapSink } from './output.js';

export interface ListenOptions {
  network: 'unix' | 'tcp' | 'tls';
  /** A socket path for unix, `host:port` otherwise. */
  address: string;
  /** `tls CERT KEY [CA]` of a tls:// listener. */
  certFile?: string;
  keyFile?: string;
  caFile?: string;
  /** `skipverify`: a client certificate is checked only when given (with CA), not required. */
  skipVerify: boolean;
  log: Logger;
  /** How long a sink may take to ACCEPT (CoreDNS's tcpTimeout). */
  timeoutMs?: number;
  /** Sinks connected at once (those in the handshake included); default {@link MAX_SINKS}. */
  maxSinks?: number;
}

/**
 * Sinks one listener serves at once. CoreDNS 1.15.0 has no limit; each sink may hold up to
 * {@link MAX_PENDING_BYTES} of unread frames, so without one a crowd of sinks (or one reconnecting
 * in a loop without reading) could take the memory of the pod: 8 sinks hold at most 32 MiB. A
 * connection beyond the limit is closed at once, logged and counted (plugins/dnstap/README.md).
 */
export const MAX_SINKS = 8;

/** The listeners of this process (the main thread), for the sink gauge. */
const listeners = new Set<TapListener>();

/** The metrics of `dnstap listen` (clusterdns only: CoreDNS has none); registered by the first listener. */
function listenMetrics(): { refused: ReturnType<typeof counter<'endpoint'>> } {
  gauge({
    name: 'clusterdns_dnstap_listen_sinks',
    help: 'Gauge of dnstap sinks connected to a dnstap listen endpoint.',
    labelNames: ['endpoint'],
    collect() {
      this.reset();
      for (const l of listeners) this.inc({ endpoint: l.endpoint }, l.connected);
    },
  });
  const refused = counter({
    name: 'clusterdns_dnstap_listen_refused_total',
    help: 'Counter of dnstap sink connections closed because the listen endpoint had its maximum of sinks.',
    labelNames: ['endpoint'],
  });
  return { refused };
}

/**
 * Bytes a sink may have unread before it is dropped. CoreDNS drops a sink whose write does not
 * complete within 4 s; here writes never block, so the bound is on what waits in its buffer.
 */
const MAX_PENDING_BYTES = 4 * 1024 * 1024;

/** The BroadcastChannel a query thread's taps send their frames on. */
export function listenChannelName(network: string, address: string): string {
  return `clusterdns.dnstap.listen ${network}://${address}`;
}

/** Go's texts for the listen errors an operator meets (`listen unix /x: bind: address already in use`). */
function goListenError(network: string, address: string, err: Error): Error {
  let code = (err as NodeJS.ErrnoException).code;
  // libuv reports a unix socket in a missing directory as EACCES; Go (the kernel) says ENOENT.
  if (network === 'unix' && code === 'EACCES' && !existsSync(dirname(address))) code = 'ENOENT';
  const text: Record<string, string> = {
    EADDRINUSE: 'bind: address already in use',
    EACCES: 'bind: permission denied',
    EADDRNOTAVAIL: 'bind: cannot assign requested address',
    ENOENT: 'bind: no such file or directory',
  };
  const t = code !== undefined ? text[code] : undefined;
  return t === undefined ? err : new Error(`listen ${network === 'tls' ? 'tcp' : network} ${address}: ${t}`);
}

/** The listening socket of one endpoint and the sinks connected to it. */
export class TapListener {
  private server: Server | undefined;
  private readonly sinks = new Set<Socket>();
  private channel: BroadcastChannel | undefined;
  private closed = false;
  /** Connections in the handshake: they count toward the limit. */
  private handshaking = 0;
  private readonly metrics = listenMetrics();
  /** `network://address`, the metrics' label. */
  readonly endpoint: string;

  constructor(private readonly opts: ListenOptions) {
    this.endpoint = `${opts.network}://${opts.address}`;
  }

  /** Sinks that completed the handshake. */
  get connected(): number {
    return this.sinks.size;
  }

  /** Listens; resolves with the error that prevented it, if any (logged by the caller, as CoreDNS). */
  listen(): Promise<Error | undefined> {
    const { network, address, log } = this.opts;
    listeners.add(this);
    // Frames from the query threads' taps of this endpoint.
    this.channel = new BroadcastChannel(listenChannelName(network, address));
    this.channel.onmessage = (e: unknown) => {
      const data = (e as { data: unknown }).data;
      if (data instanceof Uint8Array) this.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    };
    this.channel.unref();
    let server: Server;
    if (network === 'tls') {
      if (!this.opts.certFile || !this.opts.keyFile) {
        log.warning('TLS listener requires cert and key files');
        return Promise.resolve(undefined);
      }
      try {
        const ca = this.opts.caFile ? readFileSync(this.opts.caFile) : undefined;
        server = nodeTls().createServer({
          cert: readFileSync(this.opts.certFile),
          key: readFileSync(this.opts.keyFile),
          ca,
          // With a CA, a client certificate is required and verified; with skipverify as well, only
          // verified when given (Go's RequireAndVerifyClientCert / VerifyClientCertIfGiven).
          requestCert: ca !== undefined,
          rejectUnauthorized: ca !== undefined && !this.opts.skipVerify,
        });
      } catch (e) {
        return Promise.resolve(e as Error);
      }
      server.on('secureConnection', (s: Socket) => this.handshake(s));
    } else {
      server = createServer((s) => this.handshake(s));
    }
    return new Promise((resolve) => {
      server.once('error', (e) => resolve(goListenError(network, address, e)));
      const ready = (): void => {
        server.removeAllListeners('error');
        server.on('error', (e) => log.warning(`Error accepting dnstap connection: ${e.message}`));
        this.server = server;
        if (this.closed) server.close();
        resolve(undefined);
      };
      if (network === 'unix') server.listen(address, ready);
      else {
        const i = address.lastIndexOf(':');
        const host = address.slice(0, i).replace(/^\[|\]$/g, '');
        server.listen(Number(address.slice(i + 1)), host === '' ? undefined : host, ready);
      }
    });
  }

  /** Frames for every connected sink; a sink that is too far behind is dropped. */
  write(frames: Buffer): void {
    for (const s of this.sinks) {
      if (s.writableLength > MAX_PENDING_BYTES) {
        this.drop(s);
        continue;
      }
      s.write(frames);
    }
  }

  /** Stops listening; every sink gets STOP and is closed. */
  close(): void {
    this.closed = true;
    listeners.delete(this);
    this.channel?.close();
    this.server?.close();
    for (const s of this.sinks) s.end(controlFrame(Control.STOP, []));
    this.sinks.clear();
  }

  private drop(s: Socket): void {
    this.sinks.delete(s);
    s.destroy();
  }

  /** The writer's handshake with a new sink: READY, its ACCEPT, START; then it gets records. */
  private handshake(s: Socket): void {
    if (this.closed) {
      s.destroy();
      return;
    }
    const max = this.opts.maxSinks ?? MAX_SINKS;
    if (this.sinks.size + this.handshaking >= max) {
      this.metrics.refused.inc({ endpoint: this.endpoint });
      const from = s.remoteAddress !== undefined ? ` from ${s.remoteAddress}:${s.remotePort ?? 0}` : '';
      this.opts.log.warning(`Refusing dnstap connection${from}: ${max} sinks connected to ${this.endpoint} already`);
      s.destroy();
      return;
    }
    this.handshaking++;
    let started = false;
    let counted = true;
    const settle = (): void => {
      if (counted) this.handshaking--;
      counted = false;
    };
    const fail = (why: string): void => {
      if (started) return;
      settle();
      clearTimeout(timer);
      this.opts.log.warning(`Error creating encoder for dnstap client: ${why}`);
      s.destroy();
    };
    const timer = setTimeout(() => fail('i/o timeout'), this.opts.timeoutMs ?? TCP_TIMEOUT_MS);
    timer.unref();
    s.on('error', () => {
      if (started) this.drop(s);
      else fail('connection reset');
    });
    s.once('close', () => {
      settle();
      this.sinks.delete(s);
    });
    const reader = new FrameReader(
      () => fail('framestream: data frame during handshake'),
      (frame) => {
        if (started) return; // FINISH after our STOP
        if (frame.type !== Control.ACCEPT || !frame.contentTypes.includes(CONTENT_TYPE)) {
          fail('content type mismatch');
          return;
        }
        started = true;
        settle();
        clearTimeout(timer);
        s.write(controlFrame(Control.START, [CONTENT_TYPE]));
        if (this.closed) s.end(controlFrame(Control.STOP, []));
        else this.sinks.add(s);
      },
    );
    s.on('data', (chunk: Buffer) => reader.push(chunk));
    s.write(controlFrame(Control.READY, [CONTENT_TYPE]));
  }
}

/** Where a `ListenTap` hands its frames: the listener (main thread) or the channel to it. */
export interface FrameTarget {
  write(frames: Buffer): void;
}

/** A query thread's way to the main thread's listener of `network://address`. */
export function threadRelay(network: string, address: string): FrameTarget & { close(): void } {
  const channel = new BroadcastChannel(listenChannelName(network, address));
  channel.unref();
  return {
    write: (frames) => channel.postMessage(frames),
    close: () => channel.close(),
  };
}

/** One `dnstap listen` occurrence: records encoded into frames, handed to its listener in batches. */
export class ListenTap implements TapSink {
  /** Records encoded into {@link frames} and not yet handed over. */
  private pending = 0;
  private scheduled = false;
  private flushTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The next batch of frames: each record's frame is encoded straight into it. */
  private readonly frames = new ProtoWriter(FRAMES_BYTES);
  /** Every record's identity and version fields, encoded once. */
  private readonly identityFields: Buffer;

  constructor(
    private readonly target: FrameTarget,
    identity: TapIdentity,
  ) {
    this.identityFields = encodeIdentity(identity);
  }

  /** The listener is started by whoever owns it (the shared resource); nothing to dial here. */
  start(): Promise<Error | undefined> {
    return Promise.resolve(undefined);
  }

  /** Encodes one record into the next batch; its buffers are not kept (as TapOutput's tap). */
  tap(r: TapRecord): void {
    if (this.closed) return;
    writeTapFrame(this.frames, this.identityFields, r);
    this.pending++;
    if (this.scheduled) return;
    // Handed over in batches, as TapOutput's (src/dnstap/output.ts): at FLUSH_RECORDS, else FLUSH_MS on.
    if (this.pending >= FLUSH_RECORDS) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    } else if (this.flushTimer === undefined) {
      this.flushTimer = setTimeout(() => this.flush(), FLUSH_MS);
      this.flushTimer.unref();
    }
  }

  /** Hands over what is pending; later records are dropped. */
  close(): void {
    this.flush();
    this.closed = true;
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
  }

  private flush(): void {
    this.scheduled = false;
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.closed || this.pending === 0) return;
    this.pending = 0;
    this.target.write(this.frames.take());
  }
}
