/**
 * What the main thread's index sends the query threads' copies (docs/multicore.md §2), on one
 * replication channel per index (src/server/replication.ts): first the kinds it watches, then the
 * shared-memory index's updates with the kinds listed so far. A message arrives as a structured
 * clone; {@link parseIndexFeed} checks it once, there, so the replica works on typed values.
 */
import type { ReplicationChannel } from '../../src/server/replication.js';
import { isObj } from '../../src/util/json.js';
import { parseChangeKey, type ChangeKey } from './changekeys.js';
import type { SharedIndexUpdate } from './sharedindex.js';
import type { Kind } from './types.js';

export type IndexFeed =
  | { readonly op: 'kinds'; readonly kinds: readonly Kind[] }
  | { readonly op: 'shared'; readonly listed: readonly Kind[]; readonly update: SharedIndexUpdate };

/** The channel of the index under `key` (the same key in every thread). */
export function indexFeedChannel(key: string): ReplicationChannel<IndexFeed> {
  return { key, parse: parseIndexFeed };
}

const KINDS: ReadonlySet<string> = new Set<Kind>([
  'services',
  'endpointslices',
  'namespaces',
  'pods',
  'serviceimports',
  'mcslices',
]);

function isKind(v: unknown): v is Kind {
  return typeof v === 'string' && KINDS.has(v);
}

function kinds(v: unknown): Kind[] {
  if (!Array.isArray(v)) throw feedError('kinds are not a list');
  return v.map((k: unknown) => {
    if (!isKind(k)) throw feedError(`unknown kind ${String(k)}`);
    return k;
  });
}

function feedError(why: string): Error {
  return new Error(`kubernetes: index feed from the main thread: ${why}`);
}

function update(v: unknown): SharedIndexUpdate {
  if (!isObj(v)) throw feedError('update is not an object');
  const { deps, serial, externalSerial, multiclusterSerial, generation, snapshot } = v;
  if (!Array.isArray(deps)) throw feedError('change keys are not a list');
  const keys = deps.map((d: unknown): ChangeKey => {
    const k = parseChangeKey(d);
    if (k === null) throw feedError(`not a change key: ${String(d)}`);
    return k;
  });
  if (typeof serial !== 'number' || typeof externalSerial !== 'number' || typeof multiclusterSerial !== 'number')
    throw feedError('serials are not numbers');
  if (snapshot !== undefined && snapshot !== true) throw feedError('snapshot flag is not true');
  const base = {
    deps: keys,
    serial,
    externalSerial,
    multiclusterSerial,
    ...(snapshot === true ? { snapshot: true as const } : {}),
  };
  if (generation === undefined) return base;
  if (!isObj(generation) || !(generation['sab'] instanceof SharedArrayBuffer))
    throw feedError('generation has no SharedArrayBuffer');
  return { ...base, generation: { sab: generation['sab'] } };
}

/** Check a message received on an index's channel; throws when it is not an {@link IndexFeed}. */
export function parseIndexFeed(m: unknown): IndexFeed {
  if (!isObj(m)) throw feedError('message is not an object');
  if (m['op'] === 'kinds') return { op: 'kinds', kinds: kinds(m['kinds']) };
  if (m['op'] === 'shared') return { op: 'shared', listed: kinds(m['listed']), update: update(m['update']) };
  throw feedError(`unknown op ${String(m['op'])}`);
}
