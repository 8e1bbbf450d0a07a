/**
 * The port of the HTTP side servers' listen addresses (health, ready, prometheus, pprof); splitting
 * `host:port` is src/util/hostport.ts.
 */
import type { HostPort } from '../util/hostport.js';

export { AddressError, splitHostPort, type HostPort } from '../util/hostport.js';

/** Numeric port of a listen address, or an error like Go's `listen tcp :x: unknown port`. */
export function listenPort(addr: string, hp: HostPort): number {
  if (hp.port === '') return 0;
  if (!/^\d+$/.test(hp.port) || Number(hp.port) > 65535) throw new Error(`listen tcp ${addr}: unknown port`);
  return Number(hp.port);
}
