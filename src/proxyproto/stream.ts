/**
 * PROXY protocol at the start of a stream (DNS over TCP; a TLS listener would run it on the raw
 * socket before the handshake), as go-proxyproto v0.15.0's `Listener`/`Conn` that CoreDNS 1.15.0
 * wraps its TCP listener in: v1 or v2, read before the first message; an invalid header, or any
 * header from a source whose policy is `reject`, closes the connection; the bytes after the header
 * are the stream.
 */
import { type ProxyEndpoint, CMD_PROXY, readProxyHeader, tlvHex } from './header.js';
import type { ProxyPolicy, ProxyProtoSettings } from './policy.js';

export type StreamStart =
  | { readonly kind: 'more' }
  | { readonly kind: 'close' }
  | {
      readonly kind: 'ok';
      /** The stream's bytes after the header. */
      readonly rest: Buffer;
      /** The client (and the address it connected to) from the header; null = the socket's. */
      readonly client: ProxyEndpoint | null;
      readonly local: ProxyEndpoint | null;
      readonly tlv: string | null;
    };

const MORE: StreamStart = { kind: 'more' };
const CLOSE: StreamStart = { kind: 'close' };

/**
 * Look for a header in the first bytes `buf` of a connection with `policy` (never `skip`: such a
 * connection is not looked at).
 */
export function readStreamStart(settings: ProxyProtoSettings, policy: ProxyPolicy, buf: Buffer): StreamStart {
  const r = readProxyHeader(buf, false);
  if (r.kind === 'more') return MORE;
  if (r.kind === 'none') return { kind: 'ok', rest: buf, client: null, local: null, tlv: null };
  if (r.kind === 'error' || policy === 'reject') return CLOSE;
  const rest = buf.subarray(r.length);
  const h = r.header;
  if (policy === 'ignore' || h.command !== CMD_PROXY || h.source === null) {
    return { kind: 'ok', rest, client: null, local: null, tlv: null };
  }
  return {
    kind: 'ok',
    rest,
    client: h.source,
    local: h.destination,
    tlv: settings.tlvMetadata ? tlvHex(h.tlvs) : null,
  };
}
