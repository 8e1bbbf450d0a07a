/**
 * Parsing of `cache [TTL] [ZONES...] { ... }` (docs/plugins.md, cache). Durations are kept in
 * milliseconds, TTL bounds in whole seconds.
 */
import { normalizeZoneArg, normalizeZoneArgs } from '../../src/dns/name.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import {
  convertArg,
  directive,
  duration,
  int,
  oneOf,
  option,
  parseOccurrence,
  percentage,
  str,
  type ParsedOccurrence,
  type ParsedOption,
} from '../../src/corefile/options.js';

export interface Bucket {
  capacity: number;
  /** Maximum TTL in seconds. */
  maxTtl: number;
  /** Minimum TTL in seconds. */
  minTtl: number;
}

export interface Prefetch {
  amount: number;
  durationMs: number;
  percentage: number;
}

export interface ServeStale {
  /** How long after expiry an entry may still be served. */
  durationMs: number;
  mode: 'immediate' | 'verify';
  /** TTL of stale answers (seconds). */
  responseTtl: number;
  /** After a failed refresh, no new refresh for this long (0 = always). */
  recheckMs: number;
  /** verify: how long to wait for the fresh answer before serving stale (0 = no limit). */
  timeoutMs: number;
}

export interface CacheConfig {
  /** Zones this cache serves (empty → the block's keys). */
  zones: string[];
  success: Bucket;
  denial: Bucket;
  prefetch: Prefetch | null;
  serveStale: ServeStale | null;
  preferPositive: boolean;
  servfailMs: number;
  disableSuccess: string[];
  disableDenial: string[];
  keepTtl: boolean;
}

export const DEFAULT_CAPACITY = 10_000;

export function defaultCacheConfig(): CacheConfig {
  return {
    zones: [],
    success: { capacity: DEFAULT_CAPACITY, maxTtl: 3600, minTtl: 5 },
    denial: { capacity: DEFAULT_CAPACITY, maxTtl: 1800, minTtl: 5 },
    prefetch: null,
    serveStale: null,
    preferPositive: false,
    servfailMs: 5000,
    disableSuccess: [],
    disableDenial: [],
    keepTtl: false,
  };
}

const MAX_SERVFAIL_MS = 300_000;
const MAX_RECHECK_MS = 300_000;

/** `success`/`denial CAPACITY [TTL] [MINTTL]`. */
const bucketOption = (name: string) =>
  option(name, {
    args: [
      int({ meta: 'CAPACITY', min: 0, range: (v) => `cache capacity can not be negative: ${v}` }),
      int({ meta: 'TTL', min: 1, range: (v) => `cache TTL can not be zero or negative: ${v}` }),
      int({ meta: 'MINTTL', min: 0, range: (v) => `cache min TTL can not be negative: ${v}` }),
    ],
    min: 1,
  });

export const CACHE_OPTIONS = directive('cache', {
  // [TTL] [ZONES...]: a leading integer is the TTL (below).
  args: { rest: str('TTL|ZONES') },
  options: [
    bucketOption('success'),
    bucketOption('denial'),
    option('prefetch', {
      args: [
        int({ meta: 'AMOUNT', min: 0, range: (v) => `prefetch amount should be positive: ${v}` }),
        duration(),
        percentage({ min: 10, max: 90, range: (v) => `percentage should fall in range [10, 90]: ${v}` }),
      ],
      min: 1,
    }),
    // [DURATION] [immediate [RESPONSE_TTL [FAILURE_RECHECK]] | verify [VERIFY_TIMEOUT [RESPONSE_TTL [FAILURE_RECHECK]]]]
    option('serve_stale', { rest: str(), max: 5 }),
    option('serve_stale_policy', {
      args: [oneOf(['prefer_positive'], 'prefer_positive', (v) => `invalid serve_stale_policy: ${v}`)],
      repeat: 'error',
      repeated: 'serve_stale_policy can only be specified once',
    }),
    option('servfail', {
      args: [
        duration({
          min: 0,
          max: MAX_SERVFAIL_MS,
          range: (ms) =>
            ms < 0 ? 'invalid negative ttl for servfail' : 'caching SERVFAIL responses over 5 minutes is not permitted',
        }),
      ],
    }),
    option('disable', {
      args: [
        oneOf(['success', 'denial'], 'success|denial', () => 'cache type for disable must be "success" or "denial"'),
      ],
      rest: str('ZONES', (z) => (normalizeZoneArg(z).length ? null : `invalid disabled zone: ${z}`)),
      repeat: 'all',
    }),
    option('keepttl'),
  ],
  // CoreDNS answers an unknown property with its ArgErr.
  unknown: (name) => `Wrong argument count or unexpected line ending after '${name}'`,
});

function bucket(o: ParsedOption | undefined, b: Bucket): void {
  if (!o) return;
  const [capacity, maxTtl, minTtl] = o.values as number[];
  b.capacity = capacity!;
  if (maxTtl !== undefined) b.maxTtl = maxTtl;
  if (minTtl !== undefined) b.minTtl = minTtl;
}

/** A Go duration of serve_stale; `what` prefixes Go's error as CoreDNS does. */
function staleDuration(occ: ParsedOccurrence, o: ParsedOption, v: string, what: string | null): number {
  try {
    return convertArg(duration(), v)[0] as number;
  } catch (e) {
    throw occ.error(o, what === null ? (e as Error).message : `${what}: ${(e as Error).message}`);
  }
}

/** `serve_stale`'s arguments, with CoreDNS 1.15.0's rules and texts. */
function serveStale(occ: ParsedOccurrence, o: ParsedOption): ServeStale {
  const a = o.raw;
  const s: ServeStale = { durationMs: 3_600_000, mode: 'immediate', responseTtl: 0, recheckMs: 0, timeoutMs: 0 };
  const check = (ok: boolean, message: string): void => {
    if (!ok) throw occ.error(o, message);
  };
  if (a.length > 0) {
    s.durationMs = staleDuration(occ, o, a[0]!, null);
    check(s.durationMs >= 0, 'invalid negative duration for serve_stale');
  }
  if (a.length > 1) {
    const mode = a[1]!.toLowerCase();
    check(mode === 'immediate' || mode === 'verify', `invalid value for serve_stale refresh mode: ${mode}`);
    s.mode = mode as ServeStale['mode'];
  }
  let rest = a.slice(2);
  if (s.mode === 'verify' && rest.length > 0) {
    s.timeoutMs = staleDuration(occ, o, rest[0]!, 'invalid serve_stale verify timeout');
    check(s.timeoutMs >= 0, 'invalid negative timeout for serve_stale verify');
    rest = rest.slice(1);
  }
  if (rest.length > 2) throw occ.error(o, `Wrong argument count or unexpected line ending after '${a[a.length - 1]}'`);
  if (rest.length > 0) {
    const ttl = staleDuration(occ, o, rest[0]!, 'invalid serve_stale response TTL');
    check(ttl >= 0, 'invalid negative response TTL for serve_stale');
    check(ttl % 1000 === 0, 'serve_stale response TTL must be a whole number of seconds');
    check(ttl / 1000 <= 0xffffffff, 'serve_stale response TTL exceeds the DNS TTL range');
    s.responseTtl = ttl / 1000;
  }
  if (rest.length > 1) {
    s.recheckMs = staleDuration(occ, o, rest[1]!, 'invalid serve_stale failure recheck');
    check(s.recheckMs >= 0, 'invalid negative failure recheck for serve_stale');
    check(s.recheckMs <= MAX_RECHECK_MS, 'serve_stale failure recheck cannot exceed 5 minutes');
  }
  return s;
}

export function parseCache(d: Dispenser): CacheConfig {
  const cfg = defaultCacheConfig();
  d.next();
  const occ = parseOccurrence(d, CACHE_OPTIONS);
  let args = occ.directive.raw;
  if (args.length > 0 && /^[+-]?\d+$/.test(args[0]!)) {
    const ttl = Number(args[0]);
    if (ttl <= 0) throw occ.error(occ.directive, `cache TTL can not be zero or negative: ${ttl}`);
    cfg.success.maxTtl = ttl;
    cfg.denial.maxTtl = ttl;
    args = args.slice(1);
  }
  cfg.zones = normalizeZoneArgs(args);
  bucket(occ.last('success'), cfg.success);
  bucket(occ.last('denial'), cfg.denial);
  const prefetch = occ.last('prefetch');
  if (prefetch) {
    const [amount, durationMs = 60_000, percentage = 10] = prefetch.values as number[];
    cfg.prefetch = { amount: amount!, durationMs, percentage };
  }
  const stale = occ.last('serve_stale');
  if (stale) cfg.serveStale = serveStale(occ, stale);
  cfg.preferPositive = occ.has('serve_stale_policy');
  cfg.servfailMs = occ.num('servfail', 0, cfg.servfailMs);
  for (const o of occ.all('disable')) {
    const zones = o.raw.length > 1 ? normalizeZoneArgs(o.raw.slice(1)) : ['.'];
    if (o.raw[0] === 'success') cfg.disableSuccess = zones;
    else cfg.disableDenial = zones;
  }
  cfg.keepTtl = occ.has('keepttl');
  if (cfg.preferPositive && !stale) throw d.err('serve_stale_policy requires serve_stale');
  return cfg;
}

/** Entries a bucket really holds: 256 shards of max(CAPACITY/256, 4) entries. */
export function effectiveCapacity(capacity: number): number {
  return 256 * Math.max(Math.floor(capacity / 256), 4);
}
