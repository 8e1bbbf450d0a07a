/**
 * The index in its replica role (kubeindex.ts): a query thread's view of the main thread's index
 * (docs/multicore.md §2). It watches nothing: it subscribes to the source's replication channel
 * (indexfeed.ts) and reads the shared-memory copy through a {@link SharedIndexReader}.
 */
import type { ReplicationReplica } from '../../src/server/replication.js';
import { indexFeedChannel, type IndexFeed } from './indexfeed.js';
import type { KubeIndex } from './kubeindex.js';
import { SharedIndexReader } from './sharedindex.js';
import type { Kind } from './types.js';

export class KubeIndexReplica implements KubeIndex {
  readonly reader = new SharedIndexReader();
  /** The kinds the main thread watches (null until its snapshot came), and those it has listed. */
  private kinds: readonly Kind[] | null = null;
  private listed: readonly Kind[] = [];
  private unsubscribe: (() => void) | null = null;
  private stoppedFlag = false;

  constructor(
    private readonly replica: ReplicationReplica,
    /** The index's channel key (the same in every thread). */
    private readonly key: string,
  ) {}

  start(): void {
    if (this.stoppedFlag) return;
    this.unsubscribe ??= this.replica.subscribe(indexFeedChannel(this.key), (m) => this.apply(m));
  }

  get stopped(): boolean {
    return this.stoppedFlag;
  }

  /** Nothing to wait for: the subscription is made at once, the index follows as it comes. */
  whenStarted(): Promise<void> {
    return Promise.resolve();
  }

  private apply(m: IndexFeed): void {
    if (m.op === 'kinds') {
      this.kinds = m.kinds;
      return;
    }
    this.listed = m.listed;
    this.reader.apply(m.update);
  }

  synced(): boolean {
    return this.kinds !== null && this.kinds.every((k) => this.listed.includes(k));
  }

  notReadyReason(): string {
    return 'kubernetes: waiting for the index of the main thread';
  }

  stop(): Promise<void> {
    this.stoppedFlag = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    return Promise.resolve();
  }
}
