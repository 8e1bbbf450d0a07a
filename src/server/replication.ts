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
 * checked by the channel's `parseAsk`; without an offer (or a `parseAsk`) it is dropped.
 */
import type { MessagePort } from 'node:worker_threads';

/** One replicated index: its key, and the type of its messages with the check of one that arrives. */
export interface ReplicationChannel<M, A = never> {
  /** Names the index (the same in every thread: derived from the configuration). */
  readonly key: string;
  /** A message as it arrives in a query thread (a structured clone), checked; throws when it is not an M. */
  parse(message: unknown): M;
  /** An ask from a query thread as it arrives in the main thread, checked; throws when it is not one. */
  parseAsk?(message: unknown): A;
}

/** An index offered by the main thread. */
export interface Offer<M> {
  /** One change of the index, to every subscribed thread. */
  publish(message: M): void;
  /** The index was stopped: no more snapshots or changes (a later publish is dropped). */
  withdraw(): void;
}

/** The main thread's role. */
export interface ReplicationSource {
  readonly role: 'source';
  /** Make the index on `channel` available; `snapshot` returns the messages that rebuild it as it is at the moment of the call. */
  offer<M, A = never>(
    channel: ReplicationChannel<M, A>,
    snapshot: () => readonly M[],
    onAsk?: (message: A) => void,
  ): Offer<M>;
}

/** A query thread's role. */
export interface ReplicationReplica {
  readonly role: 'replica';
  /** Receive the snapshot, then the changes, of the index on `channel`. Returns the unsubscribe. */
  subscribe<M, A = never>(channel: ReplicationChannel<M, A>, onMessage: (message: M) => void): () => void;
  /** Send `message` to the main thread's offer on `channel` (dropped when there is none). */
  ask<M, A>(channel: ReplicationChannel<M, A>, message: A): void;
}

/** What a plugin is given when the process runs query threads (ProcessState.replication). */
export type IndexReplication = ReplicationSource | ReplicationReplica;

/** The wire between the main thread and one query thread (carried inside ToThread / FromThread). */
export type ReplicationWire =
  | { readonly t: 'sub'; readonly key: string }
  | { readonly t: 'unsub'; readonly key: string }
  | { readonly t: 'ask'; readonly key: string; readonly msg: unknown }
  | { readonly t: 'feed'; readonly key: string; readonly msgs: readonly unknown[] };

/** A query thread as the hub sees it: where its feed goes. */
interface Peer {
  postMessage(msg: Extract<ReplicationWire, { t: 'feed' }>): void;
}

/** The main thread's side: offers indexes to every query thread that subscribes. */
export class ReplicationHub implements ReplicationSource {
  readonly role = 'source';
  /** The current offer of each key (an object per offer: a withdrawal removes its own only). */
  private readonly offers = new Map<
    string,
    { readonly snapshot: () => readonly unknown[]; readonly ask?: (m: unknown) => void }
  >();
  private readonly subscribers = new Map<string, Set<Peer>>();

  offer<M, A = never>(
    channel: ReplicationChannel<M, A>,
    snapshot: () => readonly M[],
    onAsk?: (message: A) => void,
  ): Offer<M> {
    const key = channel.key;
    const parseAsk = channel.parseAsk;
    const entry =
      onAsk !== undefined && parseAsk !== undefined
        ? { snapshot, ask: (m: unknown) => onAsk(parseAsk.call(channel, m)) }
        : { snapshot };
    this.offers.set(key, entry);
    const waiting = this.subscribers.get(key);
    if (waiting?.size) {
      const msgs = snapshot();
      for (const p of waiting) p.postMessage({ t: 'feed', key, msgs });
    }
    // Only the current offer of a key publishes: a withdrawn one (or one replaced by a new offer
    // of the same key) would send changes of an index nobody subscribed to.
    const current = (): boolean => this.offers.get(key) === entry;
    return {
      publish: (message) => {
        const subs = this.subscribers.get(key);
        if (!subs || !current()) return;
        for (const p of subs) p.postMessage({ t: 'feed', key, msgs: [message] });
      },
      withdraw: () => {
        if (current()) this.offers.delete(key);
      },
    };
  }

  /** A `sub`, `unsub` or `ask` from a query thread (`peer` answers it). */
  handle(peer: Peer, msg: Extract<ReplicationWire, { t: 'sub' | 'unsub' | 'ask' }>): void {
    if (msg.t === 'ask') {
      // The offer's channel checks the message (it throws on a bug: both sides run one build).
      this.offers.get(msg.key)?.ask?.(msg.msg);
      return;
    }
    if (msg.t === 'sub') {
      let subs = this.subscribers.get(msg.key);
      if (!subs) this.subscribers.set(msg.key, (subs = new Set()));
      if (subs.has(peer)) return;
      subs.add(peer);
      const offered = this.offers.get(msg.key);
      // Not offered yet (the main thread is still setting it up): the offer sends the snapshot.
      if (offered) peer.postMessage({ t: 'feed', key: msg.key, msgs: offered.snapshot() });
    } else {
      this.subscribers.get(msg.key)?.delete(peer);
    }
  }

  /** A query thread ended: forget its subscriptions. */
  forget(peer: Peer): void {
    for (const subs of this.subscribers.values()) subs.delete(peer);
  }

  /** Subscriptions per key (tests, docs/multicore.md). */
  subscriberCount(key: string): number {
    return this.subscribers.get(key)?.size ?? 0;
  }
}

/** A query thread's side, on the port to the main thread. */
export class ReplicaClient implements ReplicationReplica {
  readonly role = 'replica';
  private readonly handlers = new Map<string, Set<(m: unknown) => void>>();

  constructor(private readonly port: Pick<MessagePort, 'postMessage'>) {}

  subscribe<M, A = never>(channel: ReplicationChannel<M, A>, onMessage: (message: M) => void): () => void {
    const key = channel.key;
    // Each message is checked once, here, before the plugin sees it.
    const handler = (m: unknown): void => onMessage(channel.parse(m));
    let set = this.handlers.get(key);
    if (!set) this.handlers.set(key, (set = new Set()));
    set.add(handler);
    if (set.size === 1) this.port.postMessage({ t: 'sub', key } satisfies ReplicationWire);
    return () => {
      const s = this.handlers.get(key);
      if (!s?.delete(handler) || s.size > 0) return;
      this.handlers.delete(key);
      this.port.postMessage({ t: 'unsub', key } satisfies ReplicationWire);
    };
  }

  ask<M, A>(channel: ReplicationChannel<M, A>, message: A): void {
    this.port.postMessage({ t: 'ask', key: channel.key, msg: message } satisfies ReplicationWire);
  }

  /** A `feed` message from the main thread. */
  handle(msg: Extract<ReplicationWire, { t: 'feed' }>): void {
    const set = this.handlers.get(msg.key);
    if (!set) return;
    for (const m of msg.msgs) for (const fn of set) fn(m);
  }
}
