/**
 * The signature cache: RRSIGs by RRset, bounded as CoreDNS's plugin/pkg/cache is — 256 shards of
 * `max(4, capacity/256)` entries each; a full shard drops one entry (here its oldest; Go drops a
 * random one) before taking a new key. An entry whose signatures reach 3/4 of their 8-day life is
 * a miss, and a sweep every 8 hours deletes such entries (plugin/dnssec/cache.go).
 */
import { validAt } from '../../src/dnssec/rrsig.js';

/** One RRSIG as cached: owner (wire, case kept), class, TTL and RDATA. */
export interface CachedSig {
  readonly owner: Buffer;
  readonly class: number;
  readonly ttl: number;
  readonly rdata: Buffer;
}

const SHARDS = 256;
/** A cached signature is used while it stays valid two more days (3/4 of the 8 days signed for). */
export const TWO_DAYS_S = 2 * 24 * 3600;

/** FNV-1a over the key's characters, for the shard. */
function shardOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) & (SHARDS - 1);
}

export class SignatureCache {
  private readonly shards: Map<string, CachedSig[]>[] = Array.from({ length: SHARDS }, () => new Map());
  private readonly shardSize: number;
  private count = 0;

  constructor(capacity: number) {
    this.shardSize = Math.max(4, Math.trunc(capacity / SHARDS));
  }

  get size(): number {
    return this.count;
  }

  /** The signatures of `key` when all are still valid two days from `nowS` (Unix seconds). */
  get(key: string, nowS: number): CachedSig[] | undefined {
    const sigs = this.shards[shardOf(key)]!.get(key);
    if (sigs === undefined) return undefined;
    const at = nowS + TWO_DAYS_S;
    for (const s of sigs) if (!validAt(s.rdata, at)) return undefined;
    return sigs;
  }

  /** Is `key` cached with signatures valid two days from `nowS`? (no allocation) */
  has(key: string, nowS: number): boolean {
    return this.get(key, nowS) !== undefined;
  }

  add(key: string, sigs: CachedSig[]): void {
    const shard = this.shards[shardOf(key)]!;
    if (shard.size >= this.shardSize && !shard.has(key)) {
      const oldest = shard.keys().next();
      if (oldest.done !== true) {
        shard.delete(oldest.value);
        this.count--;
      }
    }
    if (!shard.has(key)) this.count++;
    shard.set(key, sigs);
  }

  /** Delete every entry with a signature not valid two days from `nowS` (the periodic sweep). */
  sweep(nowS: number): void {
    const at = nowS + TWO_DAYS_S;
    for (const shard of this.shards) {
      for (const [k, sigs] of shard) {
        if (sigs.some((s) => !validAt(s.rdata, at))) {
          shard.delete(k);
          this.count--;
        }
      }
    }
  }
}
