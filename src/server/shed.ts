/**
 * Load shedding on a UDP listener socket (the `shed` directive, docs/plugins.md, shed): CoreDNS
 * 1.15.0's bounded, newest-first stack of fixed depth 1024 per socket, mapped onto one event loop.
 *
 * In CoreDNS the pile-up is on the write side (one goroutine per query, all writing through one
 * socket), so its stack holds responses. Here a query costs event-loop time before it has a
 * response, and what piles up under overload are the datagrams read but not yet served, and behind
 * them the kernel's receive queue, which is first-in first-out: a server that takes every datagram
 * in order answers each one later and later. So the stack holds received queries: a datagram read
 * is pushed (the oldest evicted when the stack is full, counted `reason="query"`), and the stack is
 * served newest first in short turns between reads, so the socket keeps being read (the kernel
 * queue stays short) and the time spent on a query goes to the freshest ones, which their clients
 * still wait for. A reply the socket cannot take (libuv's send queue at the same depth) is dropped
 * and counted `reason="response"`. Drops are silent: the client retries elsewhere.
 */
import type * as dgram from 'node:dgram';
import { performance } from 'node:perf_hooks';
import type { Counter } from 'prom-client';
import { counter } from '../metrics/registry.js';

/**
 * `coredns_shed_dropped_total`, registered by the first listener with `shed` (as CoreDNS's appears
 * only in builds with the plugin; a scrape without `shed` stays as it was).
 */
export function shedDropped(): Counter<'server' | 'reason'> {
  return counter({
    name: 'coredns_shed_dropped_total',
    help: 'Counter of queries and responses dropped, per server, by reason.',
    labelNames: ['server', 'reason'] as const,
  });
}

/** CoreDNS's fixed depth: a burst budget, not a knob. */
export const SHED_DEPTH = 1024;
/**
 * Queries one turn of the event loop serves before the sockets are read again, and the time it
 * may take (ms). libuv reads at most 32 datagrams per socket per turn: serving half that keeps
 * reading twice as fast as serving, so under overload the excess piles up here, where the newest
 * are served and the oldest evicted and counted, and not in the kernel's queue, where it would
 * make every answer late.
 */
const TURN_QUERIES = 16;
const TURN_MS = 0.25;
/**
 * Overload, and how old a query may be to be served then (ms). Newest-first serving answers fresh
 * queries under a steady overload, but whenever arrivals dip it reaches down the stack and answers
 * queries that waited there up to the stack's depth in time (some 20 ms at a whoami's rate), which
 * made the p99 of what shed answers at twice the saturating rate 4–6× its half-load p99. So, as
 * CoDel judges a queue (its 5 ms target, its 100 ms interval): once the stack has not emptied for
 * OVERLOAD_MS, a query that waited over STALE_MS is dropped (`reason="query"`) instead of served;
 * a burst the server clears within OVERLOAD_MS is served whole.
 */
const OVERLOAD_MS = 100;
const STALE_MS = 5;

/** One datagram waiting to be served. */
export interface ShedItem {
  readonly sock: dgram.Socket;
  readonly msg: Buffer;
  readonly address: string;
  readonly port: number;
  readonly family: 1 | 2;
  readonly localPort: number;
}

/** The stack of one listener's UDP sockets (shared by them: one event loop serves them all). */
export class ShedStack {
  private readonly ring: (ShedItem | undefined)[] = new Array<ShedItem | undefined>(SHED_DEPTH);
  /** When each waiting query was pushed (performance.now()). */
  private readonly pushedAt = new Float64Array(SHED_DEPTH);
  /** Since when the stack has held queries without emptying (0: it is empty). */
  private busySince = 0;
  /** Index of the next push; the `size` slots before it (mod depth) are occupied. */
  private next = 0;
  private size = 0;
  private scheduled = false;
  private readonly droppedQuery: { inc(): void };
  private readonly droppedResponse: { inc(): void };
  private readonly turn = (): void => this.drain();

  constructor(
    server: string,
    private readonly serve: (item: ShedItem) => void,
    /** A waiting query was dropped as stale (the listener counts it finished). */
    private readonly dropped: () => void,
    /** The clock (ms), performance.now() but in tests. */
    private readonly now: () => number = () => performance.now(),
  ) {
    // Both series exist from the start, as CoreDNS creates them with the socket.
    const m = shedDropped();
    this.droppedQuery = m.labels(server, 'query');
    this.droppedResponse = m.labels(server, 'response');
    m.labels(server, 'query').inc(0);
    m.labels(server, 'response').inc(0);
  }

  /** Queries waiting. */
  get pending(): number {
    return this.size;
  }

  /** Push a datagram read; true when the oldest waiting one was evicted for it. */
  push(item: ShedItem): boolean {
    const evicted = this.size === SHED_DEPTH;
    const now = this.now();
    if (evicted) this.droppedQuery.inc();
    else if (this.size++ === 0) this.busySince = now;
    this.ring[this.next] = item;
    this.pushedAt[this.next] = now;
    this.next = (this.next + 1) % SHED_DEPTH;
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.turn);
    }
    return evicted;
  }

  /** Send a reply unless the socket's send queue is at the stack's depth. */
  send(sock: dgram.Socket, reply: Buffer, port: number, address: string): void {
    if (sock.getSendQueueCount() >= SHED_DEPTH) {
      this.droppedResponse.inc();
      return;
    }
    sock.send(reply, port, address);
  }

  /** Serve the newest queries for one turn; come back after the next reads if any are left. */
  private drain(): void {
    this.scheduled = false;
    const start = this.now();
    const end = start + TURN_MS;
    const overloaded = start - this.busySince >= OVERLOAD_MS;
    let n = 0;
    while (this.size > 0) {
      this.next = (this.next - 1 + SHED_DEPTH) % SHED_DEPTH;
      const item = this.ring[this.next]!;
      this.ring[this.next] = undefined;
      this.size--;
      if (overloaded && start - this.pushedAt[this.next]! > STALE_MS) {
        this.droppedQuery.inc();
        this.dropped();
        continue;
      }
      this.serve(item);
      if (++n === TURN_QUERIES || ((n & 3) === 0 && this.now() >= end)) break;
    }
    if (this.size === 0) this.busySince = 0;
    if (this.size > 0 && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.turn);
    }
  }

  /** Drop what waits (the listener closes); returns how many were waiting. */
  clear(): number {
    const n = this.size;
    for (let i = 0; i < SHED_DEPTH; i++) this.ring[i] = undefined;
    this.size = 0;
    return n;
  }
}
