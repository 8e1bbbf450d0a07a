/**
 * What the main thread, which pulls a secondary zone, sends the query threads' copies of it
 * (docs/multicore.md §2, src/server/replication.ts): the transferred zone as the messages it came
 * in, or that it expired; and what a query thread asks the main thread: a NOTIFY it received from
 * an allowed primary. Messages arrive as structured clones and are checked here, once.
 */
import type { ReplicationChannel } from '../../src/server/replication.js';
import { isObj } from '../../src/util/json.js';

export type ZoneFeed =
  /** A transfer succeeded: the AXFR messages, in order (the zone is rebuilt from them). */
  | { readonly op: 'zone'; readonly messages: readonly Uint8Array[] }
  /** The zone expired (SOA expire passed without a successful refresh). */
  | { readonly op: 'expired' };

/** A NOTIFY from an allowed primary, received by a query thread: the main thread checks the serial. */
export interface ZoneAsk {
  readonly op: 'notify';
  /** The primary's address (for the log lines). */
  readonly from: string;
}

function feedError(why: string): Error {
  return new Error(`secondary: zone feed: ${why}`);
}

export function parseZoneFeed(m: unknown): ZoneFeed {
  if (!isObj(m)) throw feedError('message is not an object');
  if (m['op'] === 'expired') return { op: 'expired' };
  if (m['op'] !== 'zone') throw feedError(`unknown op ${String(m['op'])}`);
  const messages = m['messages'];
  if (!Array.isArray(messages) || !messages.every((x: unknown) => x instanceof Uint8Array))
    throw feedError('messages are not byte arrays');
  return { op: 'zone', messages: messages as Uint8Array[] };
}

export function parseZoneAsk(m: unknown): ZoneAsk {
  if (!isObj(m) || m['op'] !== 'notify' || typeof m['from'] !== 'string') throw feedError('ask is not a notify');
  return { op: 'notify', from: m['from'] };
}

/** The channel of one pulled zone (`key`: the same in every thread, from the configuration). */
export function zoneFeedChannel(key: string): ReplicationChannel<ZoneFeed, ZoneAsk> {
  return { key, parse: parseZoneFeed, parseAsk: parseZoneAsk };
}
