/**
 * Parsing of `forward FROM TO... { ... }` (docs/plugins.md, forward). Each occurrence in a block is a
 * separate forwarder; this returns one config per occurrence. Only the resolv.conf-style TO files
 * and the TLS key material are read here (their errors are configuration errors); hostname TOs
 * are resolved when the server starts.
 */
import { readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { rcodeFromName, Rcode } from '../../src/dns/constants.js';
import { fqdn, isDomainName, normalizeZoneArg } from '../../src/dns/name.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { parseDuration } from '../../src/util/duration.js';
import type { HealthCheckConfig, Scheme } from './proxy.js';

export type Policy = 'random' | 'round_robin' | 'sequential';

/** One TO after parsing: an address, or a hostname resolved at start-up. */
export type ToSpec =
  | { readonly kind: 'addr'; readonly scheme: Scheme; readonly host: string; readonly port: number; readonly serverName: string | null; readonly file?: string }
  | { readonly kind: 'hostname'; readonly scheme: Scheme; readonly name: string; readonly port: number; readonly serverName: string | null };

export interface TlsFiles {
  readonly cert: Buffer | null;
  readonly key: Buffer | null;
  readonly ca: Buffer | null;
}

export interface ForwardConfig {
  from: string;
  /** FROM as written, when it expanded to several reverse zones (only the first is used). */
  fromCidr: string | null;
  to: ToSpec[];
  except: string[];
  forceTcp: boolean;
  preferUdp: boolean;
  expireMs: number;
  maxAgeMs: number;
  maxIdleConns: number;
  readTimeoutMs: number;
  maxFails: number;
  /** null = 2 × number of upstreams. */
  maxConnectAttempts: number | null;
  healthCheck: HealthCheckConfig;
  policy: Policy;
  maxConcurrent: number;
  tls: TlsFiles;
  tlsServerName: string | null;
  next: number[];
  nextOnNodata: boolean;
  failover: number[];
  failfastAllUnhealthy: boolean;
  sourceAddress: string | null;
  resolvers: string[];
  dohMethod: 'GET' | 'POST';
}

const MAX_TO = 15;

export function defaultConfig(): ForwardConfig {
  return {
    from: '.',
    fromCidr: null,
    to: [],
    except: [],
    forceTcp: false,
    preferUdp: false,
    expireMs: 10_000,
    maxAgeMs: 0,
    maxIdleConns: 0,
    readTimeoutMs: 2000,
    maxFails: 2,
    maxConnectAttempts: null,
    healthCheck: { intervalMs: 500, recursionDesired: true, domain: '.' },
    policy: 'random',
    maxConcurrent: 0,
    tls: { cert: null, key: null, ca: null },
    tlsServerName: null,
    next: [],
    nextOnNodata: false,
    failover: [],
    failfastAllUnhealthy: false,
    sourceAddress: null,
    resolvers: [],
    dohMethod: 'POST',
  };
}

/** Parse every `forward` occurrence of a block. */
export function parseForward(d: Dispenser): ForwardConfig[] {
  const out: ForwardConfig[] = [];
  while (d.next()) out.push(parseStanza(d));
  return out;
}

function parseStanza(d: Dispenser): ForwardConfig {
  const cfg = defaultConfig();
  if (!d.nextArg()) throw d.argErr();
  const fromArg = d.val();
  const zones = normalizeZoneArg(fromArg);
  if (zones.length === 0) throw d.err(`unable to normalize '${fromArg}'`);
  cfg.from = zones[0]!;
  if (zones.length > 1) cfg.fromCidr = fromArg;
  const toArgs = d.remainingArgs();
  if (toArgs.length === 0) throw d.argErr();
  const seen = new Set<string>();
  for (const arg of toArgs) {
    for (const spec of parseTo(d, arg)) {
      const key = spec.kind === 'addr' ? `${spec.scheme}|${spec.host}|${spec.port}` : `${spec.scheme}|${spec.name}|${spec.port}`;
      if (seen.has(key)) continue;
      seen.add(key);
      cfg.to.push(spec);
    }
  }
  if (cfg.to.length > MAX_TO) throw d.err(`more than ${MAX_TO} TOs configured: ${cfg.to.length}`);
  while (d.nextBlock()) parseOption(d, cfg);
  if (cfg.tlsServerName && cfg.to.some((t) => t.serverName !== null)) {
    throw d.err('tls_servername cannot be combined with a per-upstream server name (tls://IP%NAME)');
  }
  if (cfg.maxAgeMs > 0 && cfg.maxAgeMs < cfg.expireMs) throw d.err('max_age must not be smaller than expire');
  return cfg;
}

function parseTo(d: Dispenser, arg: string): ToSpec[] {
  let scheme: Scheme = 'dns';
  let rest = arg;
  const sep = arg.indexOf('://');
  if (sep >= 0) {
    const s = arg.slice(0, sep).toLowerCase();
    rest = arg.slice(sep + 3);
    if (s === 'dns') scheme = 'dns';
    else if (s === 'tls') scheme = 'tls';
    else if (s === 'https') scheme = 'https';
    else throw d.err(`unsupported scheme '${s}' in "${arg}": only dns://, tls:// and https:// are accepted`);
  }
  if (rest === '') throw d.err(`invalid address: "${arg}"`);
  if (scheme === 'https' && rest.includes('/')) throw d.err(`DNS over HTTPS upstreams use the fixed path /dns-query, remove the path from "${arg}"`);
  const defPort = scheme === 'tls' ? 853 : scheme === 'https' ? 443 : 53;
  let serverName: string | null = null;
  if (scheme !== 'dns') {
    // tls://IP%servername[:PORT] (also https://)
    const m = /^(\[[^\]]+\]|[^%]+)%([^:\]]+)(:\d+)?$/.exec(rest);
    if (m && isIP(stripBrackets(m[1]!)) !== 0) {
      serverName = m[2]!;
      rest = m[1]! + (m[3] ?? '');
    }
  }
  const hp = splitHostPort(rest);
  if (hp) {
    const host = stripZone(hp.host);
    if (isIP(host) !== 0) return [{ kind: 'addr', scheme, host, port: hp.port, serverName }];
    if (isHostname(hp.host)) return [{ kind: 'hostname', scheme, name: fqdn(hp.host.toLowerCase()), port: hp.port, serverName }];
  } else {
    const host = stripZone(stripBrackets(rest));
    if (isIP(host) !== 0) return [{ kind: 'addr', scheme, host, port: defPort, serverName }];
  }
  const fromFile = tryResolvConf(rest);
  if (fromFile) return fromFile.map((host) => ({ kind: 'addr', scheme, host, port: defPort, serverName: null, file: rest }));
  if (!hp && isHostname(rest)) return [{ kind: 'hostname', scheme, name: fqdn(rest.toLowerCase()), port: defPort, serverName }];
  throw d.err(`not an IP address or file: "${rest}"`);
}

function stripBrackets(s: string): string {
  return s.startsWith('[') && s.endsWith(']') ? s.slice(1, -1) : s;
}

function stripZone(s: string): string {
  const i = s.indexOf('%');
  return i >= 0 ? s.slice(0, i) : s;
}

/** `host:port` / `[v6]:port` → parts; undefined when there is no port. */
function splitHostPort(s: string): { host: string; port: number } | undefined {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(s) ?? /^([^:[\]]+):(\d+)$/.exec(s);
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: m[1]!, port };
}

function isHostname(s: string): boolean {
  if (!/^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$/.test(s)) return false;
  if (/^[\d.]+$/.test(s)) return false; // a malformed IPv4 address is not a hostname
  return isDomainName(fqdn(s));
}

/** Nameservers of a resolv.conf-style file, or undefined when `path` is not a readable file. */
export function tryResolvConf(path: string): string[] | undefined {
  try {
    if (!statSync(path).isFile()) return undefined;
  } catch {
    return undefined;
  }
  return parseResolvConf(readFileSync(path, 'utf8'));
}

export function parseResolvConf(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const fields = line.replace(/[#;].*$/, '').trim().split(/\s+/);
    if (fields[0] !== 'nameserver' || fields.length < 2) continue;
    const ip = stripZone(fields[1]!);
    if (isIP(ip) !== 0) out.push(ip);
  }
  return out;
}

function parseIntArg(d: Dispenser, what: string, allowNegative = false): number {
  if (!d.nextArg()) throw d.argErr();
  const v = d.val();
  if (!/^[+-]?\d+$/.test(v)) throw d.err(`strconv.Atoi: parsing "${v}": invalid syntax`);
  const n = Number(v);
  if (!allowNegative && n < 0) throw d.err(`${what} can't be negative: ${n}`);
  return n;
}

function parseDurationArg(d: Dispenser, what: string): number {
  if (!d.nextArg()) throw d.argErr();
  const v = d.val();
  const ms = parseDuration(v);
  if (ms === undefined) throw d.err(`time: invalid duration "${v}"`);
  if (ms < 0) throw d.err(`${what} can't be negative: ${v}`);
  return ms;
}

function noArgs(d: Dispenser): void {
  if (d.nextArg()) throw d.argErr();
}

function parseRcodes(d: Dispenser, what: string): number[] {
  const args = d.remainingArgs();
  if (args.length === 0) throw d.argErr();
  return args.map((a) => {
    const rc = rcodeFromName(a);
    if (rc === undefined || /^\d+$/.test(a)) throw d.err(`${a} is not a valid rcode`);
    if (what === 'failover' && rc === Rcode.NOERROR) throw d.err('NoError cannot be used in failover');
    return rc;
  });
}

function readPem(d: Dispenser, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw d.err(`failed to read ${path}: ${(e as Error).message}`);
  }
}

function parseOption(d: Dispenser, cfg: ForwardConfig): void {
  const opt = d.val();
  switch (opt) {
    case 'except': {
      const names = d.remainingArgs();
      if (names.length === 0) throw d.argErr();
      for (const n of names) cfg.except.push(...normalizeZoneArg(n));
      return;
    }
    case 'force_tcp': noArgs(d); cfg.forceTcp = true; return;
    case 'prefer_udp': noArgs(d); cfg.preferUdp = true; return;
    case 'expire': cfg.expireMs = parseDurationArg(d, 'expire'); return;
    case 'max_age': cfg.maxAgeMs = parseDurationArg(d, 'max_age'); return;
    case 'max_idle_conns': cfg.maxIdleConns = parseIntArg(d, 'max_idle_conns'); return;
    case 'read_timeout': {
      cfg.readTimeoutMs = parseDurationArg(d, 'read_timeout');
      if (cfg.readTimeoutMs <= 0) throw d.err('read_timeout must be greater than 0');
      return;
    }
    case 'max_fails': cfg.maxFails = parseIntArg(d, 'max_fails'); return;
    case 'max_connect_attempts': cfg.maxConnectAttempts = parseIntArg(d, 'max_connect_attempts'); return;
    case 'health_check': {
      const intervalMs = parseDurationArg(d, 'health_check');
      let recursionDesired = true;
      let domain = '.';
      while (d.nextArg()) {
        const w = d.val();
        if (w === 'no_rec') recursionDesired = false;
        else if (w === 'domain') {
          if (!d.nextArg()) throw d.argErr();
          const name = fqdn(d.val());
          if (!isDomainName(name)) throw d.err(`health_check: invalid domain name ${d.val()}`);
          domain = name;
        } else throw d.err(`health_check: unknown option ${w}`);
      }
      cfg.healthCheck = { intervalMs, recursionDesired, domain };
      return;
    }
    case 'policy': {
      if (!d.nextArg()) throw d.argErr();
      const p = d.val();
      if (p !== 'random' && p !== 'round_robin' && p !== 'sequential') throw d.err(`unknown policy '${p}'`);
      cfg.policy = p;
      return;
    }
    case 'max_concurrent': cfg.maxConcurrent = parseIntArg(d, 'max_concurrent'); return;
    case 'tls': {
      const args = d.remainingArgs();
      if (args.length > 3) throw d.argErr();
      if (args.length === 1) cfg.tls = { cert: null, key: null, ca: readPem(d, args[0]!) };
      else if (args.length >= 2) {
        cfg.tls = { cert: readPem(d, args[0]!), key: readPem(d, args[1]!), ca: args[2] ? readPem(d, args[2]) : null };
      }
      return;
    }
    case 'tls_servername': {
      if (!d.nextArg()) throw d.argErr();
      cfg.tlsServerName = d.val();
      return;
    }
    case 'doh_method': {
      if (!d.nextArg()) throw d.argErr();
      const m = d.val().toUpperCase();
      if (m !== 'GET' && m !== 'POST') throw d.err(`doh_method must be GET or POST, not '${d.val()}'`);
      cfg.dohMethod = m;
      return;
    }
    case 'next': cfg.next = parseRcodes(d, 'next'); return;
    case 'next_on_nodata': noArgs(d); cfg.nextOnNodata = true; return;
    case 'failover': cfg.failover = parseRcodes(d, 'failover'); return;
    case 'failfast_all_unhealthy_upstreams': noArgs(d); cfg.failfastAllUnhealthy = true; return;
    case 'source_address': {
      if (!d.nextArg()) throw d.argErr();
      if (isIP(d.val()) === 0) throw d.err(`source_address: not an IP address: ${d.val()}`);
      cfg.sourceAddress = d.val();
      return;
    }
    case 'resolver': {
      const args = d.remainingArgs();
      if (args.length === 0) throw d.argErr();
      for (const a of args) {
        const hp = splitHostPort(a);
        const host = hp ? hp.host : stripBrackets(a);
        if (isIP(host) === 0) throw d.err(`resolver: not an IP address: ${a}`);
        cfg.resolvers.push(hp ? `${hp.host.includes(':') ? `[${hp.host}]` : hp.host}:${hp.port}` : host);
      }
      return;
    }
    default:
      throw d.err(`unknown property '${opt}'`);
  }
}

/** Loopback address (127/8, ::1): forwarding there from a cluster DNS server usually loops. */
export function isLoopback(host: string): boolean {
  return /^127\./.test(host) || host === '::1' || /^::ffff:127\./.test(host);
}

/**
 * Configuration smells worth a warning at start-up: a FROM CIDR that is not on an octet boundary,
 * and (docs/operations.md, "Forwarding loops") a
 * resolv.conf TO that lists a loopback resolver (systemd-resolved's 127.0.0.53 on the node), or
 * a TO that is this server's own listener.
 */
export function setupWarnings(cfg: ForwardConfig, ownPort: number): string[] {
  const out: string[] = [];
  if (cfg.fromCidr) out.push(`${cfg.fromCidr} expands to several reverse zones; only ${cfg.from} is forwarded`);
  if (cfg.to.length === 0) out.push(`no upstream for ${cfg.from}: the resolv.conf files given list no nameserver, queries will fail with SERVFAIL`);
  for (const t of cfg.to) {
    if (t.kind !== 'addr' || !isLoopback(t.host)) continue;
    if (t.file) {
      out.push(`${t.file} lists nameserver ${t.host}, a loopback address: if it is a local stub resolver such as systemd-resolved, queries will loop or bypass the real upstream; `
        + 'point the kubelet\'s --resolv-conf at the real resolver list (e.g. /run/systemd/resolve/resolv.conf) or forward to explicit upstream addresses');
    } else if (t.port === ownPort) {
      out.push(`upstream ${t.host}:${t.port} is this server's own listener: queries forwarded there will loop`);
    }
  }
  return out;
}
