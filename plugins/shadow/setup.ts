/**
 * Parsing of `shadow REFERENCE... { ... }` (plugins/shadow/README.md). No I/O here: the sockets
 * to the references are opened when the server starts.
 */
import { isIP } from 'node:net';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { parseDuration } from '../../src/util/duration.js';
import { isIgnorable } from './compare.js';

export interface Reference {
  /** An IP address, or a host name resolved once when the server starts. */
  readonly host: string;
  readonly port: number;
  /** `host:port` (`[IPv6]:port`) for logs. */
  readonly label: string;
}

/** Host names: letters, digits, `-`, `_` and dots, at least one letter (so no IPv4 look-alike). */
const HOSTNAME = /^(?=.*[a-zA-Z])[a-zA-Z0-9_]([a-zA-Z0-9_-]{0,62})(\.[a-zA-Z0-9_]([a-zA-Z0-9_-]{0,62}))*\.?$/;

export interface ShadowConfig {
  references: Reference[];
  /** Share of the block's queries copied to a reference, 0..1. */
  fraction: number;
  timeoutMs: number;
  /** Difference kinds and tolerance rule ids that do not count as a mismatch. */
  ignore: Set<string>;
  /** Shadow exchanges waiting to be sent or for their reply; more are dropped (and counted). */
  maxOutstanding: number;
  /** At most `logCount` differing replies are logged per `logWindowMs`; 0 = none. */
  logCount: number;
  logWindowMs: number;
}

export function defaultConfig(): ShadowConfig {
  return {
    references: [],
    fraction: 1,
    timeoutMs: 2000,
    ignore: new Set(),
    maxOutstanding: 100,
    logCount: 10,
    logWindowMs: 10_000,
  };
}

/** Hard upper bound for `max_outstanding` (memory: each holds one query and one UDP-sized reply). */
export const MAX_OUTSTANDING_LIMIT = 10_000;

/** `1.2.3.4`, `1.2.3.4:53`, `[::1]:53`, `::1`, `coredns.example:53`, optionally prefixed `dns://`. */
export function parseReference(text: string): Reference | null {
  let s = text.startsWith('dns://') ? text.slice(6) : text;
  let port = 53;
  let host: string;
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    if (close < 0) return null;
    host = s.slice(1, close);
    const rest = s.slice(close + 1);
    if (rest !== '') {
      if (!rest.startsWith(':')) return null;
      const p = parsePort(rest.slice(1));
      if (p === null) return null;
      port = p;
    }
    if (isIP(host) !== 6) return null;
  } else if (isIP(s) === 6) {
    host = s;
  } else {
    const colon = s.lastIndexOf(':');
    if (colon >= 0) {
      const p = parsePort(s.slice(colon + 1));
      if (p === null) return null;
      port = p;
      s = s.slice(0, colon);
    }
    if (isIP(s) !== 4 && !(HOSTNAME.test(s) && s.length <= 253 && !/^[\d.]+$/.test(s))) return null;
    host = s;
  }
  return { host, port, label: isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}` };
}

function parsePort(s: string): number | null {
  if (!/^\d{1,5}$/.test(s)) return null;
  const n = Number(s);
  return n >= 1 && n <= 65535 ? n : null;
}

/** Parse the (single) `shadow` occurrence of a block. */
export function parseShadow(d: Dispenser): ShadowConfig {
  const cfg = defaultConfig();
  d.next();
  const args = d.remainingArgs();
  if (args.length === 0) throw d.argErr();
  const seen = new Set<string>();
  for (const a of args) {
    const ref = parseReference(a);
    if (!ref) throw d.err(`invalid reference address '${a}': want IP, IP:port or host:port`);
    if (seen.has(ref.label)) continue;
    seen.add(ref.label);
    cfg.references.push(ref);
  }
  while (d.nextBlock()) {
    const prop = d.val();
    switch (prop) {
      case 'fraction': {
        const v = oneArg(d);
        const n = /^(\d+(\.\d*)?|\.\d+)$/.test(v) ? Number(v) : NaN;
        if (!(n >= 0 && n <= 1)) throw d.err(`fraction must be a number between 0 and 1, got '${v}'`);
        cfg.fraction = n;
        break;
      }
      case 'timeout': {
        const v = oneArg(d);
        const ms = parseDuration(v);
        if (ms === undefined) throw d.err(`invalid timeout '${v}'`);
        if (ms <= 0) throw d.err(`timeout must be positive, got '${v}'`);
        cfg.timeoutMs = ms;
        break;
      }
      case 'ignore': {
        const names = d.remainingArgs();
        if (names.length === 0) throw d.argErr();
        for (const n of names) {
          if (!isIgnorable(n)) throw d.err(`unknown difference kind or rule '${n}'`);
          cfg.ignore.add(n);
        }
        break;
      }
      case 'max_outstanding': {
        const v = oneArg(d);
        const n = /^\d+$/.test(v) ? Number(v) : NaN;
        if (!(n >= 1 && n <= MAX_OUTSTANDING_LIMIT)) throw d.err(`max_outstanding must be an integer between 1 and ${MAX_OUTSTANDING_LIMIT}, got '${v}'`);
        cfg.maxOutstanding = n;
        break;
      }
      case 'log_rate': {
        const vs = d.remainingArgs();
        if (vs.length < 1 || vs.length > 2) throw d.argErr();
        const n = /^\d+$/.test(vs[0]!) ? Number(vs[0]) : NaN;
        if (!(n >= 0 && n <= 1_000_000)) throw d.err(`log_rate count must be a non-negative integer, got '${vs[0]}'`);
        cfg.logCount = n;
        if (vs.length === 2) {
          const ms = parseDuration(vs[1]!);
          if (ms === undefined || ms <= 0) throw d.err(`invalid log_rate duration '${vs[1]}'`);
          cfg.logWindowMs = ms;
        }
        break;
      }
      default:
        throw d.err(`unknown property '${prop}'`);
    }
  }
  return cfg;
}

function oneArg(d: Dispenser): string {
  const args = d.remainingArgs();
  if (args.length !== 1) throw d.argErr();
  return args[0]!;
}
