/**
 * Go's `net.SplitHostPort`, with Go's error texts (`address foo: missing port in address`): what a
 * Corefile setup reports for a malformed listen ADDRESS (health, ready, prometheus), and how forward
 * tells `host:port` from a bare host.
 */
import { isIP } from 'node:net';

export interface HostPort {
  /** Host without brackets; '' = all interfaces. */
  readonly host: string;
  /** Port text as written (validated when listening). */
  readonly port: string;
}

export class AddressError extends Error {
  constructor(addr: string, why: string) {
    super(`address ${addr}: ${why}`);
    this.name = 'AddressError';
  }
}

/** Go's `net.SplitHostPort`; throws AddressError with Go's message. */
export function splitHostPort(hostport: string): HostPort {
  const missingPort = 'missing port in address';
  const tooManyColons = 'too many colons in address';
  const i = hostport.lastIndexOf(':');
  if (i < 0) throw new AddressError(hostport, missingPort);
  let host: string;
  let j = 0;
  let k = 0;
  if (hostport[0] === '[') {
    const end = hostport.indexOf(']');
    if (end < 0) throw new AddressError(hostport, "missing ']' in address");
    if (end + 1 === hostport.length) throw new AddressError(hostport, missingPort);
    if (end + 1 !== i) {
      if (hostport[end + 1] === ':') throw new AddressError(hostport, tooManyColons);
      throw new AddressError(hostport, missingPort);
    }
    host = hostport.slice(1, end);
    j = 1;
    k = end + 1;
  } else {
    host = hostport.slice(0, i);
    if (host.includes(':')) throw new AddressError(hostport, tooManyColons);
  }
  if (hostport.slice(j).includes('[')) throw new AddressError(hostport, "unexpected '[' in address");
  if (hostport.slice(k).includes(']')) throw new AddressError(hostport, "unexpected ']' in address");
  return { host, port: hostport.slice(i + 1) };
}

/** Go's net.ParseIP after CoreDNS's parse.stripZone (an IPv6 zone `%eth0` is allowed). */
export function isIPText(s: string): boolean {
  const p = s.lastIndexOf('%');
  return isIP(p >= 0 ? s.slice(0, p) : s) !== 0;
}

/** Go's net.JoinHostPort. */
export function joinHostPort(host: string, port: string): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * CoreDNS's parse.HostPort(s, defaultPort): an IP address with a port (`defaultPort` when none was
 * given), or the error text (`must specify an IP address: ...`). The addresses of transfer's `to`
 * and secondary's `transfer from`.
 */
export function normalizeHostPort(s: string, defaultPort: string): string | Error {
  let hp: HostPort | null = null;
  try {
    hp = splitHostPort(s);
  } catch {
    hp = null;
  }
  if (hp === null) {
    if (!isIPText(s)) return new Error(`must specify an IP address: \`${s}'`);
    return joinHostPort(s, defaultPort);
  }
  if (!isIPText(hp.host)) return new Error(`must specify an IP address: \`${hp.host}'`);
  return joinHostPort(hp.host, hp.port === '' ? defaultPort : hp.port);
}
