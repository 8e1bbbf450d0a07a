/**
 * `udp_session_tracking`: Cloudflare Spectrum sends the PROXY v2 header as a datagram of its own and
 * the queries after it without one; the client the header named is remembered per sending address
 * for a TTL refreshed on every use, in an LRU of bounded size (CoreDNS's expirable LRU).
 */
import type { ProxyEndpoint } from './header.js';

interface Session {
  readonly client: ProxyEndpoint;
  readonly tlv: string | null;
  expires: number;
}

export class ProxySessions {
  /** Insertion order is recency order: the first entry is the least recently used. */
  private readonly map = new Map<string, Session>();

  constructor(
    private readonly ttlMs: number,
    private readonly max: number,
  ) {}

  store(key: string, client: ProxyEndpoint, tlv: string | null, now: number): void {
    this.map.delete(key);
    while (this.map.size >= this.max) {
      const oldest = this.map.keys().next().value;
      if (oldest === undefined) break;
      this.map.delete(oldest);
    }
    this.map.set(key, { client, tlv, expires: now + this.ttlMs });
  }

  /** The session of `key`, its TTL refreshed; undefined when none or expired. */
  lookup(key: string, now: number): { readonly client: ProxyEndpoint; readonly tlv: string | null } | undefined {
    const s = this.map.get(key);
    if (s === undefined) return undefined;
    this.map.delete(key);
    if (s.expires <= now) return undefined;
    s.expires = now + this.ttlMs;
    this.map.set(key, s);
    return s;
  }

  get size(): number {
    return this.map.size;
  }
}
