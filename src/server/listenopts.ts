/**
 * Listener settings a server block's plugins give to the core (CoreDNS keeps them in the server
 * block's dnsserver.Config): offered as capabilities during setup, read by the core once every
 * setup ran, merged per listener — several blocks on one listener: `debug` if any block has it,
 * each timeout from the last block that sets it (CoreDNS's NewServer order).
 */
import { capability } from '../capabilities.js';
import type { TsigKeyring } from '../dns/tsig.js';
import type { ProxyProtoSettings } from '../proxyproto/policy.js';

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

/**
 * The `grpc_server` plugin's limits for a grpc:// listener (CoreDNS's MaxGRPCStreams and
 * MaxGRPCConnections); an absent field keeps the default, 0 is unbounded.
 */
export interface GrpcServerLimits {
  /** Concurrent streams per HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS). */
  readonly maxStreams?: number;
  /** Concurrent connections the listener serves; more wait, unread, until one closes. */
  readonly maxConnections?: number;
}

export const GRPC_SERVER_LIMITS = capability<GrpcServerLimits>('core.grpcServer');

/**
 * The `proxyproto` plugin's settings (src/proxyproto/policy.ts): PROXY headers on the block's UDP
 * and TCP listeners. Several blocks on one listener: the last block that has it (CoreDNS's
 * NewServer order).
 */
export const LISTENER_PROXYPROTO = capability<ProxyProtoSettings>('core.proxyproto');

/** The `shed` plugin: load shedding on the block's UDP listener sockets (src/server/shed.ts). */
export const LISTENER_SHED = capability<true>('core.shed');

/**
 * The `multisocket` plugin: sockets per listen address in each query thread. Several blocks on one
 * address: the first block that binds it decides, as in CoreDNS.
 */
export const LISTENER_SOCKETS = capability<number>('core.sockets');

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

/**
 * The `tsig` plugin's keys. CoreDNS verifies a request's TSIG in the server, before routing, with
 * the keys of every block on the listener (its dnsserver.Server TsigSecret: a later block's key
 * replaces an earlier one of the same name); the tsig plugin of the block then acts on the result.
 */
export const LISTENER_TSIG_KEYS = capability<TsigKeyring>('core.tsig');

/**
 * The block takes RFC 2136 UPDATE messages (`dynupdate`; CoreDNS's Config.AllowOpcode). The
 * listener then reads UPDATE messages instead of answering NOTIMP at once, and a block of the
 * listener without it still answers NOTIMP.
 */
export const BLOCK_UPDATE = capability<true>('core.update');
