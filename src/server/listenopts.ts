/**
 * Listener settings a server block's plugins give to the core (CoreDNS keeps them in the server
 * block's dnsserver.Config): offered as capabilities during setup, read by the core once every
 * setup ran, merged per listener — several blocks on one listener: `debug` if any block has it,
 * each timeout from the last block that sets it (CoreDNS's NewServer order).
 */
import { capability } from '../capabilities.js';

/** The `debug` plugin: no panic recovery on the block's listeners, `[DEBUG]` log lines on. */
export const SERVER_DEBUG = capability<true>('core.debug');

/** The `timeouts` plugin's values; an absent field keeps the listener's default. */
export interface ListenerTimeouts {
  /** Time to receive the first query on a new TCP connection, and a started message (ms). */
  readonly readMs?: number;
  /** Time for a written reply to leave (ms). */
  readonly writeMs?: number;
  /** Time a TCP connection may wait for its next query (ms). */
  readonly idleMs?: number;
  /** Queries served on one TCP connection before it is closed; -1 = unlimited. */
  readonly maxTcpQueries?: number;
}

export const LISTENER_TIMEOUTS = capability<ListenerTimeouts>('core.timeouts');

/** The `https` plugin's DoH limits (CoreDNS's MaxHTTPSConnections / MaxHTTPSStreams). */
export interface HttpsOptions {
  /** Concurrent connections of the listener; 0 = unbounded. CoreDNS's default: 200. */
  readonly maxConnections?: number;
  /** Concurrent HTTP/2 streams per connection; 0 = the HTTP/2 default. CoreDNS's default: 250. */
  readonly maxStreams?: number;
}

export const HTTPS_OPTIONS = capability<HttpsOptions>('core.https');

/**
 * The `quic` and `https3` plugins' limits. Parsed and kept so a `quic://` or `https3://` listener
 * could use them; the runtime has no QUIC, so such a listener refuses to start (§7.5).
 */
export interface QuicOptions {
  readonly maxStreams?: number;
  readonly maxConnections?: number;
  /** `quic` only. */
  readonly workerPoolSize?: number;
}

export const QUIC_OPTIONS = capability<QuicOptions>('core.quic');
export const HTTPS3_OPTIONS = capability<QuicOptions>('core.https3');
