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
import {
  directive,
  duration,
  file,
  int,
  oneOf,
  option,
  parseOccurrences,
  str,
  type ParsedOccurrence,
  type ParsedOption,
} from '../../src/corefile/options.js';
import { formatGoDuration } from '../../src/util/duration.js';
import { isLoopback } from '../../src/util/ip.js';
import { splitHostPort as goSplitHostPort } from '../../src/util/hostport.js';
import type { HealthCheckConfig, Scheme } from './proxy.js';
import type { UpstreamPolicy } from '../../src/upstreampolicy.js';

export type Policy = UpstreamPolicy;

/** One TO after parsing: an address, or a hostname resolved at start-up. */
export type ToSpec =
  | {
      readonly kind: 'addr';
      readonly scheme: Scheme;
      readonly host: string;
      readonly port: number;
      readonly serverName: string | null;
      readonly file?: string;
      /** Written `quic://` (DoQ, CoreDNS 1.15.0): parsed as a TLS upstream, refused at start (README). */
      readonly quic?: true;
    }
  | {
      readonly kind: 'hostname';
      readonly scheme: Scheme;
      readonly name: string;
      readonly port: number;
      readonly serverName: string | null;
      readonly quic?: true;
    };

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

/** Go's strconv.ParseUint text (max_fails, max_connect_attempts). */
const parseUintError = (v: string | number): string =>
  `strconv.ParseUint: parsing ${JSON.stringify(String(v))}: invalid syntax`;
const uint = (): ReturnType<typeof int> => int({ min: 0, invalid: parseUintError, range: parseUintError });
const nonNegativeInt = (name: string) =>
  option(name, { args: [int({ min: 0, range: (n) => `${name} can't be negative: ${n}` })] });
const nonNegativeDuration = (name: string) =>
  option(name, { args: [duration({ min: 0, range: (ms) => `${name} can't be negative: ${formatGoDuration(ms)}` })] });
const rcodes = (name: string) =>
  option(name, { rest: str('RCODE', (v) => (rcodeOf(v) === undefined ? `${v} is not a valid rcode` : null)), min: 1 });

export const FORWARD_OPTIONS = directive('forward', {
  // FROM TO...: each TO is an address, a hostname or a resolv.conf file (parseTo below).
  args: { args: [str('FROM')], rest: str('TO'), min: 2 },
  options: [
    option('except', { rest: str('IGNORED_NAMES'), min: 1, repeat: 'all' }),
    option('force_tcp'),
    option('prefer_udp'),
    nonNegativeDuration('expire'),
    nonNegativeDuration('max_age'),
    nonNegativeInt('max_idle_conns'),
    option('read_timeout', {
      args: [duration({ min: 1e-6, range: (ms) => `read_timeout must be positive: ${formatGoDuration(ms)}` })],
    }),
    option('max_fails', { args: [uint()] }),
    option('max_connect_attempts', { args: [uint()] }),
    // DURATION [no_rec] [domain FQDN]
    option('health_check', {
      args: [duration({ min: 0, range: (ms) => `health_check can't be negative: ${Math.round(ms * 1e6)}` })],
      rest: str(),
    }),
    option('policy', {
      args: [
        oneOf(['random', 'round_robin', 'sequential'], 'random|round_robin|sequential', (v) => `unknown policy '${v}'`),
      ],
    }),
    nonNegativeInt('max_concurrent'),
    option('tls', { rest: file(), max: 3, min: 0 }),
    option('tls_servername', { args: [str('NAME')] }),
    rcodes('next'),
    option('next_on_nodata'),
    rcodes('failover'),
    option('failfast_all_unhealthy_upstreams'),
    option('source_address', { args: [str('ADDRESS', (v) => (isIP(v) ? null : `invalid IP address: ${v}`))] }),
    option('resolver', {
      rest: str('ADDRESS', (v) =>
        resolverAddress(v) === undefined ? `resolver must be an IP address or IP:port: ${JSON.stringify(v)}` : null,
      ),
      min: 1,
    }),
    option('doh_method', { args: [oneOf(['POST', 'GET'], 'POST|GET', () => 'doh_method must be either POST or GET')] }),
  ],
});

/** An RCODE name (any case, as miekg/dns StringToRcode), never a number. */
function rcodeOf(v: string): number | undefined {
  return /^\d+$/.test(v) ? undefined : rcodeFromName(v);
}

/** A resolver `IP` or `IP:port`, normalised (`[v6]:port`), or undefined. */
function resolverAddress(a: string): string | undefined {
  const hp = splitHostPort(a);
  const host = hp ? hp.host : stripBrackets(a);
  if (isIP(host) === 0) return undefined;
  return hp ? `${hp.host.includes(':') ? `[${hp.host}]` : hp.host}:${hp.port}` : host;
}

/**
 * Parse every `forward` occurrence of a block; `resolvePath` applies the block's root to the TLS
 * files (SetupContext.resolvePath), as CoreDNS joins them to `config.Root`.
 */
export function parseForward(d: Dispenser, resolvePath = (p: string): string => p): ForwardConfig[] {
  return parseOccurrences(d, FORWARD_OPTIONS, (occ) => parseStanza(d, occ, resolvePath));
}

function parseStanza(d: Dispenser, occ: ParsedOccurrence, resolvePath: (p: string) => string): ForwardConfig {
  const cfg = defaultConfig();
  const [fromArg, ...toArgs] = occ.directive.raw as [string, ...string[]];
  const zones = normalizeZoneArg(fromArg);
  if (zones.length === 0) throw occ.error(occ.directive, `unable to normalize '${fromArg}'`);
  cfg.from = zones[0]!;
  if (zones.length > 1) cfg.fromCidr = fromArg;
  const seen = new Set<string>();
  for (const arg of toArgs) {
    for (const spec of parseTo(occ, arg)) {
      const scheme = spec.quic ? 'quic' : spec.scheme;
      const key = spec.kind === 'addr' ? `${scheme}|${spec.host}|${spec.port}` : `${scheme}|${spec.name}|${spec.port}`;
      if (seen.has(key)) continue;
      seen.add(key);
      cfg.to.push(spec);
    }
  }
  if (cfg.to.length > MAX_TO) throw occ.error(occ.directive, `more than ${MAX_TO} TOs configured: ${cfg.to.length}`);
  applyOptions(occ, cfg, resolvePath);
  if (cfg.tlsServerName && cfg.to.some((t) => t.serverName !== null)) {
    throw d.err('tls_servername cannot be combined with a per-upstream server name (tls://IP%NAME)');
  }
  if (cfg.maxAgeMs > 0 && cfg.maxAgeMs < cfg.expireMs) {
    throw d.err(
      `max_age (${formatGoDuration(cfg.maxAgeMs)}) must not be less than expire (${formatGoDuration(cfg.expireMs)})`,
    );
  }
  return cfg;
}

function parseTo(occ: ParsedOccurrence, arg: string): ToSpec[] {
  // quic://: the same address forms as tls:// (IP%NAME, port 853); the start refuses it.
  if (arg.slice(0, 7).toLowerCase() === 'quic://') {
    return parseTo(occ, `tls://${arg.slice(7)}`).map((t) => ({ ...t, quic: true }));
  }
  const fail = (message: string) => occ.error(occ.directive, message);
  let scheme: Scheme = 'dns';
  let rest = arg;
  const sep = arg.indexOf('://');
  if (sep >= 0) {
    const s = arg.slice(0, sep).toLowerCase();
    rest = arg.slice(sep + 3);
    if (s === 'dns') scheme = 'dns';
    else if (s === 'tls') scheme = 'tls';
    else if (s === 'https') scheme = 'https';
    else throw fail(`unsupported scheme '${s}' in "${arg}": only dns://, tls:// and https:// are accepted`);
  }
  if (rest === '') throw fail(`invalid address: "${arg}"`);
  if (scheme === 'https' && rest.includes('/'))
    throw fail(`DNS over HTTPS upstreams use the fixed path /dns-query, remove the path from "${arg}"`);
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
    if (isHostname(hp.host))
      return [{ kind: 'hostname', scheme, name: fqdn(hp.host.toLowerCase()), port: hp.port, serverName }];
  } else {
    const host = stripZone(stripBrackets(rest));
    if (isIP(host) !== 0) return [{ kind: 'addr', scheme, host, port: defPort, serverName }];
  }
  const fromFile = tryResolvConf(rest);
  if (fromFile)
    return fromFile.map((host) => ({ kind: 'addr', scheme, host, port: defPort, serverName: null, file: rest }));
  if (!hp && isHostname(rest))
    return [{ kind: 'hostname', scheme, name: fqdn(rest.toLowerCase()), port: defPort, serverName }];
  throw fail(`not an IP address or file: "${rest}"`);
}

function stripBrackets(s: string): string {
  return s.startsWith('[') && s.endsWith(']') ? s.slice(1, -1) : s;
}

function stripZone(s: string): string {
  const i = s.indexOf('%');
  return i >= 0 ? s.slice(0, i) : s;
}

/** `host:port` / `[v6]:port` (Go's SplitHostPort) with a port 1..65535 → parts; undefined otherwise. */
function splitHostPort(s: string): { host: string; port: number } | undefined {
  let hp;
  try {
    hp = goSplitHostPort(s);
  } catch {
    return undefined;
  }
  const port = /^\d{1,5}$/.test(hp.port) ? Number(hp.port) : 0;
  if (hp.host === '' || port < 1 || port > 65535) return undefined;
  return { host: hp.host, port };
}

function isHostname(s: string): boolean {
  if (!/^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$/.test(s))
    return false;
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
    const fields = line
      .replace(/[#;].*$/, '')
      .trim()
      .split(/\s+/);
    if (fields[0] !== 'nameserver' || fields.length < 2) continue;
    const ip = stripZone(fields[1]!);
    if (isIP(ip) !== 0) out.push(ip);
  }
  return out;
}

function readPem(occ: ParsedOccurrence, o: ParsedOption, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw occ.error(o, `failed to read ${path}: ${(e as Error).message}`);
  }
}

/** The block options that need more than a declared type. */
function applyOptions(occ: ParsedOccurrence, cfg: ForwardConfig, resolvePath: (p: string) => string): void {
  cfg.except = occ.all('except').flatMap((o) => o.raw.flatMap((n) => normalizeZoneArg(n)));
  cfg.forceTcp = occ.has('force_tcp');
  cfg.preferUdp = occ.has('prefer_udp');
  cfg.expireMs = occ.num('expire', 0, cfg.expireMs);
  cfg.maxAgeMs = occ.num('max_age', 0, cfg.maxAgeMs);
  cfg.maxIdleConns = occ.num('max_idle_conns', 0, cfg.maxIdleConns);
  cfg.readTimeoutMs = occ.num('read_timeout', 0, cfg.readTimeoutMs);
  cfg.maxFails = occ.num('max_fails', 0, cfg.maxFails);
  const attempts = occ.last('max_connect_attempts');
  if (attempts) cfg.maxConnectAttempts = attempts.values[0] as number;
  const hc = occ.last('health_check');
  if (hc) cfg.healthCheck = healthCheck(occ, hc);
  cfg.policy = occ.str('policy', 0, cfg.policy) as Policy;
  cfg.maxConcurrent = occ.num('max_concurrent', 0, cfg.maxConcurrent);
  const tls = occ.last('tls');
  if (tls && tls.raw.length === 1) cfg.tls = { cert: null, key: null, ca: readPem(occ, tls, resolvePath(tls.raw[0]!)) };
  else if (tls && tls.raw.length >= 2) {
    const [cert, key, ca] = tls.raw.map(resolvePath);
    cfg.tls = { cert: readPem(occ, tls, cert!), key: readPem(occ, tls, key!), ca: ca ? readPem(occ, tls, ca) : null };
  }
  const serverName = occ.last('tls_servername');
  if (serverName) cfg.tlsServerName = serverName.raw[0]!;
  cfg.next = (occ.last('next')?.raw ?? []).map((a) => rcodeOf(a)!);
  cfg.nextOnNodata = occ.has('next_on_nodata');
  const failover = occ.last('failover');
  cfg.failover = (failover?.raw ?? []).map((a) => rcodeOf(a)!);
  if (failover && cfg.failover.includes(Rcode.NOERROR)) throw occ.error(failover, 'NoError cannot be used in failover');
  cfg.failfastAllUnhealthy = occ.has('failfast_all_unhealthy_upstreams');
  const source = occ.last('source_address');
  if (source) cfg.sourceAddress = source.raw[0]!;
  cfg.resolvers = (occ.last('resolver')?.raw ?? []).map((a) => resolverAddress(a)!);
  cfg.dohMethod = occ.str('doh_method', 0, cfg.dohMethod) as ForwardConfig['dohMethod'];
}

/** `health_check DURATION [no_rec] [domain FQDN]`. */
function healthCheck(occ: ParsedOccurrence, o: ParsedOption): HealthCheckConfig {
  let recursionDesired = true;
  let domain = '.';
  const words = o.raw.slice(1);
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (w === 'no_rec') recursionDesired = false;
    else if (w === 'domain') {
      const name = words[++i];
      if (name === undefined) throw occ.error(o, "Wrong argument count or unexpected line ending after 'domain'");
      if (!isDomainName(fqdn(name))) throw occ.error(o, `health_check: invalid domain name ${name}`);
      domain = fqdn(name).toLowerCase();
    } else throw occ.error(o, `health_check: unknown option ${w}`);
  }
  return { intervalMs: o.values[0] as number, recursionDesired, domain };
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
  if (cfg.to.length === 0)
    out.push(
      `no upstream for ${cfg.from}: the resolv.conf files given list no nameserver, queries will fail with SERVFAIL`,
    );
  for (const t of cfg.to) {
    if (t.kind !== 'addr' || !isLoopback(t.host)) continue;
    if (t.file) {
      out.push(
        `${t.file} lists nameserver ${t.host}, a loopback address: if it is a local stub resolver such as systemd-resolved, queries will loop or bypass the real upstream; ` +
          "point the kubelet's --resolv-conf at the real resolver list (e.g. /run/systemd/resolve/resolv.conf) or forward to explicit upstream addresses",
      );
    } else if (t.port === ownPort) {
      out.push(`upstream ${t.host}:${t.port} is this server's own listener: queries forwarded there will loop`);
    }
  }
  return out;
}
