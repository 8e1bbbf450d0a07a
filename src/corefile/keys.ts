/**
 * Server-block keys: `[SCHEME://]ZONE[:PORT]` (docs/corefile.md §6.1, §6.3).
 *
 * Mirrors CoreDNS's `normalizeZone` + `plugin.SplitHostPort`, except that a key with any other
 * `xyz://` prefix is rejected instead of being read as part of the zone, and a zone containing `{`
 * is rejected (§9 #27). `tls://` (DoT), `https://` (DoH), `grpc://`, `quic://` and `https3://` are
 * parsed with their own default ports (§6.1; QUIC refuses to start, §7.5).
 */
import { fqdn, isDomainName, reverseZonesFromCidr } from '../dns/name.js';
import { ConfigError, type Token } from './types.js';

/** A served transport: plain DNS, DoT, DoH, gRPC, DoQ, DoH3 (docs/corefile.md §6.1). */
export type KeyScheme = 'dns' | 'tls' | 'https' | 'grpc' | 'quic' | 'https3';

/** CoreDNS's default port of each transport without an explicit one (`dns` uses `-dns.port`). */
const DEFAULT_PORTS: Readonly<Record<Exclude<KeyScheme, 'dns'>, number>> = {
  tls: 853,
  quic: 853,
  https: 443,
  grpc: 443,
  https3: 443,
};

export interface ServerKey {
  readonly scheme: KeyScheme;
  /** Normalised (lower-case, absolute) zone; for a CIDR key the first of `zones`. */
  readonly zone: string;
  /** All zones of the key: one, or the reverse zones a CIDR key expands to. */
  readonly zones: string[];
  /** Explicit port, or the `-dns.port` default. */
  readonly port: number;
  /** The key as written (after environment substitution), e.g. `dns://Example.ORG:1053`. */
  readonly text: string;
  readonly token: Token;
}

function isKeyScheme(s: string): s is Exclude<KeyScheme, 'dns'> {
  return Object.hasOwn(DEFAULT_PORTS, s);
}

/**
 * Parse one server-block key. `dnsPort` is the `-dns.port` value used when the key has no port.
 * Throws a `ConfigError` located at the key's token.
 */
export function parseServerKey(key: Token, dnsPort: number): ServerKey {
  const fail = (msg: string): ConfigError => new ConfigError(msg, key.file, key.line);
  let rest = key.text;

  // Scheme. CoreDNS only strips the prefixes it knows (case-sensitively) and would treat anything
  // else as part of the zone (`foo://x` → zone `foo://x.`); a key containing `://` is always a
  // mistake, so any scheme but the served ones is an error here.
  const sep = rest.indexOf('://');
  let scheme: KeyScheme = 'dns';
  if (sep >= 0) {
    const s = rest.slice(0, sep).toLowerCase();
    if (s !== 'dns') {
      // Like CoreDNS, the transport prefixes are matched as written (`TLS://` is no transport).
      const written = rest.slice(0, sep);
      if (!isKeyScheme(written)) {
        throw fail(
          `unknown scheme ${written}:// in "${key.text}"; only dns://, tls://, https://, grpc://, quic:// and https3:// are supported`,
        );
      }
      scheme = written;
    }
    rest = rest.slice(sep + 3);
  }

  // Port: the text after the *last* colon, if it is a number (SplitHostPort). This is what makes
  // IPv6 CIDRs work: `fd00::/64` has `/64` after its last colon, so it has no port, while
  // `fd00::/64:1053` does.
  let port = scheme === 'dns' ? dnsPort : DEFAULT_PORTS[scheme];
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
