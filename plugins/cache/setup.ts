/**
 * Parsing of `cache [TTL] [ZONES...] { ... }` (docs/plugins.md, cache). Durations are kept in
 * milliseconds, TTL bounds in whole seconds.
 */
import { normalizeZoneArg, normalizeZoneArgs } from '../../src/dns/name.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { parseDuration } from '../../src/util/duration.js';

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

function atoi(d: Dispenser, v: string): number {
  if (!/^[+-]?\d+$/.test(v)) throw d.err(`strconv.Atoi: parsing "${v}": invalid syntax`);
  return Number(v);
}

function duration(d: Dispenser, v: string): number {
  const ms = parseDuration(v);
  if (ms === undefined) throw d.err(`time: invalid duration "${v}"`);
  return ms;
}

function bucket(d: Dispenser, b: Bucket): void {
  const args = d.remainingArgs();
  if (args.length === 0 || args.length > 3) throw d.argErr();
  b.capacity = atoi(d, args[0]!);
  if (b.capacity < 0) throw d.err(`cache capacity can not be negative: ${b.capacity}`);
  if (args.length > 1) {
    const ttl = atoi(d, args[1]!);
    if (ttl <= 0) throw d.err(`cache TTL can not be zero or negative: ${ttl}`);
    b.maxTtl = ttl;
    if (args.length > 2) {
      const min = atoi(d, args[2]!);
      if (min < 0) throw d.err(`cache min TTL can not be negative: ${min}`);
      b.minTtl = min;
    }
  }
}

export function parseCache(d: Dispenser): CacheConfig {
  const cfg = defaultCacheConfig();
  d.next();
  let args = d.remainingArgs();
  if (args.length > 0 && /^[+-]?\d+$/.test(args[0]!)) {
    const ttl = Number(args[0]);
    if (ttl <= 0) throw d.err(`cache TTL can not be zero or negative: ${ttl}`);
    cfg.success.maxTtl = ttl;
    cfg.denial.maxTtl = ttl;
    args = args.slice(1);
  }
  cfg.zones = normalizeZoneArgs(args);
  let staleSeen = false;
  let policySeen = false;
  while (d.nextBlock()) {
    const opt = d.val();
    switch (opt) {
      case 'success': bucket(d, cfg.success); break;
      case 'denial': bucket(d, cfg.denial); break;
      case 'prefetch': {
        const a = d.remainingArgs();
        if (a.length === 0 || a.length > 3) throw d.argErr();
        const amount = atoi(d, a[0]!);
        if (amount < 0) throw d.err(`prefetch amount should be positive: ${amount}`);
        const p: Prefetch = { amount, durationMs: 60_000, percentage: 10 };
        if (a.length > 1) p.durationMs = duration(d, a[1]!);
        if (a.length > 2) {
          const pct = a[2]!;
          if (!pct.endsWith('%')) throw d.err(`last character of percentage should be \`%\`, but is: '${pct.slice(-1)}'`);
          const num = atoi(d, pct.slice(0, -1));
          if (num < 10 || num > 90) throw d.err(`percentage should fall in range [10, 90]: ${num}`);
          p.percentage = num;
        }
        cfg.prefetch = p;
        break;
      }
      case 'serve_stale': {
        const a = d.remainingArgs();
        if (a.length > 5) throw d.argErr();
        const s: ServeStale = { durationMs: 3_600_000, mode: 'immediate', responseTtl: 0, recheckMs: 0, timeoutMs: 0 };
        if (a.length > 0) {
          s.durationMs = duration(d, a[0]!);
          if (s.durationMs < 0) throw d.err('invalid negative duration for serve_stale');
        }
        let rest = a.slice(1);
        if (rest.length > 0) {
          const mode = rest[0]!.toLowerCase();
          if (mode !== 'immediate' && mode !== 'verify') throw d.err(`invalid value for serve_stale refresh mode: ${mode}`);
          s.mode = mode;
          rest = rest.slice(1);
          if (mode === 'verify' && rest.length > 0) {
            s.timeoutMs = duration(d, rest[0]!);
            if (s.timeoutMs < 0) throw d.err('invalid negative timeout for serve_stale verify');
            rest = rest.slice(1);
          }
          if (rest.length > 0) {
            const rt = rest[0]!;
            const ms = /^\d+$/.test(rt) ? Number(rt) * 1000 : parseDuration(rt);
            if (ms === undefined || ms < 0 || ms % 1000 !== 0) throw d.err(`invalid serve_stale response TTL: ${rt}`);
            s.responseTtl = ms / 1000;
            rest = rest.slice(1);
          }
          if (rest.length > 0) {
            s.recheckMs = duration(d, rest[0]!);
            if (s.recheckMs < 0 || s.recheckMs > 300_000) throw d.err(`invalid serve_stale recheck duration: ${rest[0]} (0..5m)`);
            rest = rest.slice(1);
          }
          if (rest.length > 0) throw d.argErr();
        }
        cfg.serveStale = s;
        staleSeen = true;
        break;
      }
      case 'serve_stale_policy': {
        const a = d.remainingArgs();
        if (a.length !== 1) throw d.argErr();
        if (a[0] !== 'prefer_positive') throw d.err(`unknown serve_stale_policy: ${a[0]}`);
        if (policySeen) throw d.err('serve_stale_policy already specified');
        policySeen = true;
        cfg.preferPositive = true;
        break;
      }
      case 'servfail': {
        const a = d.remainingArgs();
        if (a.length !== 1) throw d.argErr();
        const ms = duration(d, a[0]!);
        if (ms < 0) throw d.err('invalid negative ttl for servfail');
        if (ms > 300_000) throw d.err('caching SERVFAIL responses over 5 minutes is not permitted');
        cfg.servfailMs = ms;
        break;
      }
      case 'disable': {
        const a = d.remainingArgs();
        if (a.length < 1) throw d.argErr();
        const zones: string[] = [];
        for (const z of a.slice(1)) {
          const nz = normalizeZoneArg(z);
          if (nz.length === 0) throw d.err(`invalid disabled zone: ${z}`);
          zones.push(...nz);
        }
        if (zones.length === 0) zones.push('.');
        if (a[0] === 'success') cfg.disableSuccess = zones;
        else if (a[0] === 'denial') cfg.disableDenial = zones;
        else throw d.err('cache type for disable must be "success" or "denial"');
        break;
      }
      case 'keepttl': {
        if (d.remainingArgs().length !== 0) throw d.argErr();
        cfg.keepTtl = true;
        break;
      }
      default:
        throw d.argErr();
    }
  }
  if (policySeen && !staleSeen) throw d.err('serve_stale_policy requires serve_stale');
  return cfg;
}

/** Entries a bucket really holds: 256 shards of max(CAPACITY/256, 4) entries. */
export function effectiveCapacity(capacity: number): number {
  return 256 * Math.max(Math.floor(capacity / 256), 4);
}
