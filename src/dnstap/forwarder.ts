/**
 * FORWARDER_QUERY/FORWARDER_RESPONSE records: the contract between the `dnstap` plugin, which
 * offers a {@link ForwarderTap} under {@link DNSTAP} in its server block, and `forward`, which looks
 * it up in a startup hook and reports each attempt to an upstream (CoreDNS 1.15.0
 * plugin/forward/dnstap.go, which finds the block's dnstap handlers the same way).
 */
import { capability } from '../capabilities.js';
import type { Query } from '../query.js';

/** One attempt of a forwarded query. */
export interface ForwarderAttempt {
  readonly query: Query;
  /** The upstream's address and port. */
  readonly upstreamHost: string;
  readonly upstreamPort: number;
  /** The transport the attempt used. */
  readonly proto: 'udp' | 'tcp';
  /** Our end of the upstream socket, when the attempt got that far. */
  readonly localHost: string | null;
  readonly localPort: number;
  /** When the forwarding of the query began (epoch milliseconds, fractions allowed). */
  readonly startMs: number;
  /** The upstream's reply, or null when the attempt failed. */
  readonly reply: Buffer | null;
}

export interface ForwarderTap {
  tapForwarder(a: ForwarderAttempt): void;
}

export const DNSTAP = capability<ForwarderTap>('dnstap.forwarder');
