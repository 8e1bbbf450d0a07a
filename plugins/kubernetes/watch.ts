/**
 * A thin list-and-watch loop for one resource (what client-go's Reflector does, without keeping
 * whole objects): paged list (limit 500 + continue; the limit halved while a page's body is
 * longer than its bound), then a watch from the list's resourceVersion
 * with bookmarks; resume from the last seen resourceVersion when a stream ends; relist and diff on
 * 410 Gone (page by page into the index, never beside a second copy of it: Sink.beginReplace);
 * reconnect with capped exponential backoff and jitter when the API server fails. Every object is
 * converted to a slim record on receipt; malformed objects are skipped with one warning.
 *
 * Liveness (docs/kubernetes-api.md): a watch that delivers nothing — no event, no bookmark — for
 * `livenessMs` is torn down and re-established on a fresh connection (the API server sends a
 * bookmark about once a minute); the backoff starts again from its minimum once a watch delivers
 * something or a list completes; `Retry-After` of a 429 is waited out; the seconds since the last
 * event or bookmark are the `coredns_kubernetes_watch_staleness_seconds` gauge. A resourceVersion
 * below the last one seen (etcd restored or wiped) makes the reflector relist.
 */
import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import type { Logger } from '../../src/log.js';
import { collectGarbage } from '../../src/util/gc.js';
import { ApiError, PageTooLargeError, readJson, retryAfterMs, type ApiClient } from './client.js';
import { objectKey, resourceVersionOf } from './convert.js';
import { stalenessSources } from './metrics.js';
import type { Replacing } from './store.js';
import type { Kind, RecOf } from './types.js';
import { isObj } from '../../src/util/json.js';

export interface ResourceDef<K extends Kind> {
  readonly kind: K;
  /** Collection path, e.g. `/api/v1/services`. */
  readonly path: string;
  readonly labelSelector: string | null;
  readonly fieldSelector: string | null;
  /** Converter: record, malformed reason, or null (ignore). */
  readonly convert: (obj: unknown) => RecOf<K> | string | null;
}

export interface Sink<K extends Kind> {
  /** The first list: the kind's whole content at once (nothing was answered from the kind before). */
  replace(recs: RecOf<K>[]): void;
  /**
   * A relist while serving: the list's pages go in as they arrive and `finish` removes what the
   * list did not hold, so the records of the old and the new list are never all alive together.
   */
  beginReplace(): Replacing<K>;
  upsert(rec: RecOf<K>): void;
  /** Object key (`ns/name` or `name`). */
  remove(key: string): void;
  /** An update that converted to null (ignored object): drop nothing unless the kind says so. */
  ignored(key: string): void;
}

const PAGE = 500;
/** During a first list, a full collection after this many items (see list()). */
const GC_EVERY_ITEMS = 10_000;
/**
 * During a relist, a full collection whenever the heap grew by an eighth of what it held when the
 * relist began, and at least this much (see list()).
 */
const RELIST_GC_MIN_GROWTH_BYTES = 4 * 1024 * 1024;

/**
 * Default liveness bound: 2.5 × the API server's bookmark interval (about a minute), so one late
 * bookmark is not enough to tear a healthy watch down.
 */
export const LIVENESS_DEFAULT_MS = 150_000;
export const BACKOFF_MIN_MS = 200;
export const BACKOFF_MAX_MS = 30_000;
/**
 * Longest watch event line (characters). The API server refuses objects above a few MiB (etcd's
 * request limit is 1.5 MiB), so a longer line is a broken or hostile server: without a bound the
 * partial line would grow until the process runs out of memory.
 */
export const MAX_WATCH_EVENT_CHARS = 16 * 1024 * 1024;
/** Most of an error response's body read for its message (a Status is a few hundred bytes). */
const MAX_ERROR_BODY_CHARS = 64 * 1024;
/**
 * Longest list page body (characters) by default. A page of 500 objects is a few MiB (pods of
 * 10-20 KiB); a longer one has its request repeated with half the `limit` (see list()), and a
 * body past the bound even at `limit=1` (a broken server or proxy sending an endless body) fails
 * the list. 32 Mi characters: parsing such a page peaks at ~75 MiB of heap, well inside the
 * chart's V8 heap bound (179 MiB).
 */
export const MAX_LIST_PAGE_CHARS = 32 * 1024 * 1024;
/** A list page (or the counter probe) that receives no data for this long fails. */
const LIST_IDLE_MS = 60_000;

/** Timing and bounds of a reflector; every field has a default (tests make them small). */
export interface WatchTuning {
  /** A watch that delivers no event and no bookmark for this long is re-established (ms). */
  livenessMs?: number;
  /** Backoff after a failure: from this (ms), doubling, with jitter in [d/2, d) ... */
  backoffMinMs?: number;
  /** ... up to this (ms). */
  backoffMaxMs?: number;
  /** Longest list page body in characters; default {@link MAX_LIST_PAGE_CHARS}. */
  maxListPageChars?: number;
}

export class GoneError extends Error {}
/** The watch delivered nothing for the liveness bound (the reason its request was aborted). */
class SilentWatchError extends Error {}
/** The API server showed a resourceVersion below the last one seen. */
class CounterBackwardsError extends Error {}

/**
 * `a` is an earlier resourceVersion than `b`. resourceVersions are opaque to clients, but every
 * API server backed by etcd uses the decimal etcd revision; anything else is never "earlier".
 */
export function rvBefore(a: string, b: string): boolean {
  if (!/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  const x = a.replace(/^0+(?=\d)/, '');
  const y = b.replace(/^0+(?=\d)/, '');
  return x.length !== y.length ? x.length < y.length : x < y;
}

function describeStatus(kind: string, status: number, body: unknown): string {
  const msg = isObj(body) && typeof body['message'] === 'string' ? `: ${body['message']}` : '';
  if (status === 401) return `401 on ${kind} — credentials rejected${msg}`;
  if (status === 403) return `403 on ${kind} — RBAC missing list/watch${msg}`;
  if (status === 404) return `404 on ${kind} — resource not served by the API server${msg}`;
  return `HTTP ${status} on ${kind}${msg}`;
}

/** `details.retryAfterSeconds` of a Status object, in ms (capped like Retry-After). */
function statusRetryAfter(status: unknown): number | null {
  const d = isObj(status) ? status['details'] : undefined;
  const s = isObj(d) ? d['retryAfterSeconds'] : undefined;
  return typeof s === 'number' && s > 0 ? retryAfterMs(String(Math.floor(s))) : null;
}

/** The watch's resourceVersion is ahead of the server's (504 / ResourceVersionTooLarge). */
function tooLarge(e: ApiError): boolean {
  return e.status === 504 || /too large resource version/i.test(e.message);
}

function secs(ms: number): string {
  return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)}s`;
}

/**
 * The JSON body of an error response, or null. At most {@link MAX_ERROR_BODY_CHARS} are read: a
 * longer body is not a Status, and the response is dropped rather than buffered without bound.
 */
async function errorBody(res: IncomingMessage): Promise<unknown> {
  res.setEncoding('utf8');
  let text = '';
  for await (const c of res) {
    text += c as string;
    if (text.length > MAX_ERROR_BODY_CHARS) {
      res.destroy();
      return null;
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** A controller aborted with `parent` and released (listener removed) once the request is over. */
interface Linked {
  ctl: AbortController;
  release(): void;
}

function linked(parent: AbortSignal): Linked {
  const ctl = new AbortController();
  if (parent.aborted) {
    ctl.abort(parent.reason);
    return { ctl, release: () => undefined };
  }
  const onAbort = (): void => ctl.abort(parent.reason);
  parent.addEventListener('abort', onAbort, { once: true });
  return { ctl, release: () => parent.removeEventListener('abort', onAbort) };
}

export class Reflector<K extends Kind> {
  /** The first list has completed. */
  synced = false;
  /** Why the last attempt failed (readiness reason), or null. */
  lastError: string | null = null;
  /** Failed attempts (errors, silent watches) since start (tests, diagnostics). */
  failures = 0;
  private rv = '';
  private stopped = false;
  private readonly abort = new AbortController();
  private readonly warned = new Set<string>();
  private loop: Promise<void> | null = null;
  /** Called after each completed list (tests, metrics). */
  onList: (() => void) | null = null;
  readonly livenessMs: number;
  private readonly backoffMin: number;
  private readonly backoffMax: number;
  private readonly maxPageChars: number;
  private backoff: number;
  /** performance.now() of the last event, bookmark or completed list. */
  private lastSeen = performance.now();
  private staleLogged = false;
  /** The open watch request and when it last delivered something (or was started). */
  private current: { ctl: AbortController; activity: number } | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  /** When an event last went backwards, and the delay before the relist it caused. */
  private lastBackwards = -Infinity;
  private backwardsWait = 0;
  /**
   * Delay before relisting after a watch answered 410 right after a list: the list reset the
   * backoff, so these relists have their own doubling delay, reset once a watch delivers something.
   */
  private goneWait = 0;
  private readonly staleness = (): [string, number] => [this.def.kind, this.stalenessSeconds()];

  constructor(
    readonly def: ResourceDef<K>,
    private readonly client: ApiClient,
    private readonly sink: Sink<K>,
    private readonly log: Logger,
    tuning: WatchTuning = {},
    /** Watch timeout (server-side) in seconds; randomised in [t, 2t) like client-go. */
    private readonly watchTimeoutSec = 300,
  ) {
    this.livenessMs = tuning.livenessMs ?? LIVENESS_DEFAULT_MS;
    this.backoffMin = tuning.backoffMinMs ?? BACKOFF_MIN_MS;
    this.backoffMax = Math.max(this.backoffMin, tuning.backoffMaxMs ?? BACKOFF_MAX_MS);
    this.maxPageChars = tuning.maxListPageChars ?? MAX_LIST_PAGE_CHARS;
    this.backoff = this.backoffMin;
  }

  start(): void {
    if (this.loop || this.stopped) return;
    this.lastSeen = performance.now();
    stalenessSources.add(this.staleness);
    // One timer per reflector for its whole life (none per request or retry).
    this.watchdog = setInterval(() => this.check(), Math.max(20, Math.min(5000, Math.floor(this.livenessMs / 5))));
    this.watchdog.unref();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
    stalenessSources.delete(this.staleness);
    await this.loop;
  }

  /** Aborted by stop() (tests count its listeners). */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** Seconds since the last event, bookmark or completed list (since start before the first). */
  stalenessSeconds(): number {
    return (performance.now() - this.lastSeen) / 1000;
  }

  /** Something arrived from the API server: fresh again, and the backoff starts over. */
  private fresh(): void {
    const now = performance.now();
    if (this.staleLogged) {
      this.staleLogged = false;
      this.log.info(
        `${this.def.kind}: up to date again after ${secs(now - this.lastSeen)} without an event or bookmark`,
      );
    }
    this.lastSeen = now;
    if (this.current) this.current.activity = now;
    this.backoff = this.backoffMin;
  }

  /** The watchdog: log staleness past the bound once, and abort a watch that went silent. */
  private check(): void {
    const now = performance.now();
    const idle = now - this.lastSeen;
    if (this.synced && idle >= this.livenessMs && !this.staleLogged) {
      this.staleLogged = true;
      this.log.warning(
        `${this.def.kind}: no event or bookmark from the API server for ${secs(idle)} (bound ${secs(this.livenessMs)}); serving the last-known state`,
      );
    }
    const w = this.current;
    if (w && !w.ctl.signal.aborted && now - w.activity >= this.livenessMs) {
      w.ctl.abort(
        new SilentWatchError(
          `watch of ${this.def.kind} delivered nothing (no event, no bookmark) for ${secs(now - w.activity)}`,
        ),
      );
    }
  }

  /**
   * Before a relist because an event went backwards: nothing the first time; when it happens
   * again within 5 minutes (a server whose resourceVersions are not monotonic) a delay doubling
   * from the backoff minimum to its maximum, so such a server cannot keep the reflector relisting.
   */
  private backwardsDelay(): number {
    const now = performance.now();
    const again = now - this.lastBackwards < 300_000;
    this.lastBackwards = now;
    this.backwardsWait = again ? Math.min(this.backoffMax, Math.max(this.backoffMin, this.backwardsWait * 2)) : 0;
    return this.backwardsWait;
  }

  private nextDelay(): number {
    const d = this.backoff / 2 + Math.random() * (this.backoff / 2);
    this.backoff = Math.min(this.backoffMax, this.backoff * 2);
    return d;
  }

  private query(extra: Record<string, string>): string {
    const p = new URLSearchParams();
    if (this.def.labelSelector) p.set('labelSelector', this.def.labelSelector);
    if (this.def.fieldSelector) p.set('fieldSelector', this.def.fieldSelector);
    for (const [k, v] of Object.entries(extra)) p.set(k, v);
    return `${this.def.path}?${p.toString()}`;
  }

  private convert(obj: unknown): RecOf<K> | null | undefined {
    const r = this.def.convert(obj);
    if (typeof r === 'string') {
      const id = `${objectKey(obj) ?? '?'}@${resourceVersionOf(obj) ?? ''}`;
      if (!this.warned.has(id)) {
        if (this.warned.size > 10_000) this.warned.clear();
        this.warned.add(id);
        this.log.warning(`skipping malformed ${this.def.kind} object: ${r}`);
      }
      return undefined;
    }
    return r;
  }

  private async run(): Promise<void> {
    let needList = true;
    /** Ask the API server for its current resourceVersion before the next watch. */
    let checkCounter = false;
    while (!this.stopped) {
      let phase: 'list' | 'probe' | 'watch' = 'list';
      let listed = false;
      try {
        if (needList) {
          await this.list();
          needList = false;
          listed = true;
        } else if (checkCounter) {
          phase = 'probe';
          needList = await this.counterWentBack();
          checkCounter = false;
          if (needList) {
            this.rv = '';
            continue;
          }
        }
        phase = 'watch';
        const t0 = performance.now();
        const lines = await this.watch();
        // A stream that ends at once without events: do not spin.
        if (lines === 0 && performance.now() - t0 < 1000) await this.sleep(this.nextDelay());
      } catch (e) {
        if (this.stopped) break;
        if (e instanceof SilentWatchError) {
          // A dead connection (no FIN, no RST) or a server that stopped sending: a fresh
          // connection at once, after checking that the counter did not go backwards.
          this.failures++;
          this.log.warning(`${e.message}: re-establishing it`);
          this.client.dropIdleConnections();
          checkCounter = true;
          continue;
        }
        if (e instanceof CounterBackwardsError) {
          this.log.warning(e.message);
          needList = true;
          this.rv = ''; // logged once: the relist's resourceVersion is not compared again
          await this.sleep(this.backwardsDelay());
          continue;
        }
        if (e instanceof GoneError && phase === 'watch') {
          // The watch's resourceVersion is too old: relist (and diff) — at once, unless the
          // watch started right after a list (a server that keeps answering 410).
          needList = true;
          if (!listed) continue;
          this.goneWait = Math.min(this.backoffMax, Math.max(this.backoffMin, this.goneWait * 2));
        }
        this.failures++;
        const reason = e instanceof ApiError ? e.message : `${this.def.kind}: ${(e as Error).message}`;
        if (reason !== this.lastError)
          this.log.warning(`${this.synced ? 'watch' : 'list'} of ${this.def.kind} failed: ${reason}`);
        this.lastError = reason;
        let delay = this.nextDelay();
        if (e instanceof GoneError && listed)
          delay = Math.max(delay, this.goneWait / 2 + Math.random() * (this.goneWait / 2));
        if (e instanceof ApiError) {
          if (e.retryAfterMs !== null) delay = Math.max(delay, e.retryAfterMs);
          if (phase === 'watch' && tooLarge(e)) checkCounter = true;
        }
        await this.sleep(delay);
      }
    }
  }

  /** Resolves after ms, or at once on stop(); leaves no listener and no timer behind. */
  private sleep(ms: number): Promise<void> {
    const signal = this.abort.signal;
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const t = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  private async fail(res: IncomingMessage): Promise<never> {
    const status = res.statusCode ?? 0;
    const after = retryAfterMs(res.headers['retry-after']);
    let body: unknown = null;
    try {
      body = await errorBody(res);
    } catch {
      /* keep null */
    }
    if (status === 410) throw new GoneError('410 Gone');
    const wait = status === 429 || status >= 500 ? (after ?? statusRetryAfter(body)) : null;
    throw new ApiError(describeStatus(this.def.kind, status, body), status, wait);
  }

  /**
   * Paged list; replaces the sink's content and records the list's resourceVersion. A page whose
   * body is longer than the bound is asked for again (same `continue`) with half the `limit`,
   * which then stays for the rest of this list; past the bound at `limit=1` the list fails.
   */
  private async list(): Promise<void> {
    // A relist while serving goes into the index page by page: collected whole, the new records
    // would all be alive beside the index they replace (a second copy of it at the relist's peak,
    // when every client of a restarted API server relists at once). A first list is collected and
    // handed over whole, so that nothing is answered from a half-listed kind.
    let replacing = this.synced ? this.sink.beginReplace() : null;
    const recs: RecOf<K>[] = [];
    let cont = '';
    let rv = '';
    let itemsSinceGc = 0;
    let heapAtGc = replacing ? getHeapStatistics().used_heap_size : 0;
    const gcGrowth = Math.max(RELIST_GC_MIN_GROWTH_BYTES, heapAtGc / 8);
    let limit = PAGE;
    for (;;) {
      const extra: Record<string, string> = { limit: String(limit) };
      if (cont) extra['continue'] = cont;
      const { ctl, release } = linked(this.abort.signal);
      let body: unknown;
      try {
        const res = await this.client.get(this.query(extra), ctl.signal, Math.min(LIST_IDLE_MS, this.livenessMs));
        if (res.statusCode === 410 && cont) {
          // Continue token expired: start the list again.
          res.resume();
          recs.length = 0;
          if (replacing) replacing = this.sink.beginReplace();
          cont = '';
          continue;
        }
        if (res.statusCode !== 200) await this.fail(res);
        body = await readJson(res, this.maxPageChars);
      } catch (e) {
        if (!(e instanceof PageTooLargeError) || limit <= 1 || this.stopped) throw e;
        const next = Math.floor(limit / 2);
        this.log.warning(
          `${this.def.kind}: list page larger than ${e.maxChars} characters at limit=${limit}: asking again with limit=${next}`,
        );
        limit = next;
        continue;
      } finally {
        release();
      }
      if (!isObj(body) || !Array.isArray(body['items']))
        throw new ApiError(`${this.def.kind}: list response without items`, 200);
      const items = body['items'] as unknown[];
      for (const item of items) {
        const r = this.convert(item);
        if (r) recs.push(r);
      }
      if (replacing) {
        replacing.page(recs);
        recs.length = 0;
      }
      // A first list of a large cluster: collect the pages' JSON as it goes. Left to itself V8
      // lets it pile up to several times the index before its first full collection (peak RSS
      // at 150k pods: 164 → 131 MiB). A relist, while serving, does the same whenever the
      // pages' garbage (promoted by the young generation's collections during the parse) grew
      // the heap by an eighth: a pause of tens of ms every few thousand objects instead of a
      // peak 13–16 % above the steady state (docs/benchmarks.md).
      itemsSinceGc += items.length;
      if (!this.synced && itemsSinceGc >= GC_EVERY_ITEMS) {
        itemsSinceGc = 0;
        collectGarbage();
      } else if (replacing && getHeapStatistics().used_heap_size - heapAtGc > gcGrowth) {
        collectGarbage();
        heapAtGc = getHeapStatistics().used_heap_size;
      }
      const meta = isObj(body['metadata']) ? body['metadata'] : {};
      rv = typeof meta['resourceVersion'] === 'string' ? meta['resourceVersion'] : rv;
      cont = typeof meta['continue'] === 'string' ? meta['continue'] : '';
      if (!cont) break;
    }
    if (this.rv && rv && rvBefore(rv, this.rv)) {
      this.log.warning(
        `${this.def.kind}: the API server's resourceVersion went backwards (list at ${rv}, ${this.rv} seen before; etcd restored or wiped?): replacing everything with the list`,
      );
    }
    if (replacing) replacing.finish();
    else this.sink.replace(recs);
    this.rv = rv;
    this.synced = true;
    this.lastError = null;
    this.fresh();
    this.onList?.();
  }

  /**
   * The API server's current resourceVersion (a one-item list, read from etcd) is below the last
   * one seen: the counter went backwards and only a relist brings the index back in step.
   */
  private async counterWentBack(): Promise<boolean> {
    if (!this.rv) return false;
    const { ctl, release } = linked(this.abort.signal);
    let body: unknown;
    try {
      const res = await this.client.get(
        this.query({ limit: '1' }),
        ctl.signal,
        Math.min(LIST_IDLE_MS, this.livenessMs),
      );
      if (res.statusCode !== 200) await this.fail(res);
      body = await readJson(res, this.maxPageChars);
    } finally {
      release();
    }
    const meta = isObj(body) && isObj(body['metadata']) ? body['metadata'] : {};
    const now = typeof meta['resourceVersion'] === 'string' ? meta['resourceVersion'] : '';
    if (!now || !rvBefore(now, this.rv)) return false;
    this.log.warning(
      `${this.def.kind}: the API server's resourceVersion went backwards (now ${now}, ${this.rv} seen before; etcd restored or wiped?): relisting`,
    );
    return true;
  }

  /**
   * One watch stream; returns the number of lines when the server ends it normally, throws on
   * errors, 410, a resourceVersion that went backwards, and a silent stream (SilentWatchError).
   */
  private async watch(): Promise<number> {
    const timeout = this.watchTimeoutSec + Math.floor(Math.random() * this.watchTimeoutSec);
    const { ctl, release } = linked(this.abort.signal);
    this.current = { ctl, activity: performance.now() };
    let lines = 0;
    try {
      const res = await this.client.get(
        this.query({
          watch: 'true',
          resourceVersion: this.rv,
          allowWatchBookmarks: 'true',
          timeoutSeconds: String(timeout),
        }),
        ctl.signal,
        (timeout + 30) * 1000,
      );
      if (res.statusCode !== 200) await this.fail(res);
      this.lastError = null;
      // The unfinished line is kept as the chunks it came in, and only each new chunk is searched
      // for a newline: appending to one string and searching all of it again made a long line cost
      // time quadratic in its length (16 MiB of it took tens of seconds on a loaded machine).
      const partial: string[] = [];
      let partialChars = 0;
      res.setEncoding('utf8');
      for await (const data of res) {
        const chunk = data as string;
        let start = 0;
        let nl: number;
        while ((nl = chunk.indexOf('\n', start)) >= 0) {
          let line = chunk.slice(start, nl);
          if (partial.length > 0) {
            partial.push(line);
            line = partial.join('');
            partial.length = 0;
            partialChars = 0;
          }
          start = nl + 1;
          line = line.trim();
          if (line) {
            lines++;
            this.event(line);
          }
        }
        if (start < chunk.length) {
          partial.push(start === 0 ? chunk : chunk.slice(start));
          partialChars += chunk.length - start;
        }
        if (partialChars > MAX_WATCH_EVENT_CHARS)
          throw new Error(`watch event longer than ${MAX_WATCH_EVENT_CHARS} characters: dropping the stream`);
      }
      const last = partial.join('').trim();
      if (last) {
        lines++;
        this.event(last);
      }
    } catch (e) {
      const why: unknown = ctl.signal.reason;
      throw why instanceof SilentWatchError ? why : e;
    } finally {
      this.current = null;
      release();
    }
    const why: unknown = ctl.signal.reason;
    if (why instanceof SilentWatchError) throw why;
    return lines;
  }

  private event(line: string): void {
    let ev: unknown;
    try {
      ev = JSON.parse(line);
    } catch {
      this.log.warning(`${this.def.kind}: undecodable watch event`);
      return;
    }
    if (!isObj(ev)) return;
    const type = ev['type'];
    const obj = ev['object'];
    if (type === 'ERROR') {
      const code = isObj(obj) ? obj['code'] : undefined;
      if (code === 410) throw new GoneError('410 Gone (watch event)');
      const msg = isObj(obj) && typeof obj['message'] === 'string' ? obj['message'] : JSON.stringify(obj);
      const status = typeof code === 'number' ? code : 0;
      throw new ApiError(
        `${this.def.kind}: watch error: ${msg}`,
        status,
        status === 429 || status >= 500 ? statusRetryAfter(obj) : null,
      );
    }
    const rv = resourceVersionOf(obj);
    if (rv && this.rv && rvBefore(rv, this.rv)) {
      throw new CounterBackwardsError(
        `${this.def.kind}: the API server's resourceVersion went backwards (watch event at ${rv}, ${this.rv} seen before; etcd restored or wiped?): relisting`,
      );
    }
    this.fresh();
    this.goneWait = 0;
    if (type === 'BOOKMARK') {
      if (rv) this.rv = rv;
      return;
    }
    const key = objectKey(obj);
    if (type === 'DELETED') {
      if (key) this.sink.remove(key);
    } else if (type === 'ADDED' || type === 'MODIFIED') {
      const r = this.convert(obj);
      if (r) this.sink.upsert(r);
      else if (r === null && key) this.sink.ignored(key);
    }
    if (rv) this.rv = rv;
  }
}
