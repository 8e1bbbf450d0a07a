/**
 * Server-block keys: `[SCHEME://]ZONE[:PORT]` (docs/corefile.md §6.1, §6.3).
 *
 * Mirrors CoreDNS's `normalizeZone` + `plugin.SplitHostPort`, except that only the schemes in
 * `SCHEME_PORTS` are served: the other schemes CoreDNS knows (tls, quic, https, https3) are
 * rejected instead of being silently served as plain DNS, and a zone containing `{` is rejected
 * (§9 #27).
 */
import { fqdn, isDomainName, reverseZonesFromCidr } from '../dns/name.js';
import { ConfigError, type Token } from './types.js';

/**
 * The schemes served, with the port a key without one gets (CoreDNS's transport ports; `dns://`
 * takes the `-dns.port` value instead, marked 0 here).
 */
const SCHEME_PORTS = { dns: 0, grpc: 443 } as const;

export type Scheme = keyof typeof SCHEME_PORTS;

export interface ServerKey {
  readonly scheme: Scheme;
  /** Normalised (lower-case, absolute) zone; for a CIDR key the first of `zones`. */
  readonly zone: string;
  /** All zones of the key: one, or the reverse zones a CIDR key expands to. */
  readonly zones: string[];
  /** Explicit port, or the scheme's default (`-dns.port` for dns://). */
  readonly port: number;
  /** The key as written (after environment substitution), e.g. `dns://Example.ORG:1053`. */
  readonly text: string;
  readonly token: Token;
}

/** Schemes CoreDNS serves that this product does not (docs/corefile.md §6.1). */
const UNSUPPORTED_SCHEMES = new Set(['tls', 'quic', 'https', 'https3']);

const SUPPORTED = Object.keys(SCHEME_PORTS)
  .map((s) => `${s}://`)
  .join(' and ');

/**
 * Parse one server-block key. `dnsPort` is the `-dns.port` value used when the key has no port.
 * Throws a `ConfigError` located at the key's token.
 */
export function parseServerKey(key: Token, dnsPort: number): ServerKey {
  const fail = (msg: string): ConfigError => new ConfigError(msg, key.file, key.line);
  let rest = key.text;

  // Scheme. CoreDNS only strips the prefixes it knows (case-sensitively) and would treat anything
  // else as part of the zone (`foo://x` → zone `foo://x.`); a key containing `://` is always a
  // mistake, so any scheme not served is an error here.
  let scheme: Scheme = 'dns';
  const sep = rest.indexOf('://');
  if (sep >= 0) {
    const given = rest.slice(0, sep).toLowerCase();
    if (!Object.hasOwn(SCHEME_PORTS, given)) {
      if (UNSUPPORTED_SCHEMES.has(given)) {
        throw fail(`scheme ${given}:// is not supported; only ${SUPPORTED}`);
      }
      throw fail(`unknown scheme ${rest.slice(0, sep)}:// in "${key.text}"; only ${SUPPORTED} are supported`);
    }
    scheme = given as Scheme;
    rest = rest.slice(sep + 3);
  }

  // Port: the text after the *last* colon, if it is a number (SplitHostPort). This is what makes
  // IPv6 CIDRs work: `fd00::/64` has `/64` after its last colon, so it has no port, while
  // `fd00::/64:1053` does.
  let port = scheme === 'dns' ? dnsPort : SCHEME_PORTS[scheme];
  const colon = rest.lastIndexOf(':');
  if (colon >= 0 && colon === rest.length - 1) {
    throw fail(`expecting data after last colon: ${JSON.stringify(rest)}`);
  }
  if (colon >= 0) {
    const p = rest.slice(colon + 1);
    // Go's strconv.Atoi accepts a sign; a signed or out-of-range number is still "a port" (CoreDNS
    // then fails to listen), so reject it here rather than folding it into the zone.
    if (/^[+-]?[0-9]+$/.test(p)) {
      const v = Number(p);
      if (!Number.isInteger(v) || v < 0 || v > 65535) throw fail(`invalid port ${JSON.stringify(p)} in "${key.text}"`);
      port = v;
      rest = rest.slice(0, colon);
    }
  }

  const zoneText = rest.toLowerCase();
  const len = Buffer.byteLength(zoneText);
  if (len > 255) throw fail(`specified zone is too long: ${len} > 255`);
  // Deliberate divergence (§9 #27): CoreDNS would serve a zone literally named `example.org{.`
  // when the brace is glued to the key; no working configuration relies on that.
  if (zoneText.includes('{') || !isDomainName(zoneText) || zoneText === '') {
    throw fail(`zone is not a valid domain name: ${rest}`);
  }

  let zones: string[];
  try {
    zones = reverseZonesFromCidr(zoneText) ?? [fqdn(zoneText)];
  } catch (e) {
    throw fail(e instanceof Error ? e.message : String(e));
  }
  return { scheme, zone: zones[0]!, zones, port, text: key.text, token: key };
}
