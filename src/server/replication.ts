/**
 * Index replication between the main thread and the query threads (docs/multicore.md): a plugin
 * that keeps an index fed from the outside (the kubernetes watches) runs its watches only in the
 * main thread, the {@link ReplicationSource}, which offers the index on a channel and publishes
 * every change on it; a query thread, the {@link ReplicationReplica}, subscribes to the channel and
 * follows the changes (the kubernetes plugin sends the SharedArrayBuffer of its index and then the
 * change keys of every update: plugins/kubernetes/sharedindex.ts). Each role is its own type, with
 * only the calls that role makes: a plugin asks `replication.role` once and gets the other calls
 * from the narrowed type.
 *
 * The payloads are the plugin's own structured-cloneable messages, typed by its
 * {@link ReplicationChannel}; this module carries them, in order, per key, and a replica checks
 * each one with the channel's `parse` where it arrives. A subscriber first receives the offer's
 * snapshot (the messages that rebuild the index as it is now), then every message published after
 * it, on the same port: nothing is lost or reordered.
 *
 * The other way, a replica may `ask` the source something (the secondary plugin's NOTIFY received
 * by a query thread: only the main thread pulls zones). An ask goes to the current offer of its key,
 * checked by the channel's `parseAsk`; without an offer (or a `parseAsk`) it is dropped. A
 * `request` is an ask with an answer (the dynupdate plugin's UPDATE received by a query thread:
 * only the main thread changes the zone): the offer's `onRequest` answers it, checked by the
 * channel's `parseReply` where it arrives; without an offer the request fails.
 *
 * A source that must know when every thread has applied a change (dynupdate holds an UPDATE's
 * reply until then) publishes it with `publishApplied`: each subscribed thread acknowledges the
 * message after its handlers ran, and the promise resolves when the last one did (or ended).
 *
 * Every subscription gets the snapshot, also a second one of the same key in the same thread (a
 * reload's new configuration subscribes while the old one still is): the snapshot is addressed to
 * that subscription alone, later changes go to all of them.
 */
import type { MessagePort } from 'node:worker_threads';

/** One replicated index: its key, and the type of its messages with the check of one that arrives. */
export interface ReplicationChannel<M, A = never, R = never> {
  /** Names the index (the same in every thread: derived from the configuration). */
  readonly key: string;
  /** A message as it arrives in a query thread (a structured clone), checked; throws when it is not an M. */
  parse(message: unknown): M;
  /** An ask from a query thread as it arrives in the main thread, checked; throws when it is not one. */
  parseAsk?(message: unknown): A;
  /** The answer to a request as it arrives in the query thread, checked; throws when it is not an R. */
  parseReply?(message: unknown): R;
}

/** An index offered by the main thread. */
export interface Offer<M> {
  /** One change of the index, to every subscribed thread. */
  publish(message: M): void;
  /**
   * As `publish`; resolves once every thread subscribed at the call has applied the message (its
   * handlers returned) or ended. At once when none is subscribed or the offer is not current.
   */
  publishApplied(message: M): Promise<void>;
  /** The index was stopped: no more snapshots or changes (a later publish is dropped). */
  withdraw(): void;
}

/** The main thread's role. */
export interface ReplicationSource {
  readonly role: 'source';
  /** Make the index on `channel` available; `snapshot` returns the messages that rebuild it as it is at the moment of the call. */
  offer<M, A = never, R = never>(
    channel: ReplicationChannel<M, A, R>,
    snapshot: () => readonly M[],
    onAsk?: (message: A) => void,
    onRequest?: (message: A) => R | Promise<R>,
  ): Offer<M>;
}

/** A query thread's role. */
export interface ReplicationReplica {
  readonly role: 'replica';
  /** Receive the snapshot, then the changes, of the index on `channel`. Returns the unsubscribe. */
  subscribe<M, A = never, R = never>(channel: ReplicationChannel<M, A, R>, onMessage: (message: M) => void): () => void;
  /** Send `message` to the main thread's offer on `channel` (dropped when there is none). */
  ask<M, A, R = never>(channel: ReplicationChannel<M, A, R>, message: A): void;
  /**
   * Send `message` to the main thread's offer on `channel` and get its answer; rejects when the
   * main thread has no offer that answers requests, or its answer failed.
   */
  request<M, A, R>(channel: ReplicationChannel<M, A, R>, message: A): Promise<R>;
}

/** What a plugin is given when the process runs query threads (ProcessState.replication). */
export type IndexReplication = ReplicationSource | ReplicationReplica;

/** The wire between the main thread and one query thread (carried inside ToThread / FromThread). */
export type ReplicationWire =
  /** A subscription (`id`: the thread's number for it, which its snapshot is addressed to). */
  | { readonly t: 'sub'; readonly key: string; readonly id: number }
  | { readonly t: 'unsub'; readonly key: string }
  | { readonly t: 'ask'; readonly key: string; readonly msg: unknown }
  | { readonly t: 'req'; readonly key: string; readonly id: number; readonly msg: unknown }
  /** The thread applied the feed that carried `ack`. */
  | { readonly t: 'applied'; readonly ack: number }
  /** Messages of a key: to the one subscription `to` (its snapshot) or to all; `ack`: acknowledge. */
  | {
      readonly t: 'feed';
      readonly key: string;
      readonly msgs: readonly unknown[];
      readonly to?: number;
      readonly ack?: number;
    }
  /** The answer to request `id`: `msg` when ok, else the error's text. */
  | { readonly t: 'res'; readonly id: number; readonly ok: boolean; readonly msg: unknown };

/** What the main thread sends a query thread on the replication's behalf. */
export type ReplicationToThread = Extract<ReplicationWire, { t: 'feed' | 'res' }>;
/** What a query thread sends the main thread on the replication's behalf. */
export type ReplicationFromThread = Extract<ReplicationWire, { t: 'sub' | 'unsub' | 'ask' | 'req' | 'applied' }>;

/** A query thread as the hub sees it: where its feed goes. */
interface Peer {
  postMessage(msg: ReplicationToThread): void;
}

/** One offer's entry in the hub. */
interface OfferEntry {
  readonly snapshot: () => readonly unknown[];
  readonly ask?: (m: unknown) => void;
  readonly request?: (m: unknown) => unknown;
}

/** The main thread's side: offers indexes to every query thread that subscribes. */
export class ReplicationHub implements ReplicationSource {
  readonly role = 'source';
  /**
   * The offers of each key, the current one last (an object per offer: a withdrawal removes its
   * own only). A reload's new configuration offers the key again while the old one still does;
   * when the new one is withdrawn first (its start failed), the old one is current again.
   */
  private readonly offerLists = new Map<string, OfferEntry[]>();
  private readonly subscribers = new Map<string, Set<Peer>>();
  /** publishApplied's messages not yet applied by every thread: the threads still to answer. */
  private readonly unapplied = new Map<
    number,
    { readonly key: string; readonly peers: Set<Peer>; readonly done: () => void }
  >();
  private nextAck = 1;

  offer<M, A = never, R = never>(
    channel: ReplicationChannel<M, A, R>,
    snapshot: () => readonly M[],
    onAsk?: (message: A) => void,
    onRequest?: (message: A) => R | Promise<R>,
  ): Offer<M> {
    const key = channel.key;
    const parseAsk = channel.parseAsk;
    const entry: OfferEntry = {
      snapshot,
      ...(onAsk !== undefined && parseAsk !== undefined
        ? { ask: (m: unknown) => onAsk(parseAsk.call(channel, m)) }
        : {}),
      ...(onRequest !== undefined && parseAsk !== undefined
        ? { request: (m: unknown) => onRequest(parseAsk.call(channel, m)) }
        : {}),
    };
    let list = this.offerLists.get(key);
    if (!list) this.offerLists.set(key, (list = []));
    list.push(entry);
    this.sendSnapshot(key, entry);
    // Only the current offer of a key publishes: a withdrawn one (or one replaced by a new offer
    // of the same key) would send changes of an index nobody subscribed to.
    const current = (): boolean => this.offers(key) === entry;
    return {
      publish: (message) => {
        const subs = this.subscribers.get(key);
        if (!subs || !current()) return;
        for (const p of subs) p.postMessage({ t: 'feed', key, msgs: [message] });
      },
      publishApplied: (message) => {
        const subs = this.subscribers.get(key);
        if (!subs?.size || !current()) return Promise.resolve();
        const ack = this.nextAck++;
        const peers = new Set(subs);
        return new Promise<void>((resolve) => {
          this.unapplied.set(ack, { key, peers, done: resolve });
          for (const p of peers) p.postMessage({ t: 'feed', key, msgs: [message], ack });
        });
      },
      withdraw: () => {
        const l = this.offerLists.get(key);
        const i = l?.indexOf(entry) ?? -1;
        if (l === undefined || i < 0) return;
        const wasCurrent = current();
        l.splice(i, 1);
        if (l.length === 0) this.offerLists.delete(key);
        const now = this.offers(key);
        if (wasCurrent && now !== undefined) this.sendSnapshot(key, now);
      },
    };
  }

  /** The current offer of a key. */
  private offers(key: string): OfferEntry | undefined {
    return this.offerLists.get(key)?.at(-1);
  }

  /** A new current offer: every subscriber rebuilds the index from its snapshot. */
  private sendSnapshot(key: string, entry: OfferEntry): void {
    const waiting = this.subscribers.get(key);
    if (!waiting?.size) return;
    const msgs = entry.snapshot();
    for (const p of waiting) p.postMessage({ t: 'feed', key, msgs });
  }

  /** A `sub`, `unsub`, `ask`, `req` or `applied` from a query thread (`peer` answers it). */
  handle(peer: Peer, msg: ReplicationFromThread): void {
    switch (msg.t) {
      case 'ask':
        // The offer's channel checks the message (it throws on a bug: both sides run one build).
        this.offers(msg.key)?.ask?.(msg.msg);
        return;
      case 'req':
        this.request(peer, msg);
        return;
      case 'applied':
        this.applied(peer, msg.ack);
        return;
      case 'sub': {
        let subs = this.subscribers.get(msg.key);
        if (!subs) this.subscribers.set(msg.key, (subs = new Set()));
        subs.add(peer);
        const offered = this.offers(msg.key);
        // Not offered yet (the main thread is still setting it up): the offer sends the snapshot.
        if (offered) peer.postMessage({ t: 'feed', key: msg.key, msgs: offered.snapshot(), to: msg.id });
        return;
      }
      case 'unsub':
        this.subscribers.get(msg.key)?.delete(peer);
        // Only that key's changes: the thread still has to apply those of the keys it follows.
        this.appliedAll(peer, msg.key);
        return;
    }
  }

  private request(peer: Peer, msg: Extract<ReplicationWire, { t: 'req' }>): void {
    const answer = this.offers(msg.key)?.request;
    const fail = (e: unknown): void =>
      peer.postMessage({ t: 'res', id: msg.id, ok: false, msg: e instanceof Error ? e.message : String(e) });
    if (answer === undefined) {
      fail(`no answer for ${msg.key} in the main thread`);
      return;
    }
    let out: unknown;
    try {
      out = answer(msg.msg);
    } catch (e) {
      fail(e);
      return;
    }
    void Promise.resolve(out).then((r) => peer.postMessage({ t: 'res', id: msg.id, ok: true, msg: r }), fail);
  }

  private applied(peer: Peer, ack: number): void {
    const u = this.unapplied.get(ack);
    if (u === undefined || !u.peers.delete(peer) || u.peers.size > 0) return;
    this.unapplied.delete(ack);
    u.done();
  }

  /** The peer will acknowledge nothing more: of `key` (it left that channel), or at all (it ended). */
  private appliedAll(peer: Peer, key?: string): void {
    for (const [ack, u] of [...this.unapplied]) if (key === undefined || u.key === key) this.applied(peer, ack);
  }

  /** A query thread ended: forget its subscriptions. */
  forget(peer: Peer): void {
    for (const subs of this.subscribers.values()) subs.delete(peer);
    this.appliedAll(peer);
  }

  /** Subscriptions per key (tests, docs/multicore.md). */
  subscriberCount(key: string): number {
    return this.subscribers.get(key)?.size ?? 0;
  }
}

/** A query thread's side, on the port to the main thread. */
export class ReplicaClient implements ReplicationReplica {
  readonly role = 'replica';
  /** Per key, the subscriptions by their number. */
  private readonly handlers = new Map<string, Map<number, (m: unknown) => void>>();
  private nextSub = 1;
  private readonly requests = new Map<number, { resolve: (m: unknown) => void; reject: (e: Error) => void }>();
  private nextRequest = 1;

  constructor(private readonly port: Pick<MessagePort, 'postMessage'>) {}

  subscribe<M, A = never, R = never>(
    channel: ReplicationChannel<M, A, R>,
    onMessage: (message: M) => void,
  ): () => void {
    const key = channel.key;
    // Each message is checked once, here, before the plugin sees it.
    const handler = (m: unknown): void => onMessage(channel.parse(m));
    let subs = this.handlers.get(key);
    if (!subs) this.handlers.set(key, (subs = new Map()));
    const id = this.nextSub++;
    subs.set(id, handler);
    this.port.postMessage({ t: 'sub', key, id } satisfies ReplicationWire);
    return () => {
      const s = this.handlers.get(key);
      if (!s?.delete(id) || s.size > 0) return;
      this.handlers.delete(key);
      this.port.postMessage({ t: 'unsub', key } satisfies ReplicationWire);
    };
  }

  ask<M, A, R = never>(channel: ReplicationChannel<M, A, R>, message: A): void {
    this.port.postMessage({ t: 'ask', key: channel.key, msg: message } satisfies ReplicationWire);
  }

  request<M, A, R>(channel: ReplicationChannel<M, A, R>, message: A): Promise<R> {
    const parse = channel.parseReply;
    if (parse === undefined) return Promise.reject(new Error(`${channel.key} has no replies`));
    const id = this.nextRequest++;
    return new Promise<R>((resolve, reject) => {
      this.requests.set(id, {
        resolve: (m) => {
          try {
            resolve(parse.call(channel, m));
          } catch (e) {
            reject(e as Error);
          }
        },
        reject,
      });
      this.port.postMessage({ t: 'req', key: channel.key, id, msg: message } satisfies ReplicationWire);
    });
  }

  /** A `feed` or `res` message from the main thread. */
  handle(msg: ReplicationToThread): void {
    if (msg.t === 'res') {
      const r = this.requests.get(msg.id);
      if (r === undefined) return;
      this.requests.delete(msg.id);
      if (msg.ok) r.resolve(msg.msg);
      else r.reject(new Error(String(msg.msg)));
      return;
    }
    const subs = this.handlers.get(msg.key);
    if (subs) {
      if (msg.to !== undefined) {
        const fn = subs.get(msg.to);
        if (fn) for (const m of msg.msgs) fn(m);
      } else {
        for (const m of msg.msgs) for (const fn of subs.values()) fn(m);
      }
    }
    // After the handlers returned: the change is in this thread's copy.
    if (msg.ack !== undefined) this.port.postMessage({ t: 'applied', ack: msg.ack } satisfies ReplicationWire);
  }
}
