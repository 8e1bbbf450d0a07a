/**
 * `etcd [ZONES...] { fallthrough; path; endpoint; credentials; tls; no_apex_fallback;
 * min-lease-ttl; max-lease-ttl }` (README.md), parsed with the declared options and worded as
 * CoreDNS 1.15.0's etcdParse: only the first `etcd` of a block counts, `stubzones`, `debug` and
 * `upstream` are accepted and ignored, TLS files are read at setup (a missing one is a setup
 * error, as Go's tls.LoadX509KeyPair), and an unknown word is `unknown property`.
 */
import { readFileSync } from 'node:fs';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import {
  directive,
  file,
  option,
  parseOccurrence,
  str,
  zoneArg,
  type ParsedOccurrence,
  type ParsedOption,
} from '../../src/corefile/options.js';
import { parseFallthrough, type Fallthrough } from '../../src/fallthrough.js';
import type { TlsMaterial } from './client.js';

export const DEFAULT_ENDPOINT = 'http://localhost:2379';
const DEFAULT_MIN_LEASE_TTL = 30;
const DEFAULT_MAX_LEASE_TTL = 86400;

export const ETCD_OPTIONS = directive('etcd', {
  args: { rest: zoneArg() },
  options: [
    option('fallthrough', { rest: zoneArg() }),
    option('path', { args: [str('PATH')], rest: str('IGNORED') }),
    option('endpoint', { args: [str('ENDPOINT')], rest: str('ENDPOINT') }),
    option('credentials', { rest: str('VALUE'), min: 1 }),
    option('tls', { rest: file(), min: 0 }),
    option('no_apex_fallback'),
    option('min-lease-ttl', { args: [str('TTL')], rest: str('IGNORED') }),
    option('max-lease-ttl', { args: [str('TTL')], rest: str('IGNORED') }),
    // Accepted and ignored by CoreDNS 1.15.0 (left from older releases).
    option('stubzones', { rest: str('IGNORED') }),
    option('debug', { rest: str('IGNORED') }),
    option('upstream', { rest: str('IGNORED') }),
  ],
});

export interface EtcdConfig {
  zones: string[];
  fallthrough: Fallthrough;
  /** The `path` option as written; `skydns` by default. */
  pathPrefix: string;
  endpoints: string[];
  credentials: { username: string; password: string } | null;
  /** Set by `tls` (any number of arguments up to three), else null. */
  tls: TlsMaterial | null;
  /** The `tls` file arguments (part of the index's identity across reloads). */
  tlsFiles: string[];
  noApexFallback: boolean;
  minLeaseTtl: number;
  maxLeaseTtl: number;
}

/** setup.go parseTTL: seconds, or a Go duration (`30s`, `5m`, `2h30m`). */
function parseTtl(occ: ParsedOccurrence, o: ParsedOption, name: string): number {
  const s = o.raw[0]!.trim();
  const bad = (why: string): Error => occ.error(o, `invalid ${name} value: ${why}`);
  let seconds: number;
  if (/^\d+$/.test(s)) seconds = Number(s);
  else {
    const m = /^(?:(\d+(?:\.\d+)?)(h|m|s|ms|us|µs|ns))+$/.test(s);
    if (!m) throw bad("invalid TTL format, use format like '30', '30s', '5m', '1h', or '2h30m'");
    seconds = 0;
    const units: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, µs: 1e-6, ns: 1e-9 };
    for (const part of s.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g)) seconds += Number(part[1]) * units[part[2]!]!;
  }
  if (seconds > 4294967295) throw bad('TTL too large, maximum is 4294967295 seconds');
  return Math.floor(seconds);
}

function readPem(occ: ParsedOccurrence, o: ParsedOption, path: string, what: 'cert' | 'ca'): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    const msg = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : (e as Error).message;
    throw occ.error(
      o,
      what === 'cert' ? `could not load TLS cert: open ${path}: ${msg}` : `error reading ${path}: open ${path}: ${msg}`,
    );
  }
}

/** pkg/tls NewTLSConfigFromArgs: none (system CAs), CA, CERT KEY, or CERT KEY CA. */
function tlsMaterial(occ: ParsedOccurrence, o: ParsedOption, resolvePath: (p: string) => string): TlsMaterial {
  const a = o.raw.map(resolvePath);
  if (a.length > 3) throw occ.error(o, `maximum of three arguments allowed for TLS config, found ${a.length}`);
  if (a.length === 0) return { cert: null, key: null, ca: null };
  if (a.length === 1) return { cert: null, key: null, ca: readPem(occ, o, a[0]!, 'ca') };
  return {
    cert: readPem(occ, o, a[0]!, 'cert'),
    key: readPem(occ, o, a[1]!, 'cert'),
    ca: a.length === 3 ? readPem(occ, o, a[2]!, 'ca') : null,
  };
}

/** Every occurrence; `resolvePath` applies the block's root to the TLS files, as CoreDNS does. */
export function parseEtcd(
  d: Dispenser,
  blockZones: readonly string[],
  resolvePath = (p: string): string => p,
): EtcdConfig {
  const cfg: EtcdConfig = {
    zones: [...blockZones],
    fallthrough: null,
    pathPrefix: 'skydns',
    endpoints: [DEFAULT_ENDPOINT],
    credentials: null,
    tls: null,
    tlsFiles: [],
    noApexFallback: false,
    minLeaseTtl: DEFAULT_MIN_LEASE_TTL,
    maxLeaseTtl: DEFAULT_MAX_LEASE_TTL,
  };
  // etcdParse reads the first occurrence only.
  if (!d.next()) return cfg;
  const occ = parseOccurrence(d, ETCD_OPTIONS);
  const zones = occ.directive.values.map(String);
  if (zones.length > 0) cfg.zones = [...new Set(zones)];
  for (const o of occ.options) {
    // A word after a one-argument option is read by Caddy as the next property.
    const extra = (n: number): void => {
      if (o.raw.length > n) throw occ.error(o, `unknown property '${o.raw[n]!}'`);
    };
    switch (o.name) {
      case 'fallthrough':
        cfg.fallthrough = parseFallthrough(o.values.map(String));
        break;
      case 'path':
        extra(1);
        cfg.pathPrefix = o.raw[0]!;
        break;
      case 'endpoint':
        cfg.endpoints = [...o.raw];
        break;
      case 'credentials':
        if (o.raw.length !== 2) throw occ.error(o, 'credentials requires 2 arguments, username and password');
        cfg.credentials = { username: o.raw[0]!, password: o.raw[1]! };
        break;
      case 'tls':
        cfg.tls = tlsMaterial(occ, o, resolvePath);
        cfg.tlsFiles = [...o.raw];
        break;
      case 'no_apex_fallback':
        cfg.noApexFallback = true;
        break;
      case 'min-lease-ttl':
        extra(1);
        cfg.minLeaseTtl = parseTtl(occ, o, 'min-lease-ttl');
        break;
      case 'max-lease-ttl':
        extra(1);
        cfg.maxLeaseTtl = parseTtl(occ, o, 'max-lease-ttl');
        break;
      case 'stubzones':
      case 'debug':
        extra(0);
        break;
      case 'upstream':
        break;
    }
  }
  // CoreDNS sets only a username and password that are both non-empty.
  if (cfg.credentials && (cfg.credentials.username === '' || cfg.credentials.password === '')) cfg.credentials = null;
  return cfg;
}
