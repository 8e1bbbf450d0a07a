/**
 * Parsing of `shadow REFERENCE... { ... }` (plugins/shadow/README.md). No I/O here: the sockets
 * to the references are opened when the server starts.
 */
import { isIP } from 'node:net';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, duration, float, int, option, parseOccurrence, str } from '../../src/corefile/options.js';
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

/** The smallest positive duration (1ns), in milliseconds. */
const ONE_NS = 1e-6;

export const SHADOW_OPTIONS = directive('shadow', {
  args: {
    rest: str('REFERENCE', (v) =>
      parseReference(v) ? null : `invalid reference address '${v}': want IP, IP:port or host:port`,
    ),
    min: 1,
  },
  options: [
    option('fraction', {
      args: [
        float({
          meta: 'FRACTION',
          min: 0,
          max: 1,
          invalid: (v) => `fraction must be a number between 0 and 1, got '${v}'`,
          range: (v) => `fraction must be a number between 0 and 1, got '${v}'`,
        }),
      ],
    }),
    option('timeout', {
      args: [
        duration({
          min: ONE_NS,
          invalid: (v) => `invalid timeout '${v}'`,
          range: (_, v) => `timeout must be positive, got '${v}'`,
        }),
      ],
    }),
    option('ignore', {
      rest: str('KIND', (v) => (isIgnorable(v) ? null : `unknown difference kind or rule '${v}'`)),
      min: 1,
      repeat: 'all',
    }),
    option('max_outstanding', {
      args: [
        int({
          min: 1,
          max: MAX_OUTSTANDING_LIMIT,
          invalid: (v) => maxOutstandingError(v),
          range: (v) => maxOutstandingError(String(v)),
        }),
      ],
    }),
    option('log_rate', {
      args: [
        int({
          meta: 'COUNT',
          min: 0,
          max: 1_000_000,
          invalid: (v) => logCountError(v),
          range: (v) => logCountError(String(v)),
        }),
        duration({
          min: ONE_NS,
          invalid: (v) => `invalid log_rate duration '${v}'`,
          range: (_, v) => `invalid log_rate duration '${v}'`,
        }),
      ],
      min: 1,
    }),
  ],
});

function maxOutstandingError(v: string): string {
  return `max_outstanding must be an integer between 1 and ${MAX_OUTSTANDING_LIMIT}, got '${v}'`;
}

function logCountError(v: string): string {
  return `log_rate count must be a non-negative integer, got '${v}'`;
}

/** Parse the (single) `shadow` occurrence of a block. */
export function parseShadow(d: Dispenser): ShadowConfig {
  const cfg = defaultConfig();
  d.next();
  const occ = parseOccurrence(d, SHADOW_OPTIONS);
  for (const a of occ.directive.raw) {
    const ref = parseReference(a)!;
    if (!cfg.references.some((r) => r.label === ref.label)) cfg.references.push(ref);
  }
  cfg.fraction = occ.num('fraction', 0, cfg.fraction);
  cfg.timeoutMs = occ.num('timeout', 0, cfg.timeoutMs);
  for (const o of occ.all('ignore')) for (const n of o.raw) cfg.ignore.add(n);
  cfg.maxOutstanding = occ.num('max_outstanding', 0, cfg.maxOutstanding);
  cfg.logCount = occ.num('log_rate', 0, cfg.logCount);
  cfg.logWindowMs = occ.num('log_rate', 1, cfg.logWindowMs);
  return cfg;
}
