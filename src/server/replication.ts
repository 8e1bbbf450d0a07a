/**
 * Index replication between the main thread and the query threads (docs/multicore.md): a plugin
 * that keeps an index fed from the outside (the kubernetes watches) runs its watches only where
 * `role` is `source` (the main thread), publishes every change under a key, and where `role` is
 * `replica` (a query thread) subscribes to that key and follows the changes (the kubernetes
 * plugin sends the SharedArrayBuffer of its index and then the change keys of every update:
 * plugins/kubernetes/sharedindex.ts). The payloads are the plugin's own (structured-cloneable)
 * messages; this module only carries them, in order, per key.
 *
 * A subscriber first receives the offer's snapshot (the messages that rebuild the index as it is
 * now), then every message published after it, on the same port: nothing is lost or reordered.
 */
import type { MessagePort } from 'node:worker_threads';

export interface IndexReplication {
  readonly role: 'source' | 'replica';
  /**
   * source: make the index under `key` available; `snapshot` returns the messages that rebuild
   * it as it is at the moment of the call. Returns the withdrawal (the index was stopped).
   */
  offer(key: string, snapshot: () => unknown[]): () => void;
  /** source: one change of the index under `key`. */
  publish(key: string, message: unknown): void;
  /** replica: receive the snapshot, then the changes, of the index under `key`. Returns the unsubscribe. */
  subscribe(key: string, onMessage: (message: unknown) => void): () => void;
}

/** The wire between the main thread and one query thread. */
export type ReplicationWire =
  | { readonly t: 'sub'; readonly key: string }
  | { readonly t: 'unsub'; readonly key: string }
  | { readonly t: 'feed'; readonly key: string; readonly msgs: readonly unknown[] };

interface Peer {
  postMessage(msg: ReplicationWire): void;
}

/** The main thread's side: offers indexes to every query thread that subscribes. */
export class ReplicationHub implements IndexReplication {
  readonly role = 'source';
  private readonly offers = new Map<string, () => unknown[]>();
  private readonly subscribers = new Map<string, Set<Peer>>();

  offer(key: string, snapshot: () => unknown[]): () => void {
    this.offers.set(key, snapshot);
    const waiting = this.subscribers.get(key);
    if (waiting?.size) {
      const msgs = snapshot();
      for (const p of waiting) p.postMessage({ t: 'feed', key, msgs });
    }
    return () => {
      if (this.offers.get(key) === snapshot) this.offers.delete(key);
    };
  }

  publish(key: string, message: unknown): void {
    const subs = this.subscribers.get(key);
    // Before the offer a subscriber waits for the snapshot, which includes this change.
    if (!subs || !this.offers.has(key)) return;
    for (const p of subs) p.postMessage({ t: 'feed', key, msgs: [message] });
  }

  subscribe(): () => void {
    throw new Error('the main thread does not subscribe to replicated indexes');
  }

  /** A message from a query thread (`peer` answers it). */
  handle(peer: Peer, msg: ReplicationWire): void {
    if (msg.t === 'sub') {
      let subs = this.subscribers.get(msg.key);
      if (!subs) this.subscribers.set(msg.key, (subs = new Set()));
      if (subs.has(peer)) return;
      subs.add(peer);
      const snapshot = this.offers.get(msg.key);
      // Not offered yet (the main thread is still setting it up): the offer sends the snapshot.
      if (snapshot) peer.postMessage({ t: 'feed', key: msg.key, msgs: snapshot() });
    } else if (msg.t === 'unsub') {
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
export class ReplicaClient implements IndexReplication {
  readonly role = 'replica';
  private readonly handlers = new Map<string, Set<(m: unknown) => void>>();

  constructor(private readonly port: Pick<MessagePort, 'postMessage'>) {}

  offer(): () => void {
    throw new Error('a query thread does not offer indexes');
  }

  publish(): void {
    throw new Error('a query thread does not publish index changes');
  }

  subscribe(key: string, onMessage: (message: unknown) => void): () => void {
    let set = this.handlers.get(key);
    if (!set) this.handlers.set(key, (set = new Set()));
    set.add(onMessage);
    if (set.size === 1) this.port.postMessage({ t: 'sub', key } satisfies ReplicationWire);
    return () => {
      const s = this.handlers.get(key);
      if (!s?.delete(onMessage) || s.size > 0) return;
      this.handlers.delete(key);
      this.port.postMessage({ t: 'unsub', key } satisfies ReplicationWire);
    };
  }

  /** A `feed` message from the main thread. */
  handle(msg: ReplicationWire): void {
    if (msg.t !== 'feed') return;
    const set = this.handlers.get(msg.key);
    if (!set) return;
    for (const m of msg.msgs) for (const fn of set) fn(m);
  }
}
