/**
 * `host:port` addresses of the HTTP side servers (health, ready, prometheus): Go's
 * `net.SplitHostPort` rules and error texts (`address foo: missing port in address`), which is
 * what the Corefile setup of those plugins reports for a malformed ADDRESS.
 */

import type { Dispenser } from '../corefile/dispenser.js';
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

/** Numeric port of a listen address, or an error like Go's `listen tcp :x: unknown port`. */
export function listenPort(addr: string, hp: HostPort): number {
  if (hp.port === '') return 0;
  if (!/^\d+$/.test(hp.port) || Number(hp.port) > 65535) throw new Error(`listen tcp ${addr}: unknown port`);
  return Number(hp.port);
}

/**
 * The optional `[ADDRESS]` argument of the side-server directives (health, ready, prometheus):
 * at most one argument on the directive line, which must be `host:port`. Undefined when absent.
 */
export function readAddressArg(d: Dispenser): string | undefined {
  const args = d.remainingArgs();
  if (args.length > 1) throw d.argErr();
  if (args.length === 0) return undefined;
  try {
    splitHostPort(args[0]!);
  } catch (e) {
    throw d.err((e as Error).message);
  }
  return args[0]!;
}
