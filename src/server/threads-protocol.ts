/**
 * Messages between the main thread and its query threads (docs/multicore.md).
 */
import type { Flags } from '../cli/flags.js';
import type { MetricsJson } from '../metrics/registry.js';
import type { ConfigSource } from './instance.js';
import type { ReplicationWire } from './replication.js';

/** What a query thread starts with. */
export interface ThreadData {
  readonly clusterdnsQueryThread: true;
  /** 1-based number of the thread (the main thread is 0). */
  readonly index: number;
  readonly flags: Flags;
  /** The configuration the main thread runs (text included: `-conf stdin` is read once). */
  readonly source: ConfigSource;
  /** Listener name → port the main thread bound (a configured port 0 becomes the real one). */
  readonly ports: Readonly<Record<string, number>>;
}

export type ToThread =
  | ReplicationWire
  | { readonly t: 'reload'; readonly id: number; readonly source: ConfigSource; readonly ports: Readonly<Record<string, number>> }
  | { readonly t: 'metrics'; readonly id: number }
  | { readonly t: 'shutdown' };

export type FromThread =
  | ReplicationWire
  | { readonly t: 'started' }
  | { readonly t: 'failed'; readonly error: string }
  | { readonly t: 'reloaded'; readonly id: number; readonly error: string | null }
  | { readonly t: 'metrics'; readonly id: number; readonly data: MetricsJson }
  | { readonly t: 'stopped'; readonly code: number };
