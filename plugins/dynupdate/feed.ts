/**
 * What the main thread, which owns a dynamic zone, and the query threads send each other over a
 * replication channel (docs/multicore.md §2, src/server/replication.ts): the zone as it is after a
 * change (all of it: a change replaces the whole zone, serial included), and the other way an
 * UPDATE a query thread received, with the TSIG key that thread's *tsig* validated, answered by
 * the RCODE the client must get. Messages arrive as structured clones and are checked here, once.
 */
import type { ReplicationChannel } from '../../src/server/replication.js';
import { isObj } from '../../src/util/json.js';

/** The zone's records as uncompressed DNS messages (store.ts, recordsToMessages). */
export interface ZoneFeed {
  readonly op: 'zone';
  readonly messages: readonly Uint8Array[];
}

/** An UPDATE for the zone, received by a query thread, for the main thread to apply. */
export interface UpdateAsk {
  readonly op: 'update';
  /** The validated TSIG key's name (the thread's *tsig* checked the MAC and the time). */
  readonly key: string;
  /** The request as the chain saw it (its TSIG RR removed): the sections to apply. */
  readonly message: Uint8Array;
}

function feedError(why: string): Error {
  return new Error(`dynupdate: zone feed: ${why}`);
}

export function parseZoneFeed(m: unknown): ZoneFeed {
  if (!isObj(m) || m['op'] !== 'zone') throw feedError('message is not a zone');
  const messages = m['messages'];
  if (!Array.isArray(messages) || !messages.every((x: unknown) => x instanceof Uint8Array))
    throw feedError('messages are not byte arrays');
  return { op: 'zone', messages: messages as Uint8Array[] };
}

export function parseUpdateAsk(m: unknown): UpdateAsk {
  if (!isObj(m) || m['op'] !== 'update' || typeof m['key'] !== 'string' || !(m['message'] instanceof Uint8Array))
    throw feedError('request is not an update');
  return { op: 'update', key: m['key'], message: m['message'] };
}

export function parseRcode(m: unknown): number {
  if (typeof m !== 'number' || !Number.isInteger(m) || m < 0 || m > 0xfff) throw feedError('reply is not an RCODE');
  return m;
}

/** The channel of one dynamic zone (`key`: the same in every thread, from the configuration). */
export function zoneFeedChannel(key: string): ReplicationChannel<ZoneFeed, UpdateAsk, number> {
  return { key, parse: parseZoneFeed, parseAsk: parseUpdateAsk, parseReply: parseRcode };
}
