/**
 * Which PROXY headers a listener takes, and from whom (the `proxyproto` directive's settings, the
 * policy of CoreDNS 1.15.0's `ProxyProtoConnPolicy`): a source in `allow` gets `use`; another gets
 * the `default` policy; with no `allow` every source gets `use`, or the `default` when one is set.
 */
import { BlockList, isIPv4 } from 'node:net';

/**
 * `use`: read a header and take the client address from it; `ignore`: read and drop a header,
 * keep the socket's address; `reject`: a header refuses the datagram or connection; `skip`: no
 * header processing, the bytes are the message.
 */
export type ProxyPolicy = 'use' | 'ignore' | 'reject' | 'skip';

export interface ProxyProtoSettings {
  /** Sources allowed to send headers; null = none listed. */
  readonly allow: { readonly v4: BlockList | null; readonly v6: BlockList | null } | null;
  /** The policy of a source not in `allow`; null = `default` not given. */
  readonly defaultPolicy: ProxyPolicy | null;
  /** `udp_session_tracking`: how long a header-only datagram's client is remembered (ms); 0 = off. */
  readonly sessionTtlMs: number;
  /** The most sessions remembered (CoreDNS's default 10240). */
  readonly maxSessions: number;
  /** `tlv_metadata`: keep the v2 TLVs for the `proxyproto/tlv` metadata label. */
  readonly tlvMetadata: boolean;
}

export const DEFAULT_MAX_SESSIONS = 10_240;

/** The policy for a datagram or connection from `ip` (unmapped text). */
export function policyFor(s: ProxyProtoSettings, ip: string): ProxyPolicy {
  const allow = s.allow;
  if (allow === null) return s.defaultPolicy ?? 'use';
  const list = isIPv4(ip) ? allow.v4 : allow.v6;
  if (list !== null && list.check(ip, isIPv4(ip) ? 'ipv4' : 'ipv6')) return 'use';
  return s.defaultPolicy ?? 'ignore';
}
