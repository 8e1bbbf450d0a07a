/**
 * Parsing of `grpc FROM TO... { ... }` (README.md), as CoreDNS 1.15.0's plugin/grpc/setup.go: FROM
 * normalised (only its first zone used), each TO an address, `[scheme://]address:port`, a
 * `unix://` socket path or a resolv.conf-style file (plugin/pkg/parse.HostPortOrFile), at most 15
 * of them; `except`, `tls`, `tls_servername`, `policy`, `fallthrough`. TLS material and TO files
 * are read here: their errors are configuration errors.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { BareSetupError } from '../../src/corefile/types.js';
import { directive, file, oneOf, option, parseOccurrence, str, zoneArg } from '../../src/corefile/options.js';
import { normalizeZoneArg } from '../../src/dns/name.js';
import { parseFallthrough, type Fallthrough } from '../../src/fallthrough.js';
import { resolvConfNameservers } from '../../src/util/resolvconf.js';
import { splitHostPort } from '../../src/util/hostport.js';
import type { UpstreamPolicy } from '../../src/upstreampolicy.js';

export type Policy = UpstreamPolicy;

/** One upstream: what to dial, and its name in the `to` metric label (CoreDNS's string). */
export interface Upstream {
  /** The TO as CoreDNS keeps it: `10.0.0.1:53`, `127.0.0.1:9005`, `unix:///run/dns.sock`. */
  readonly label: string;
  readonly host: string;
  readonly port: number;
  /** A unix socket path instead of host and port. */
  readonly socketPath: string | null;
}

export interface GrpcTls {
  readonly cert: Buffer | null;
  readonly key: Buffer | null;
  readonly ca: Buffer | null;
}

export interface GrpcConfig {
  from: string;
  to: Upstream[];
  except: string[];
  /** null: plain HTTP/2 (CoreDNS's insecure credentials); else TLS with these files. */
  tls: GrpcTls | null;
  tlsServerName: string | null;
  policy: Policy;
  fallthrough: Fallthrough;
}

const MAX_TO = 15;

export const GRPC_OPTIONS = directive('grpc', {
  args: { args: [str('FROM')], rest: str('TO'), min: 2 },
  options: [
    option('except', { rest: str('IGNORED_NAMES'), min: 1, repeat: 'all' }),
    option('tls', { rest: file(), max: 3, min: 0 }),
    option('tls_servername', { args: [str('NAME')] }),
    option('policy', {
      args: [
        oneOf(['random', 'round_robin', 'sequential'], 'random|round_robin|sequential', (v) => `unknown policy '${v}'`),
      ],
    }),
    option('fallthrough', { rest: zoneArg() }),
  ],
});

/**
 * Parse the `grpc` occurrence of a block. A second one is refused after the first parsed, with
 * CoreDNS's plugin.ErrOnce, printed bare as CoreDNS returns it (so are the TO errors).
 */
export function parseGrpc(d: Dispenser, resolvePath = (p: string): string => p): GrpcConfig {
  d.next();
  const cfg = parseStanza(d, resolvePath);
  if (d.next()) {
    const t = d.token()!;
    throw new BareSetupError('this plugin can only be used once per Server Block', t.file, t.line, 'grpc');
  }
  return cfg;
}

/** One occurrence; `resolvePath` applies the block's root to the TLS files, as CoreDNS does. */
function parseStanza(d: Dispenser, resolvePath: (p: string) => string): GrpcConfig {
  const occ = parseOccurrence(d, GRPC_OPTIONS);
  const bare = (message: string): BareSetupError =>
    new BareSetupError(message, occ.directive.token.file, occ.directive.token.line, 'grpc');
  const [fromArg, ...toArgs] = occ.directive.raw as [string, ...string[]];
  const zones = normalizeZoneArg(fromArg);
  if (zones.length === 0) throw occ.error(occ.directive, `unable to normalize '${fromArg}'`);
  const to: Upstream[] = [];
  for (const arg of toArgs) {
    try {
      to.push(...hostPortOrFile(arg));
    } catch (e) {
      throw bare((e as Error).message);
    }
  }
  if (to.length > MAX_TO) throw bare(`more than ${MAX_TO} TOs configured: ${to.length}`);
  const cfg: GrpcConfig = {
    from: zones[0]!,
    to,
    except: occ.all('except').flatMap((o) => o.raw.flatMap((n) => normalizeZoneArg(n))),
    tls: null,
    tlsServerName: null,
    policy: occ.str('policy', 0, 'random') as Policy,
    fallthrough: null,
  };
  const tls = occ.last('tls');
  if (tls) {
    const read = (file: string): Buffer => {
      const path = resolvePath(file);
      try {
        return readFileSync(path);
      } catch (e) {
        throw occ.error(tls, `failed to read ${path}: ${(e as Error).message}`);
      }
    };
    const [a, b, c] = tls.raw;
    // 0 args: system CAs; 1: the CA; 2: client cert and key; 3: client cert, key and CA.
    cfg.tls =
      tls.raw.length === 1
        ? { cert: null, key: null, ca: read(a!) }
        : tls.raw.length >= 2
          ? { cert: read(a!), key: read(b!), ca: c ? read(c) : null }
          : { cert: null, key: null, ca: null };
  }
  const name = occ.last('tls_servername');
  if (name) {
    cfg.tlsServerName = name.raw[0]!;
    // CoreDNS makes a TLS configuration for the server name even without a `tls` line.
    cfg.tls ??= { cert: null, key: null, ca: null };
  }
  const ft = occ.last('fallthrough');
  if (ft) cfg.fallthrough = parseFallthrough(ft.values as string[]);
  return cfg;
}

const SCHEMES = ['dns', 'tls', 'quic', 'grpc', 'https', 'unix'];
const DEFAULT_PORTS: Record<string, number> = { dns: 53, tls: 853, quic: 853, grpc: 443, https: 443 };

/** CoreDNS's parse.HostPortOrFile for one TO. Throws with its error text. */
export function hostPortOrFile(h: string): Upstream[] {
  let scheme = 'dns';
  let host = h;
  const sep = h.indexOf('://');
  if (sep >= 0 && SCHEMES.includes(h.slice(0, sep))) {
    scheme = h.slice(0, sep);
    host = h.slice(sep + 3);
  }
  if (host === '') throw new Error(`invalid address: ${JSON.stringify(h)}`);
  if (scheme === 'unix') return [{ label: `unix://${host}`, host: '', port: 0, socketPath: host }];
  let hp: { host: string; port: string } | null = null;
  try {
    hp = splitHostPort(host);
  } catch {
    hp = null;
  }
  if (hp === null) {
    const bare = host.replace(/^\[|\]$/g, '');
    if (isIP(stripZone(bare)) === 0) return fromFile(bare);
    const port = DEFAULT_PORTS[scheme]!;
    const joined = bare.includes(':') ? `[${bare}]:${port}` : `${bare}:${port}`;
    return [
      { label: scheme === 'dns' ? joined : `${scheme}://${joined}`, host: stripZone(bare), port, socketPath: null },
    ];
  }
  if (isIP(stripZone(hp.host)) === 0) return fromFile(host);
  return [{ label: h, host: stripZone(hp.host), port: Number(hp.port), socketPath: null }];
}

function fromFile(path: string): Upstream[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const why = err.code === 'ENOENT' ? `open ${path}: no such file or directory` : err.message;
    throw new Error(
      `not an IP address or file ${JSON.stringify(path)}: failed to open file ${JSON.stringify(path)}: ${JSON.stringify(why)}`,
    );
  }
  return resolvConfNameservers(text).map((ip) => {
    const host = stripZone(ip);
    return { label: host.includes(':') ? `[${host}]:53` : `${host}:53`, host, port: 53, socketPath: null };
  });
}

function stripZone(s: string): string {
  const i = s.lastIndexOf('%');
  return i >= 0 ? s.slice(0, i) : s;
}
