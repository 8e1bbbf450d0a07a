/**
 * Messages between the main thread and its query threads (docs/multicore.md): one discriminated
 * union per direction, and the one check of each where it arrives ({@link parseToThread} in the
 * thread, {@link parseFromThread} in the pool, {@link parseThreadData} for the thread's start).
 * A message crosses as a structured clone typed `unknown`; after the check the receiver switches
 * on `t` with no cast. Both sides run the same build, so a message that fails the check is a bug:
 * the check throws, naming what was wrong.
 */
import type { Flags } from '../cli/flags.js';
import type { MetricsJson } from '../metrics/registry.js';
import { isObj } from '../util/json.js';
import type { ConfigSource } from './instance.js';
import type { ReplicationFromThread, ReplicationToThread } from './replication.js';

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

/** Main thread → query thread. */
export type ToThread =
  | ReplicationToThread
  | {
      readonly t: 'reload';
      readonly id: number;
      readonly source: ConfigSource;
      readonly ports: Readonly<Record<string, number>>;
    }
  | { readonly t: 'metrics'; readonly id: number }
  | { readonly t: 'shutdown' };

/** Query thread → main thread. */
export type FromThread =
  | ReplicationFromThread
  | { readonly t: 'started' }
  | { readonly t: 'failed'; readonly error: string }
  | { readonly t: 'reloaded'; readonly id: number; readonly error: string | null }
  | { readonly t: 'metrics'; readonly id: number; readonly data: MetricsJson }
  | { readonly t: 'stopped'; readonly code: number };

function protocolError(what: string, why: string): Error {
  return new Error(`query thread protocol: ${what}: ${why}`);
}

function str(m: Record<string, unknown>, field: string, what: string): string {
  const v = m[field];
  if (typeof v !== 'string') throw protocolError(what, `${field} is not a string`);
  return v;
}

function num(m: Record<string, unknown>, field: string, what: string): number {
  const v = m[field];
  if (typeof v !== 'number') throw protocolError(what, `${field} is not a number`);
  return v;
}

function configSource(v: unknown, what: string): ConfigSource {
  if (!isObj(v)) throw protocolError(what, 'source is not an object');
  return { path: str(v, 'path', what), text: str(v, 'text', what) };
}

function ports(v: unknown, what: string): Record<string, number> {
  if (!isObj(v)) throw protocolError(what, 'ports are not an object');
  const out: Record<string, number> = {};
  for (const name of Object.keys(v)) out[name] = num(v, name, what);
  return out;
}

/** The type of every flag: a flag added to Flags fails to compile here until it is checked too. */
const FLAG_TYPES: {
  readonly [K in keyof Flags]: Flags[K] extends number ? 'number' : Flags[K] extends string ? 'string' : 'boolean';
} = {
  conf: 'string',
  dnsPort: 'number',
  pidfile: 'string',
  plugins: 'boolean',
  version: 'boolean',
  quiet: 'boolean',
  validate: 'boolean',
  logFormat: 'string',
  workers: 'number',
  tcpMaxConns: 'number',
  tcpMaxConnsPerSource: 'number',
};

function isFlags(v: unknown): v is Flags {
  return isObj(v) && Object.entries(FLAG_TYPES).every(([k, type]) => typeof v[k] === type);
}

/** Metrics as prom-client's getMetricsAsJSON gives them: a list of named metrics with values. */
function isMetricsJson(v: unknown): v is MetricsJson {
  return (
    Array.isArray(v) &&
    v.every(
      (m: unknown) =>
        isObj(m) && typeof m['name'] === 'string' && typeof m['type'] === 'string' && Array.isArray(m['values']),
    )
  );
}

/** A thread's workerData. */
export function parseThreadData(d: unknown): ThreadData {
  const what = 'thread data';
  if (!isObj(d) || d['clusterdnsQueryThread'] !== true) throw protocolError(what, 'not a query thread');
  if (!isFlags(d['flags'])) throw protocolError(what, 'flags are not Flags');
  return {
    clusterdnsQueryThread: true,
    index: num(d, 'index', what),
    flags: d['flags'],
    source: configSource(d['source'], what),
    ports: ports(d['ports'], what),
  };
}

/** A message from the main thread, in a query thread. */
export function parseToThread(m: unknown): ToThread {
  if (!isObj(m)) throw protocolError('message to a thread', 'not an object');
  const what = `message to a thread (${String(m['t'])})`;
  switch (m['t']) {
    case 'feed': {
      const msgs = m['msgs'];
      // The payloads are the replicating plugin's, checked by its channel (replication.ts).
      if (!Array.isArray(msgs)) throw protocolError(what, 'msgs is not a list');
      const to = m['to'] === undefined ? {} : { to: num(m, 'to', what) };
      const ack = m['ack'] === undefined ? {} : { ack: num(m, 'ack', what) };
      return { t: 'feed', key: str(m, 'key', what), msgs, ...to, ...ack };
    }
    case 'res': {
      if (typeof m['ok'] !== 'boolean') throw protocolError(what, 'ok is not a boolean');
      // The answer is the replicating plugin's, checked by its channel (replication.ts).
      return { t: 'res', id: num(m, 'id', what), ok: m['ok'], msg: m['msg'] };
    }
    case 'reload':
      return {
        t: 'reload',
        id: num(m, 'id', what),
        source: configSource(m['source'], what),
        ports: ports(m['ports'], what),
      };
    case 'metrics':
      return { t: 'metrics', id: num(m, 'id', what) };
    case 'shutdown':
      return { t: 'shutdown' };
    default:
      throw protocolError(what, 'unknown type');
  }
}

/** A message from a query thread, in the main thread. */
export function parseFromThread(m: unknown): FromThread {
  if (!isObj(m)) throw protocolError('message from a thread', 'not an object');
  const what = `message from a thread (${String(m['t'])})`;
  switch (m['t']) {
    case 'sub':
      return { t: 'sub', key: str(m, 'key', what), id: num(m, 'id', what) };
    case 'unsub':
      return { t: 'unsub', key: str(m, 'key', what) };
    case 'ask':
      // The payload is the replicating plugin's, checked by its channel (replication.ts).
      return { t: 'ask', key: str(m, 'key', what), msg: m['msg'] };
    case 'req':
      return { t: 'req', key: str(m, 'key', what), id: num(m, 'id', what), msg: m['msg'] };
    case 'applied':
      return { t: 'applied', ack: num(m, 'ack', what) };
    case 'started':
      return { t: 'started' };
    case 'failed':
      return { t: 'failed', error: str(m, 'error', what) };
    case 'reloaded': {
      const error = m['error'] === null ? null : str(m, 'error', what);
      return { t: 'reloaded', id: num(m, 'id', what), error };
    }
    case 'metrics': {
      const data = m['data'];
      if (!isMetricsJson(data)) throw protocolError(what, 'data is not a metrics list');
      return { t: 'metrics', id: num(m, 'id', what), data };
    }
    case 'stopped':
      return { t: 'stopped', code: num(m, 'code', what) };
    default:
      throw protocolError(what, 'unknown type');
  }
}
