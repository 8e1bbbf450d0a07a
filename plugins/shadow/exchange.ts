/**
 * The shadow exchanges: copies of sampled client queries sent over UDP to the reference servers
 * (round robin), each with its own random id and timer, and the reference's reply handed to the
 * comparison. Nothing here runs on the client's path except `submit`, which only queues: the
 * queue is sent from a `setImmediate` callback, after the server has sent the client its reply.
 *
 * Bounds: at most `maxOutstanding` exchanges are queued or waiting for a reply (more are dropped
 * and counted); every exchange ends after `timeoutMs`; a reference reply larger than the buffer
 * size the query offered is rejected unread. A reference that is slow, dead or answers garbage
 * costs one timer or one rejected datagram per exchange, never more.
 */
import * as dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { isIP, isIPv6 } from 'node:net';
import { bareReplyRcode, Rcode } from '../../src/dns/constants.js';
import { randomId } from '../../src/dns/ids.js';
import { questionMismatch } from '../../src/dns/match.js';
import type { ParsedRequest } from '../../src/dns/wire.js';
import type { Logger } from '../../src/log.js';
import { Reply } from '../../src/query.js';
import { bareReply, finalizeReply } from '../../src/server/reply.js';
import type { Reference } from './setup.js';

/** A sampled query and the reply clusterdns wrote for it, captured on the client's path. */
export interface Sample {
  /** Copy of the client's query packet (its id is replaced by the shadow id when sent). */
  readonly raw: Buffer;
  readonly req: ParsedRequest;
  /** RCODE the chain returned. */
  readonly rcode: number;
  /** Copy of the reply the chain wrote (wire form, before the server fits it), or null. */
  readonly ours: Buffer | null;
}

/** Why an exchange ended without a reply to compare; `aborted`: the configuration was reloaded or the server stopped. */
export type FailReason = 'timeout' | 'refused' | 'send' | 'malformed' | 'aborted';

/** A reference reply that passed the checks, with the reply clusterdns sent, ids equal. */
export interface ShadowResult {
  readonly reference: Reference;
  readonly req: ParsedRequest;
  /** The query as sent to the reference. */
  readonly query: Buffer;
  readonly theirs: Buffer;
  readonly ours: Buffer;
}

export interface ExchangeHooks {
  /** A copy is being sent to a reference (every one ends in `reply` or `failed`). */
  sent(): void;
  /** A reply to compare (called from the socket's message event). */
  reply(r: ShadowResult): void;
  /** The exchange ended without a usable reply. */
  failed(reason: FailReason, ref: Reference, req: ParsedRequest, detail: string): void;
  /** A datagram from a reference that belongs to no outstanding exchange. */
  unexpected(): void;
}

interface Pending {
  readonly id: number;
  readonly req: ParsedRequest;
  readonly query: Buffer;
  /** Our reply as a UDP client of the same query gets it. */
  readonly ours: Buffer;
  /** Largest reply the query allowed. */
  readonly limit: number;
  readonly timer: NodeJS.Timeout;
}

/** Outstanding exchanges of every live client (the `clusterdns_shadow_outstanding` gauge). */
let totalOutstanding = 0;
export function outstandingTotal(): number {
  return totalOutstanding;
}

/** The reply a UDP client sending `s.raw` got from clusterdns (what dispatch would send). */
export function ourUdpReply(s: Sample): Buffer {
  if (s.ours === null) {
    return bareReply(s.raw, s.req.questionEnd, bareReplyRcode(s.rcode), s.req.edns);
  }
  try {
    return finalizeReply(new Reply(s.ours, null, 'shadow', true), s.req, 'udp');
  } catch {
    return bareReply(s.raw, s.req.questionEnd, Rcode.SERVFAIL, s.req.edns);
  }
}

/** Largest reply a query may get over UDP: 512, or the size its EDNS record offers. */
export function replyLimit(req: ParsedRequest): number {
  return req.edns ? Math.max(512, req.edns.udpSize) : 512;
}

class ReferenceSocket {
  private sock: dgram.Socket | null = null;
  /** Insertion order = send order: an ICMP refusal is charged to the oldest exchange. */
  readonly pending = new Map<number, Pending>();

  constructor(
    readonly ref: Reference,
    private readonly client: ShadowClient,
  ) {}

  async open(log: Logger): Promise<void> {
    let address = this.ref.host;
    if (isIP(address) === 0) {
      // A host name: resolved once, here, through the system resolver (getaddrinfo).
      try {
        address = (await lookup(address)).address;
      } catch (e) {
        log.error(`cannot resolve reference ${this.ref.label}: ${(e as Error).message}`);
        return;
      }
    }
    const sock = dgram.createSocket(isIPv6(address) ? 'udp6' : 'udp4');
    sock.on('message', (msg) => this.onMessage(msg));
    sock.on('error', (err: NodeJS.ErrnoException) => this.onError(err));
    try {
      await new Promise<void>((resolve, reject) => {
        sock.once('error', reject);
        // Node hands a failed connect (EINVAL, ENETUNREACH, …) to this callback, not to 'error'.
        sock.connect(this.ref.port, address, (err?: Error) => {
          sock.off('error', reject);
          if (err) reject(err);
          else resolve();
        });
      });
      this.sock = sock;
    } catch (e) {
      // Not fatal: the block serves as usual, every exchange with this reference counts as `send`.
      log.error(`cannot open a socket to reference ${this.ref.label}: ${(e as Error).message}`);
      try {
        sock.close();
      } catch {
        // already closed
      }
    }
  }

  close(): void {
    const left = [...this.pending.values()];
    this.pending.clear();
    for (const p of left) {
      clearTimeout(p.timer);
      this.client.release();
      this.client.hooks.failed('aborted', this.ref, p.req, 'shadow stopped (reload or shutdown)');
    }
    const s = this.sock;
    this.sock = null;
    if (s) {
      try {
        s.close();
      } catch {
        // already closed
      }
    }
  }

  send(s: Sample, ours: Buffer): void {
    this.client.hooks.sent();
    const sock = this.sock;
    if (!sock) {
      this.client.release();
      this.client.hooks.failed('send', this.ref, s.req, 'no socket');
      return;
    }
    let id = randomId();
    for (let i = 0; this.pending.has(id) && i < 8; i++) id = randomId();
    if (this.pending.has(id)) {
      this.client.release();
      this.client.hooks.failed('send', this.ref, s.req, 'no free message id');
      return;
    }
    const timer = setTimeout(
      () => this.settle(id, 'timeout', `no reply within ${this.client.timeoutMs}ms`),
      this.client.timeoutMs,
    );
    timer.unref();
    this.pending.set(id, { id, req: s.req, query: s.raw, ours, limit: replyLimit(s.req), timer });
    s.raw.writeUInt16BE(id, 0);
    try {
      sock.send(s.raw, (err) => {
        if (err) this.settle(id, 'send', err.message);
      });
    } catch (e) {
      this.settle(id, 'send', (e as Error).message);
    }
  }

  /** End exchange `id` without a reply, if it is still waiting. */
  private settle(id: number, reason: FailReason, detail: string): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    this.client.release();
    this.client.hooks.failed(reason, this.ref, p.req, detail);
  }

  private onError(err: NodeJS.ErrnoException): void {
    // On a connected UDP socket the kernel reports an ICMP error for an earlier datagram as a
    // receive error: charge it to the oldest exchange still waiting.
    const oldest = this.pending.keys().next();
    if (oldest.done) return;
    this.settle(oldest.value, err.code === 'ECONNREFUSED' ? 'refused' : 'send', err.message);
  }

  private onMessage(msg: Buffer): void {
    if (msg.length < 12) {
      this.client.hooks.unexpected();
      return;
    }
    const id = msg.readUInt16BE(0);
    const p = this.pending.get(id);
    if (!p) {
      this.client.hooks.unexpected();
      return;
    }
    this.pending.delete(id);
    clearTimeout(p.timer);
    this.client.release();
    if (msg.length > p.limit) {
      this.client.hooks.failed(
        'malformed',
        this.ref,
        p.req,
        `reply of ${msg.length} bytes exceeds the query's buffer size ${p.limit}`,
      );
      return;
    }
    const bad = questionMismatch(msg, p.req);
    if (bad !== null) {
      this.client.hooks.failed('malformed', this.ref, p.req, bad);
      return;
    }
    msg.writeUInt16BE(p.req.id, 0);
    this.client.hooks.reply({ reference: this.ref, req: p.req, query: p.query, theirs: msg, ours: p.ours });
  }
}

export interface ShadowClientOptions {
  readonly references: readonly Reference[];
  readonly timeoutMs: number;
  readonly maxOutstanding: number;
}

export class ShadowClient {
  private readonly sockets: ReferenceSocket[];
  private queue: Sample[] = [];
  private flushing = false;
  private next = 0;
  private outstanding = 0;
  private started = false;
  readonly timeoutMs: number;
  private readonly maxOutstanding: number;

  constructor(
    opts: ShadowClientOptions,
    readonly hooks: ExchangeHooks,
  ) {
    this.sockets = opts.references.map((r) => new ReferenceSocket(r, this));
    this.timeoutMs = opts.timeoutMs;
    this.maxOutstanding = opts.maxOutstanding;
  }

  async start(log: Logger): Promise<void> {
    await Promise.all(this.sockets.map((s) => s.open(log)));
    this.started = true;
  }

  stop(): void {
    this.started = false;
    for (const s of this.sockets) s.close();
    for (let i = 0; i < this.queue.length; i++) this.release();
    this.queue = [];
  }

  /** Exchanges queued or waiting for a reply. */
  get inFlight(): number {
    return this.outstanding;
  }

  /** Room for one more exchange? Reserves it when there is. */
  reserve(): boolean {
    if (!this.started || this.outstanding >= this.maxOutstanding) return false;
    this.outstanding++;
    totalOutstanding++;
    return true;
  }

  release(): void {
    this.outstanding--;
    totalOutstanding--;
  }

  /** Queue a sample whose slot was reserved; it is sent after the current I/O callbacks. */
  submit(s: Sample): void {
    this.queue.push(s);
    if (!this.flushing) {
      this.flushing = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.flushing = false;
    const q = this.queue;
    this.queue = [];
    for (const s of q) {
      if (!this.started) {
        this.release();
        continue;
      }
      const sock = this.sockets[this.next]!;
      this.next = (this.next + 1) % this.sockets.length;
      let ours: Buffer;
      try {
        ours = ourUdpReply(s);
      } catch {
        this.release();
        continue;
      }
      sock.send(s, ours);
    }
  };
}
