/**
 * The queries in flight on one connection to one server, keyed by message id: choosing a free
 * id, one timer per query, and finding the query a received reply claims to answer. Forward's
 * and shadow's UDP sockets keep theirs here (through `ExchangeSocket`, exchangesocket.ts).
 *
 * An entry is the owner's own object; the table only sets its `timer`, so that registering a
 * query costs no allocation beyond the owner's entry and the timer (the hot path of a cache miss).
 */
import { randomId } from './ids.js';

/** An owner's record of one query in flight; `timer` belongs to the table. */
export interface PendingExchange {
  timer: NodeJS.Timeout | undefined;
}

/** How a free message id is found. */
export interface IdChoice {
  /** Random ids (CSPRNG, `randomId`) tried before giving up or scanning. */
  readonly randomTries: number;
  /** After the random tries, take the lowest free id (false: report that none is free). */
  readonly scan: boolean;
}

export class PendingExchanges<P extends PendingExchange> {
  /** Insertion order is send order: `oldest()` relies on it. */
  private readonly byId = new Map<number, P>();

  constructor(
    private readonly ids: IdChoice,
    /** Called with a query whose timer fired, already removed from the table. */
    private readonly onTimeout: (p: P) => void,
    /** Unref the timers: a waiting query does not keep the process alive. */
    private readonly unrefTimers = false,
  ) {}

  get size(): number {
    return this.byId.size;
  }

  has(id: number): boolean {
    return this.byId.has(id);
  }

  /** A message id no query in flight uses, or -1 when none was found. */
  freeId(): number {
    for (let i = 0; i < this.ids.randomTries; i++) {
      const id = randomId();
      if (!this.byId.has(id)) return id;
    }
    if (this.ids.scan) for (let id = 0; id < 0x10000; id++) if (!this.byId.has(id)) return id;
    return -1;
  }

  /** Register `p` under `id` (from `freeId`) for at most `timeoutMs`. */
  add(id: number, p: P, timeoutMs: number): void {
    // The id rides as the timer's argument: no closure per query.
    const timer = setTimeout(this.expire, timeoutMs, id);
    if (this.unrefTimers) timer.unref();
    p.timer = timer;
    this.byId.set(id, p);
  }

  /** The query in flight with message id `id` (it stays registered). */
  get(id: number): P | undefined {
    return this.byId.get(id);
  }

  /** Remove `p`, found by `get(id)`, and stop its timer. */
  remove(id: number, p: P): void {
    this.byId.delete(id);
    clearTimeout(p.timer);
  }

  /** Remove query `id` and stop its timer; undefined when it is no longer in flight. */
  take(id: number): P | undefined {
    const p = this.byId.get(id);
    if (p === undefined) return undefined;
    this.byId.delete(id);
    clearTimeout(p.timer);
    return p;
  }

  /** The id of the query sent first among those in flight. */
  oldest(): number | undefined {
    const first = this.byId.keys().next();
    return first.done === true ? undefined : first.value;
  }

  /** Remove every query (timers stopped), in send order. */
  takeAll(): P[] {
    const all = [...this.byId.values()];
    this.byId.clear();
    for (const p of all) clearTimeout(p.timer);
    return all;
  }

  private readonly expire = (id: number): void => {
    const p = this.byId.get(id);
    if (p === undefined) return;
    this.byId.delete(id);
    this.onTimeout(p);
  };
}
