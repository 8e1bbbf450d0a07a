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
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { bareReplyRcode, Rcode } from '../../src/dns/constants.js';
import { type ExchangeFailure, ExchangeSocket } from '../../src/dns/exchangesocket.js';
import { questionMismatch } from '../../src/dns/match.js';
import type { PendingExchange } from '../../src/dns/pendingexchanges.js';
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

interface Pending extends PendingExchange {
  readonly req: ParsedRequest;
  readonly query: Buffer;
  /** Our reply as a UDP client of the same query gets it. */
  readonly ours: Buffer;
  /** Largest reply the query allowed. */
  readonly limit: number;
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

/** 9 random ids, then give up (the exchange counts as `send`); free ids are never scanned for. */
const IDS = { randomTries: 9, scan: false } as const;

const STOPPED = 'shadow stopped (reload or shutdown)';

/** The reason and detail an exchange that ended without a reply is counted and logged with. */
function failure(why: ExchangeFailure, err: Error | null, timeoutMs: number): [FailReason, string] {
  switch (why) {
    case 'timeout':
      return ['timeout', `no reply within ${timeoutMs}ms`];
    case 'closed':
      return ['aborted', STOPPED];
    case 'icmp':
      return [(err as NodeJS.ErrnoException).code === 'ECONNREFUSED' ? 'refused' : 'send', err!.message];
    case 'send':
    case 'dial':
      return ['send', err!.message];
  }
}

class ReferenceSocket {
  private conn: ExchangeSocket<Pending> | null = null;

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
    const conn = new ExchangeSocket<Pending>({
      host: address,
      port: this.ref.port,
      sourceAddress: null,
      ids: IDS,
      unrefTimers: true,
      // On a connected UDP socket the kernel reports an ICMP error for an earlier datagram as a
      // receive error: charge it to the oldest exchange still waiting.
      socketErrors: 'fail-oldest',
      // Every reply with a waiting id ends its exchange; `answered` judges it (malformed or not).
      unmatched: () => this.client.hooks.unexpected(),
      answered: (p, msg) => this.answered(p, msg),
      failed: (p, why, err) => {
        this.client.release();
        const [reason, detail] = failure(why, err, this.client.timeoutMs);
        this.client.hooks.failed(reason, this.ref, p.req, detail);
      },
    });
    try {
      await conn.ready;
      this.conn = conn;
    } catch (e) {
      // Not fatal: the block serves as usual, every exchange with this reference counts as `send`.
      // The socket closed itself.
      log.error(`cannot open a socket to reference ${this.ref.label}: ${(e as Error).message}`);
    }
  }

  /** Abort the exchanges still waiting and close the socket. */
  close(): void {
    const conn = this.conn;
    this.conn = null;
    conn?.close('closed', null);
  }

  send(s: Sample, ours: Buffer): void {
    this.client.hooks.sent();
    const conn = this.conn;
    if (!conn) {
      this.client.release();
      this.client.hooks.failed('send', this.ref, s.req, 'no socket');
      return;
    }
    const id = conn.pending.freeId();
    if (id < 0) {
      this.client.release();
      this.client.hooks.failed('send', this.ref, s.req, 'no free message id');
      return;
    }
    const p: Pending = { req: s.req, query: s.raw, ours, limit: replyLimit(s.req), timer: undefined };
    conn.send(id, p, s.raw, this.client.timeoutMs);
  }

  private answered(p: Pending, msg: Buffer): void {
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
