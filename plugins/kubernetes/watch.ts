/**
 * A thin list-and-watch loop for one resource (what client-go's Reflector does, without keeping
 * whole objects): paged list (limit 500 + continue), then a watch from the list's resourceVersion
 * with bookmarks; resume from the last seen resourceVersion when a stream ends; relist and diff on
 * 410 Gone; reconnect with capped exponential backoff and jitter when the API server fails. Every
 * object is converted to a slim record on receipt; malformed objects are skipped with one warning.
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../../src/log.js';
import { collectGarbage } from '../../src/util/gc.js';
import { ApiError, readJson, type ApiClient } from './client.js';
import { objectKey, resourceVersionOf } from './convert.js';
import type { Kind, RecOf } from './types.js';

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
  replace(recs: RecOf<K>[]): void;
  upsert(rec: RecOf<K>): void;
  /** Object key (`ns/name` or `name`). */
  remove(key: string): void;
  /** An update that converted to null (ignored object): drop nothing unless the kind says so. */
  ignored(key: string): void;
}

const PAGE = 500;
/** During a first list, a full collection after this many items (see list()). */
const GC_EVERY_ITEMS = 10_000;
const BACKOFF_MIN_MS = 200;
const BACKOFF_MAX_MS = 30_000;

export class GoneError extends Error {}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describeStatus(kind: string, status: number, body: unknown): string {
  const msg = isObj(body) && typeof body['message'] === 'string' ? `: ${body['message']}` : '';
  if (status === 401) return `401 on ${kind} — credentials rejected${msg}`;
  if (status === 403) return `403 on ${kind} — RBAC missing list/watch${msg}`;
  if (status === 404) return `404 on ${kind} — resource not served by the API server${msg}`;
  return `HTTP ${status} on ${kind}${msg}`;
}

export class Reflector<K extends Kind> {
  /** The first list has completed. */
  synced = false;
  /** Why the last attempt failed (readiness reason), or null. */
  lastError: string | null = null;
  private rv = '';
  private stopped = false;
  private readonly abort = new AbortController();
  private readonly warned = new Set<string>();
  private loop: Promise<void> | null = null;
  /** Called after each completed list (tests, metrics). */
  onList: (() => void) | null = null;

  constructor(
    readonly def: ResourceDef<K>,
    private readonly client: ApiClient,
    private readonly sink: Sink<K>,
    private readonly log: Logger,
    /** Watch timeout (server-side) in seconds; randomised in [t, 2t) like client-go. */
    private readonly watchTimeoutSec = 300,
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await this.loop;
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
    let backoff = BACKOFF_MIN_MS;
    let needList = true;
    while (!this.stopped) {
      try {
        if (needList) {
          await this.list();
          needList = false;
        }
        const t0 = Date.now();
        const events = await this.watch();
        if (events === 0 && Date.now() - t0 < 1000) {
          // A stream that ends at once without events: do not spin.
          await this.sleep(backoff / 2 + Math.random() * (backoff / 2));
          backoff = Math.min(BACKOFF_MAX_MS, backoff * 2);
        } else {
          backoff = BACKOFF_MIN_MS;
        }
      } catch (e) {
        if (this.stopped) break;
        if (e instanceof GoneError && !needList) {
          // The watch's resourceVersion is too old: relist at once (and diff).
          needList = true;
          continue;
        }
        const reason = e instanceof ApiError ? e.message : `${this.def.kind}: ${(e as Error).message}`;
        if (reason !== this.lastError) this.log.warning(`${this.synced ? 'watch' : 'list'} of ${this.def.kind} failed: ${reason}`);
        this.lastError = reason;
        const delay = backoff / 2 + Math.random() * (backoff / 2);
        backoff = Math.min(BACKOFF_MAX_MS, backoff * 2);
        await this.sleep(delay);
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.abort.signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
  }

  private async fail(res: IncomingMessage): Promise<never> {
    const status = res.statusCode ?? 0;
    let body: unknown = null;
    try { body = await readJson(res); } catch { /* keep null */ }
    if (status === 410) throw new GoneError('410 Gone');
    throw new ApiError(describeStatus(this.def.kind, status, body), status);
  }

  /** Paged list; replaces the sink's content and records the list's resourceVersion. */
  private async list(): Promise<void> {
    const recs: RecOf<K>[] = [];
    let cont = '';
    let rv = '';
    let itemsSinceGc = 0;
    for (;;) {
      const extra: Record<string, string> = { limit: String(PAGE) };
      if (cont) extra['continue'] = cont;
      const res = await this.client.get(this.query(extra), this.abort.signal, 60_000);
      if (res.statusCode === 410 && cont) {
        // Continue token expired: start the list again.
        res.resume();
        recs.length = 0;
        cont = '';
        continue;
      }
      if (res.statusCode !== 200) await this.fail(res);
      const body = await readJson(res);
      if (!isObj(body) || !Array.isArray(body['items'])) throw new ApiError(`${this.def.kind}: list response without items`, 200);
      const items = body['items'] as unknown[];
      for (const item of items) {
        const r = this.convert(item);
        if (r) recs.push(r);
      }
      // A first list of a large cluster: collect the pages' JSON as it goes. Left to itself V8
      // lets it pile up to several times the index before its first full collection (peak RSS
      // at 150k pods: 164 → 131 MiB). Relists, while serving, are left to V8.
      itemsSinceGc += items.length;
      if (!this.synced && itemsSinceGc >= GC_EVERY_ITEMS) {
        itemsSinceGc = 0;
        collectGarbage();
      }
      const meta = isObj(body['metadata']) ? body['metadata'] : {};
      rv = typeof meta['resourceVersion'] === 'string' ? meta['resourceVersion'] : rv;
      cont = typeof meta['continue'] === 'string' ? meta['continue'] : '';
      if (!cont) break;
    }
    this.sink.replace(recs);
    this.rv = rv;
    this.synced = true;
    this.lastError = null;
    this.onList?.();
  }

  /** One watch stream; returns the number of events when the server ends it normally, throws on errors / 410. */
  private async watch(): Promise<number> {
    const timeout = this.watchTimeoutSec + Math.floor(Math.random() * this.watchTimeoutSec);
    const res = await this.client.get(
      this.query({ watch: 'true', resourceVersion: this.rv, allowWatchBookmarks: 'true', timeoutSeconds: String(timeout) }),
      this.abort.signal,
      (timeout + 30) * 1000,
    );
    if (res.statusCode !== 200) await this.fail(res);
    this.lastError = null;
    let buf = '';
    let events = 0;
    res.setEncoding('utf8');
    for await (const chunk of res) {
      buf += chunk as string;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) {
          events++;
          this.event(line);
        }
      }
    }
    if (buf.trim()) {
      events++;
      this.event(buf.trim());
    }
    return events;
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
      throw new ApiError(`${this.def.kind}: watch error: ${msg}`, typeof code === 'number' ? code : 0);
    }
    const rv = resourceVersionOf(obj);
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
