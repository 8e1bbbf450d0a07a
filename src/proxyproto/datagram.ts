/**
 * PROXY protocol on a UDP listener, datagram by datagram, as CoreDNS 1.15.0's
 * `plugin/pkg/proxyproto.PacketConn`: every datagram may start with a v2 header (v1 and non-UDP
 * headers are invalid on UDP); an invalid one, or one from a source whose policy is `reject`, is
 * dropped with a warning and never answered; the reply goes to the socket's peer (the proxy), the
 * query carries the header's client.
 */
import { coreLog } from '../log.js';
import { type ProxyEndpoint, CMD_PROXY, isDatagram, readProxyHeader, tlvHex } from './header.js';
import { DEFAULT_MAX_SESSIONS, policyFor, type ProxyProtoSettings } from './policy.js';
import { ProxySessions } from './sessions.js';

/** A datagram with its header taken off. */
export interface Unwrapped {
  /** The DNS message. */
  readonly payload: Buffer;
  /** The client the header (or a tracked session) named; null = the socket's peer. */
  readonly client: ProxyEndpoint | null;
  /** `proxyproto/tlv` (tlv_metadata only). */
  readonly tlv: string | null;
}

/** One listener's datagram unwrapper (and its sessions, kept across reloads with the settings). */
export class ProxyDatagrams {
  private readonly sessions: ProxySessions | null;

  constructor(readonly settings: ProxyProtoSettings) {
    this.sessions =
      settings.sessionTtlMs > 0
        ? new ProxySessions(settings.sessionTtlMs, settings.maxSessions || DEFAULT_MAX_SESSIONS)
        : null;
  }

  /** The message of `msg` from `peer`:`port`, or null to drop it. */
  unwrap(msg: Buffer, peer: string, port: number, family: 1 | 2): Unwrapped | null {
    const s = this.settings;
    const policy = policyFor(s, peer);
    if (policy === 'skip') return { payload: msg, client: null, tlv: null };
    const r = readProxyHeader(msg, true);
    if (r.kind === 'none' || r.kind === 'more') {
      if (policy === 'use' && this.sessions !== null) {
        const found = this.sessions.lookup(sessionKey(peer, port, family), Date.now());
        if (found) return { payload: msg, client: found.client, tlv: found.tlv };
      }
      return { payload: msg, client: null, tlv: null };
    }
    if (r.kind === 'error')
      return drop(peer, port, family, `parsing Proxy Protocol header (packet size: ${msg.length}): ${r.error}`);
    const h = r.header;
    if (h.version !== 2)
      return drop(peer, port, family, `unsupported Proxy Protocol version ${h.version} (only v2 supported for UDP)`);
    if (!isDatagram(h.transport) || h.source === null) {
      return drop(
        peer,
        port,
        family,
        `PROXY Protocol header is not UDP type (transport protocol: 0x${h.transport.toString(16)})`,
      );
    }
    if (policy === 'reject') return drop(peer, port, family, 'connection rejected by Proxy Protocol connection policy');
    const payload = msg.subarray(r.length);
    if (policy === 'ignore') return { payload, client: null, tlv: null };
    let client: ProxyEndpoint | null = null;
    let tlv: string | null = null;
    if (h.command === CMD_PROXY) {
      client = h.source;
      tlv = s.tlvMetadata ? tlvHex(h.tlvs) : null;
      this.sessions?.store(sessionKey(peer, port, family), client, tlv, Date.now());
    }
    // A header-only datagram opens a tracked session; it carries no query.
    if (this.sessions !== null && payload.length === 0) return null;
    return { payload, client, tlv };
  }
}

function sessionKey(peer: string, port: number, family: 1 | 2): string {
  return family === 2 ? `[${peer}]:${port}` : `${peer}:${port}`;
}

/** Go's PacketConn logs the drop (as a warning of no plugin) and reads on. */
function drop(peer: string, port: number, family: 1 | 2, why: string): null {
  coreLog.warning(`dropping invalid Proxy Protocol packet from ${sessionKey(peer, port, family)}: ${why}`);
  return null;
}
