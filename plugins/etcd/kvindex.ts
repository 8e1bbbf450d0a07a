/**
 * The etcd index a server block's etcd plugin reads, in its two roles (docs/multicore.md §2): the
 * source (kvsource.ts: the list and watch, in the main thread or in a process without query
 * threads) or a query thread's replica, which watches nothing and reads the source's shared table
 * from the generation the main thread last sent.
 */
import type { Logger } from '../../src/log.js';
import type { IndexReplication } from '../../src/server/replication.js';
import { SharedTableReader } from '../../src/util/sharedtable.js';
import { EtcdClient, type ClientOptions } from './client.js';
import { KvSource } from './kvsource.js';
import { KvView, parseTableFeed } from './kvtable.js';

export interface EtcdIndex {
  readonly view: KvView;
  /**
   * Start following etcd. The source lists (resolving after the first attempt; the server does not
   * wait for it, as CoreDNS does not wait for etcd); a replica subscribes and resolves once it has
   * the main thread's table, so a query thread never serves before it can read the index.
   */
  start(): Promise<void>;
  /** A query thread's view of the main thread's index. */
  readonly replica: boolean;
  stop(): void;
}

export interface IndexSettings {
  readonly client: ClientOptions;
  /** `/skydns/`: the root of the plugin's path with a trailing slash. */
  readonly prefix: string;
}

class KvReplica implements EtcdIndex {
  readonly replica = true;
  private reader: SharedTableReader | null = null;
  private unsubscribe: (() => void) | null = null;
  readonly view = new KvView(() => this.reader);

  constructor(private readonly subscribe: (on: (sab: SharedArrayBuffer) => void) => () => void) {}

  /** Resolves when the main thread's table has arrived (the snapshot follows the subscription at once). */
  start(): Promise<void> {
    if (this.reader) return Promise.resolve();
    return new Promise((resolve) => {
      this.unsubscribe ??= this.subscribe((sab) => {
        if (this.reader) this.reader.adopt({ sab });
        else this.reader = new SharedTableReader({ sab });
        resolve();
      });
    });
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }
}

export function etcdIndex(
  settings: IndexSettings,
  log: Logger,
  replication: IndexReplication | undefined,
  key: string,
): EtcdIndex {
  if (replication?.role === 'replica') {
    return new KvReplica((on) => replication.subscribe({ key, parse: parseTableFeed }, (m) => on(m.generation.sab)));
  }
  const source = new KvSource({
    client: new EtcdClient(settings.client),
    prefix: settings.prefix,
    log,
    ...(replication ? { replication: { source: replication, key } } : {}),
  });
  return { view: source.view, replica: false, start: () => source.start(), stop: () => source.stop() };
}
