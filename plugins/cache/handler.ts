/**
 * The cache handler (docs/plugins.md, cache). Entries keep the reply in wire form; a hit copies the
 * bytes and patches id, flags, the question's letter case and the TTLs, and returns synchronously.
 * On a miss the reply written below has its TTLs set to the computed duration (even when it is not
 * stored) and is stored in the success or denial LRU.
 */
import { LRUCache } from 'lru-cache';
import { Flag, Opcode, Qtype, Rcode } from '../../src/dns/constants.js';
import { encodeMessage } from '../../src/dns/encode.js';
import { decode } from '../../src/dns/message.js';
import { isSubdomain, matchZone } from '../../src/dns/name.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import { Query } from '../../src/query.js';
import { cacheClock } from './clock.js';
import * as metrics from './metrics.js';
import { effectiveCapacity, type CacheConfig } from './setup.js';
import { analyze, withoutOpt, type Analysis } from './wire.js';
import { replayStored, setTtls } from '../../src/dns/storedreply.js';
import { storeBytes, type StoredBytes } from '../../src/dns/wire.js';
import { CounterCell } from '../../src/metrics/batch.js';
import { bareReply } from '../../src/server/reply.js';

/** TTL basis for replies without records and for non-cacheable kinds (CoreDNS MinimalDefaultTTL). */
const MINIMAL_DEFAULT_TTL = 5;
/** Upper bound of the message TTL (CoreDNS MaximumDefaulTTL). */
const MAXIMUM_DEFAULT_TTL = 3600;

type BucketKind = 'success' | 'denial';

/**
 * Capacities up to this are given to the LRU as `max`, which allocates every slot up front
 * (fastest, and about 28 bytes a slot). Larger ones bound the entry count through `maxSize`
 * instead, and the LRU's arrays grow with use, as CoreDNS's cache does: preallocating
 * `success 5000000` is about 140 MB in single arrays of 40 MB, which a query thread cannot
 * allocate under its heap bound (docs/multicore.md §7), so the server aborted at startup.
 */
const PREALLOCATED_CAPACITY_MAX = 100_000;
const oneEntry = (): number => 1;

function lruBound(capacity: number): { max: number } | { maxSize: number; sizeCalculation: () => number } {
  return capacity <= PREALLOCATED_CAPACITY_MAX ? { max: capacity } : { maxSize: capacity, sizeCalculation: oneEntry };
}

/** One cached reply. Every field is set in the constructor (one object shape). */
export class Entry {
  /** Popularity within the prefetch window. */
  hits = 0;
  lastHit = 0;
  refreshing = false;
  refreshFailedAt = -Infinity;

  constructor(
    /** The reply without OPT, TTLs already equal to `ttl` (a string: see StoredBytes). */
    readonly wire: StoredBytes,
    readonly ttlOffsets: readonly number[],
    readonly questionEnd: number,
    readonly lname: string,
    readonly qtype: number,
    readonly qclass: number,
    /** Clock time (ms) when stored. */
    readonly stored: number,
    /** Duration in seconds. */
    readonly ttl: number,
    readonly bucket: BucketKind,
    readonly rcode: number,
    readonly flags: number,
  ) {}

  /** Seconds left: duration minus whole seconds elapsed (≤ 0 once expired). */
  remaining(now: number): number {
    return this.ttl - Math.floor((now - this.stored) / 1000);
  }

  matches(q: Query): boolean {
    return this.lname === q.lname && this.qtype === q.qtype && this.qclass === q.qclass;
  }
}

interface Children {
  requests: { inc(): void };
  hitsSuccess: { inc(): void };
  hitsDenial: { inc(): void };
  misses: { inc(): void };
  prefetches: { inc(): void };
  drops: { inc(): void };
  servedStale: { inc(): void };
}

export function cacheKey(q: Query): string {
  const cd = (q.req.flags & Flag.CD) !== 0;
  return `${q.do ? 1 : 0}${cd ? 1 : 0}|${q.qtype}|${q.qclass}|${q.lname}`;
}

export class CacheHandler implements Handler {
  readonly name = 'cache';
  readonly success: LRUCache<string, Entry>;
  readonly denial: LRUCache<string, Entry>;
  private readonly zonesLabel: string;
  private readonly children = new Map<string, Children>();
  private lastServer = '';
  private lastChildren: Children | null = null;
  /** `server` label for evictions (the listener of the query being stored). */
  private storingServer = '';

  constructor(
    readonly cfg: CacheConfig,
    readonly zones: readonly string[],
    readonly next: Handler | null,
    /** The block's view name, the `view` label ('' without a view). */
    readonly view = '',
    /** Zones of the block that are never cached (dynupdate's: src/cachebypass.ts). */
    readonly bypass: readonly string[] = [],
  ) {
    this.zonesLabel = zones.join(',');
    const onDispose =
      (bucket: BucketKind) =>
      (_v: Entry, _k: string, reason: LRUCache.DisposeReason): void => {
        if (reason === 'evict') metrics.evictions.labels(this.storingServer, bucket, this.zonesLabel, this.view).inc();
      };
    this.success = new LRUCache<string, Entry>({
      ...lruBound(effectiveCapacity(cfg.success.capacity)),
      dispose: onDispose('success'),
    });
    this.denial = new LRUCache<string, Entry>({
      ...lruBound(effectiveCapacity(cfg.denial.capacity)),
      dispose: onDispose('denial'),
    });
  }

  private metricsFor(server: string): Children {
    // Almost every query comes from the same listener as the one before.
    if (server === this.lastServer && this.lastChildren) return this.lastChildren;
    const c = this.childrenOf(server);
    this.lastServer = server;
    this.lastChildren = c;
    return c;
  }

  private childrenOf(server: string): Children {
    let c = this.children.get(server);
    if (!c) {
      const z = this.zonesLabel;
      c = {
        // Batched cells: plain increments on the hot path, pushed into prom-client when scraped.
        requests: new CounterCell(metrics.requests, { server, zones: z, view: this.view }),
        hitsSuccess: new CounterCell(metrics.hits, { server, type: 'success', zones: z, view: this.view }),
        hitsDenial: new CounterCell(metrics.hits, { server, type: 'denial', zones: z, view: this.view }),
        misses: new CounterCell(metrics.misses, { server, zones: z, view: this.view }),
        prefetches: new CounterCell(metrics.prefetches, { server, zones: z, view: this.view }),
        drops: new CounterCell(metrics.drops, { server, zones: z, view: this.view }),
        servedStale: new CounterCell(metrics.servedStale, { server, zones: z, view: this.view }),
      };
      this.children.set(server, c);
    }
    return c;
  }

  serve(q: Query): number | Promise<number> {
    if (matchZone(this.zones, q.lname) === undefined) return nextOrFailure(this.name, this.next, q);
    if (this.bypass.length > 0 && matchZone(this.bypass, q.lname) !== undefined)
      return nextOrFailure(this.name, this.next, q);
    // Replies to NOTIFY/UPDATE, zone transfers and odd queries (TC or Z set) are neither cached
    // nor rewritten.
    if (
      q.req.opcode !== Opcode.QUERY ||
      q.qtype === Qtype.AXFR ||
      q.qtype === Qtype.IXFR ||
      (q.req.flags & (Flag.TC | Flag.Z)) !== 0
    ) {
      return nextOrFailure(this.name, this.next, q);
    }
    const m = this.metricsFor(q.transport.server);
    m.requests.inc();
    const now = cacheClock.now();
    const e = this.lookup(q, now);
    if (e) {
      (e.bucket === 'success' ? m.hitsSuccess : m.hitsDenial).inc();
      const rem = e.remaining(now);
      if (rem > 0) {
        if (this.shouldPrefetch(e, now, rem)) {
          m.prefetches.inc();
          this.refresh(q, e, true);
        }
        return this.writeHit(q, e, this.cfg.keepTtl ? Math.floor(e.ttl) : rem);
      }
      const stale = this.cfg.serveStale!;
      if (stale.mode === 'verify') return this.verify(q, e, m);
      m.servedStale.inc();
      if (!e.refreshing && (stale.recheckMs === 0 || now - e.refreshFailedAt >= stale.recheckMs))
        this.refresh(q, e, false);
      return this.writeHit(q, e, stale.responseTtl);
    }
    m.misses.inc();
    const before = q.reply;
    const r = nextOrFailure(this.name, this.next, q);
    if (typeof r === 'number') return this.afterMiss(q, r, before);
    return r.then((rc) => this.afterMiss(q, rc, before));
  }

  /**
   * After a miss: as afterNext, and when the plugins below failed with an error without writing a
   * reply (forward with every upstream down or timing out), cache a SERVFAIL for the servfail
   * duration so client retries are answered from the cache (CoreDNS 1.15.0). A SERVFAIL returned
   * without an error (hosts with no record and no SOA) is not cached, as CoreDNS requires
   * `err != nil`. The client still gets the server's own SERVFAIL for this query.
   */
  private afterMiss(q: Query, rc: number, before: Query['reply']): number {
    if (rc === Rcode.SERVFAIL && q.error !== null && this.cfg.servfailMs > 0 && (!q.reply || q.reply === before)) {
      const out = bareReply(q.raw, q.req.questionEnd, Rcode.SERVFAIL, null);
      const now = cacheClock.now();
      const an = analyze(out, q.lname, q.qtype, q.qclass, q.do, Math.floor(now / 1000));
      if (an) this.store(q, an, out, this.duration(an), now);
      return rc;
    }
    return this.afterNext(q, rc, before);
  }

  /** The usable entry for `q`: denial first, then success (docs/plugins.md, "Serving hits"). */
  lookup(q: Query, now: number): Entry | null {
    const key = cacheKey(q);
    const staleSec = this.staleSec;
    const neg = this.denial.size > 0 ? this.denial.get(key) : undefined;
    const pos = this.success.get(key);
    const negOk = this.usable(neg, q, now);
    const posOk = this.usable(pos, q, now);
    if (negOk) {
      // A cached SERVFAIL does not shadow a still-valid positive entry (nor, with serve_stale,
      // a stale one: answering stale data beats a cached failure, RFC 8767).
      const failure = neg.rcode === Rcode.SERVFAIL || neg.rcode === Rcode.NOTIMP;
      if (posOk && failure && (pos.remaining(now) > 0 || staleSec > 0)) return pos;
      if (posOk && this.cfg.preferPositive) return pos;
      return neg;
    }
    return posOk ? pos : null;
  }

  /** How long past expiry an entry may still be served (serve_stale), in seconds. */
  private get staleSec(): number {
    return this.cfg.serveStale ? this.cfg.serveStale.durationMs / 1000 : 0;
  }

  private usable(e: Entry | undefined, q: Query, now: number): e is Entry {
    if (!e || !e.matches(q)) return false;
    const rem = e.remaining(now);
    return rem > 0 || (this.staleSec > 0 && -rem < this.staleSec);
  }

  private writeHit(q: Query, e: Entry, ttl: number): number {
    const qf = q.req.flags;
    // AA as the cached reply had it (CoreDNS 1.15.0 no longer sets AA on every hit).
    let f = Flag.QR | (qf & 0x7800) | (e.flags & (Flag.AA | Flag.RA)) | (qf & (Flag.RD | Flag.CD)) | (e.flags & 0xf);
    if ((e.flags & Flag.AD) !== 0 && (q.do || (qf & Flag.AD) !== 0)) f |= Flag.AD;
    // The question as asked now: the same name (so the same length), type and class (`matches`).
    const buf = replayStored(e.wire, q.id, f, q.raw, q.req.questionEnd, e.questionEnd);
    setTtls(buf, e.ttlOffsets, Math.max(0, ttl));
    q.writeWire(buf, this.name);
    return e.rcode;
  }

  private shouldPrefetch(e: Entry, now: number, rem: number): boolean {
    const p = this.cfg.prefetch;
    if (!p || p.amount <= 0) return false;
    if (now - e.lastHit > p.durationMs) e.hits = 1;
    else e.hits++;
    e.lastHit = now;
    const threshold = Math.ceil((p.percentage / 100) * e.ttl);
    return !e.refreshing && e.hits >= p.amount && rem <= threshold;
  }

  /** Background refresh of `e` through the plugins below (prefetch or stale refresh). */
  private refresh(q: Query, e: Entry, prefetch: boolean): void {
    e.refreshing = true;
    const bq = new Query(q.raw, q.req, q.transport, q.start);
    bq.zone = q.zone;
    const done = (): void => {
      e.refreshing = false;
      const fresh = this.lookup(bq, cacheClock.now());
      if (!fresh || fresh === e) {
        e.refreshFailedAt = cacheClock.now();
        return;
      }
      if (prefetch) {
        fresh.hits = e.hits;
        fresh.lastHit = e.lastHit;
      }
    };
    Promise.resolve()
      .then(() => nextOrFailure(this.name, this.next, bq))
      .then((rc) => this.afterNext(bq, rc, null))
      .then(done, done);
  }

  /** serve_stale verify: ask below first; serve the stale entry if that fails (or takes too long). */
  private async verify(q: Query, e: Entry, m: Children): Promise<number> {
    const bq = new Query(q.raw, q.req, q.transport, q.start);
    bq.zone = q.zone;
    const stale = this.cfg.serveStale!;
    const work = Promise.resolve()
      .then(() => nextOrFailure(this.name, this.next, bq))
      .then((rc) => this.afterNext(bq, rc, null));
    let timer: NodeJS.Timeout | null = null;
    const timedOut =
      stale.timeoutMs > 0
        ? new Promise<null>((resolve) => {
            timer = setTimeout(() => resolve(null), stale.timeoutMs);
          })
        : null;
    const safe = work.catch(() => null);
    const rc = timedOut ? await Promise.race([safe, timedOut]) : await safe;
    if (timer) clearTimeout(timer);
    const r = bq.reply;
    if (rc !== null && r && (r.rcode === Rcode.NOERROR || r.rcode === Rcode.NXDOMAIN) && (r.flags & Flag.TC) === 0) {
      q.reply = r;
      q.error = bq.error;
      return rc;
    }
    m.servedStale.inc();
    return this.writeHit(q, e, stale.responseTtl);
  }

  /**
   * After the plugins below ran: rewrite the TTLs of the reply they wrote (and AD) in place —
   * `mutableWire()` copies only bytes their writer keeps — and store it when cacheable. Nothing
   * written (`q.reply` unchanged) means the server writes the reply: nothing to do.
   */
  afterNext(q: Query, rc: number, before: Query['reply']): number {
    const reply = q.reply;
    if (!reply || reply === before) return rc;
    const now = cacheClock.now();
    const an = analyze(reply.wire(), q.lname, q.qtype, q.qclass, q.do, Math.floor(now / 1000));
    if (!an) return rc;
    const out = reply.mutableWire();
    const dur = this.duration(an);
    setTtls(out, an.ttlOffsets, Math.floor(dur));
    if (!q.do && (q.req.flags & Flag.AD) === 0) out.writeUInt16BE(an.flags & ~Flag.AD, 2);
    this.store(q, an, out, dur, now);
    return rc;
  }

  private duration(an: Analysis): number {
    const basis =
      an.kind === 'NOERROR' || an.kind === 'DELEGATION' || an.kind === 'NODATA' || an.kind === 'NXDOMAIN'
        ? an.minTtl === Infinity
          ? MINIMAL_DEFAULT_TTL
          : Math.min(an.minTtl, MAXIMUM_DEFAULT_TTL)
        : MINIMAL_DEFAULT_TTL;
    switch (an.kind) {
      case 'NODATA':
      case 'NXDOMAIN':
        return clamp(basis, this.cfg.denial.minTtl, this.cfg.denial.maxTtl);
      case 'SERVERERROR':
        return this.cfg.servfailMs / 1000;
      default:
        return clamp(basis, this.cfg.success.minTtl, this.cfg.success.maxTtl);
    }
  }

  private store(q: Query, an: Analysis, out: Buffer, dur: number, now: number): void {
    if ((an.flags & Flag.TC) !== 0 || dur <= 0) return;
    let bucket: BucketKind;
    if (an.kind === 'NOERROR' || an.kind === 'DELEGATION') bucket = 'success';
    else if (an.kind === 'NODATA' || an.kind === 'NXDOMAIN' || an.kind === 'SERVERERROR') bucket = 'denial';
    else return;
    if (!an.questionMatches) {
      this.metricsFor(q.transport.server).drops.inc();
      return;
    }
    const disabled = bucket === 'success' ? this.cfg.disableSuccess : this.cfg.disableDenial;
    for (const z of disabled) if (isSubdomain(q.lname, z)) return;
    let wire = withoutOpt(out, an.optStart, an.optEnd);
    let offsets = an.ttlOffsets;
    if (!wire) {
      const msg = decode(out);
      msg.additionals = msg.additionals.filter((r) => r.type !== 'OPT');
      wire = encodeMessage(msg);
      const again = analyze(wire, q.lname, q.qtype, q.qclass, false, 0);
      if (!again) return;
      offsets = again.ttlOffsets;
    }
    const entry = new Entry(
      storeBytes(wire),
      offsets,
      q.req.questionEnd,
      q.lname,
      q.qtype,
      q.qclass,
      now,
      dur,
      bucket,
      an.rcode,
      an.flags,
    );
    const key = cacheKey(q);
    this.storingServer = q.transport.server;
    if (bucket === 'success') {
      this.success.set(key, entry);
      this.denial.delete(key);
      metrics.entries.labels(q.transport.server, 'success', this.zonesLabel, this.view).set(this.success.size);
    } else {
      this.denial.set(key, entry);
      metrics.entries.labels(q.transport.server, 'denial', this.zonesLabel, this.view).set(this.denial.size);
    }
  }
}

function clamp(v: number, min: number, max: number): number {
  let t = v;
  if (t < min) t = min;
  if (t > max) t = max;
  return t;
}
