/**
 * A local server speaking the Kubernetes API protocol (JSON) for Services, Namespaces, Pods
 * and discovery.k8s.io/v1 EndpointSlices: list (paging, selectors, consistent snapshots), get,
 * watch (history replay, bookmarks, 410 Expired), discovery, health. Read-only over HTTP;
 * tests and the CLI change state with the in-process control API (`startSandbox`).
 */
import * as http from 'node:http';
import type * as net from 'node:net';
import { decodeContinue, encodeContinue } from './continue-token.js';
import { DISCOVERY_GROUP, discoveryResources, KUBE_VERSION, MULTICLUSTER_GROUP } from './discovery.js';
import { FileSet, parseYamlObjects, type FileChanges } from './files.js';
import { matchResourcePath, parseBool } from './request.js';
import { normaliseObject, ObjectError, resourceByAnyName, type JsonObject, type ResourceDef } from './resources.js';
import { JSON_HEADERS, sendJson, sendStatus, statusObject, writeChunks } from './responses.js';
import { parseFieldSelector, parseLabelSelector, SelectorError, type FieldRequirement } from './selectors.js';
import { lowerBound, Store, type Rec } from './store.js';
import { generateObjects, type GenerateOptions } from './synthetic.js';
import { eventLine, filterEvent, makeMatcher, Watcher, watchObject, type Filter } from './watch.js';

export { parseYamlObjects };

export interface RequestInfo {
  method: string;
  path: string;
  query: Record<string, string>;
  /** Date.now() when the request arrived */
  at: number;
}

export interface SandboxOptions {
  port?: number;
  /** default 127.0.0.1 */
  host?: string;
  /** YAML files (`kind: List` or multi-document); watched for changes */
  files?: string[];
  /** objects applied at start (after files) */
  objects?: unknown[];
  /** a synthetic cluster generated lazily at start (see synthetic.ts) */
  synthetic?: GenerateOptions;
  /** interval of BOOKMARK events on watches with allowWatchBookmarks=true; default 60000 */
  bookmarkIntervalMs?: number;
  /** number of events kept for watch replay; older revisions get 410; default 10000 */
  historyLimit?: number;
  /** file poll interval; default 500 */
  filePollMs?: number;
  /**
   * Serve ServiceImports (`multicluster.x-k8s.io/v1alpha1`, the mcs-api CRD); default true. False
   * is an API server without the CRD: its paths are 404 and its group is not discovered.
   */
  serviceImports?: boolean;
  /** warnings and info lines; default: `[WARNING] sandbox: ...` on stderr */
  log?: (level: 'INFO' | 'WARNING', msg: string) => void;
}

export interface Sandbox {
  url: string;
  port: number;
  /** Create or replace an object by kind/namespace/name; emits ADDED or MODIFIED. */
  apply(obj: unknown): void;
  /** Delete an object (kind as "Service", "services" or "svc"); emits DELETED. No-op if absent. */
  remove(kind: string, namespace: string | undefined, name: string): void;
  /** Drop the event history: watches/consistent lists from revisions older than now get 410. */
  compact(): void;
  /**
   * Set the resourceVersion counter back to `rv` (0 ≤ rv ≤ current), as after an etcd restore from
   * an older backup or a wipe: the history is dropped and open watches are cut (the API server
   * restarts), unless `keepWatches`, in which case they go on with the lower revisions.
   */
  rewindResourceVersion(rv: number, opts?: { keepWatches?: boolean }): void;
  /**
   * An API server restart with its history compacted: every open watch is cut, and resuming it
   * from its last resourceVersion gets 410 Expired, so every client relists everything.
   */
  restart(): void;
  /**
   * Offline: close the listener (connections are refused) and destroy every open connection,
   * including watch streams. Online: listen again on the same port. The promise resolves when
   * the change is complete; callers may ignore it.
   */
  setOffline(on: boolean): Promise<void>;
  /** Force an HTTP status (e.g. 403, 500) for requests where fn returns a number. */
  setFailure(fn?: (req: RequestInfo) => number | undefined): void;
  /** Every request received, oldest first (capped at 100000 entries). */
  requests: RequestInfo[];
  /** The current global resourceVersion. */
  resourceVersion(): string;
  /** Number of currently open watch streams (also `GET /debug/watches` over HTTP). */
  watchCount(): number;
  /** Open watch streams per resource (`services`, `endpointslices`, …). */
  watchesByResource(): Record<string, number>;
  close(): Promise<void>;
}

class SandboxServer implements Sandbox {
  url = '';
  port = 0;
  readonly requests: RequestInfo[] = [];
  private readonly store: Store;
  private readonly server: http.Server;
  private readonly sockets = new Set<net.Socket>();
  private readonly watchers = new Set<Watcher>();
  private failure: ((req: RequestInfo) => number | undefined) | undefined;
  private offline = false;
  private transition: Promise<void> = Promise.resolve();
  private readonly bookmarkMs: number;
  private fileSet: FileSet | undefined;
  private readonly log: (level: 'INFO' | 'WARNING', msg: string) => void;
  /** The ServiceImport CRD is installed (SandboxOptions.serviceImports). */
  private readonly servesImports: boolean;

  constructor(private readonly opts: SandboxOptions) {
    this.servesImports = opts.serviceImports ?? true;
    this.store = new Store(opts.historyLimit ?? 10_000);
    this.bookmarkMs = opts.bookmarkIntervalMs ?? 60_000;
    this.log =
      opts.log ??
      ((level, msg) => {
        process.stderr.write(`[${level}] sandbox: ${msg}\n`);
      });
    this.store.subscribe((ev) => {
      for (const w of this.watchers) {
        const line = filterEvent(ev, w.match);
        if (line !== undefined) w.write(line);
      }
    });
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.keepAliveTimeout = 60_000;
    this.server.on('connection', (s) => {
      if (this.offline) {
        s.destroy();
        return;
      }
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async start(): Promise<void> {
    if (this.opts.files && this.opts.files.length > 0) {
      this.fileSet = new FileSet(this.opts.files, (m) => this.log('WARNING', m), this.opts.filePollMs ?? 500);
      for (const fo of this.fileSet.load()) this.applyLogged(fo.obj);
    }
    for (const o of this.opts.objects ?? []) this.apply(o);
    if (this.opts.synthetic) for (const o of generateObjects(this.opts.synthetic)) this.put(o, true);
    await this.listen(this.opts.port ?? 0);
    this.fileSet?.start((c) => this.onFileChanges(c));
  }

  private listen(port: number): Promise<void> {
    const host = this.opts.host ?? '127.0.0.1';
    return new Promise((resolve, reject) => {
      const onError = (e: Error): void => reject(e);
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        const addr = this.server.address() as net.AddressInfo;
        this.port = addr.port;
        const h = host.includes(':') ? `[${host}]` : host;
        this.url = `http://${h}:${addr.port}`;
        resolve();
      });
    });
  }

  private applyLogged(obj: unknown): void {
    try {
      this.apply(obj);
    } catch (e) {
      if (e instanceof ObjectError) this.log('WARNING', `ignoring object: ${e.message}`);
      else throw e;
    }
  }

  private onFileChanges(c: FileChanges): void {
    for (const fo of c.upserts) this.applyLogged(fo.obj);
    for (const fo of c.deletes) {
      if (resourceByAnyName(fo.kind)) this.remove(fo.kind, fo.namespace, fo.name);
    }
    this.log('INFO', `files changed: ${c.upserts.length} added/modified, ${c.deletes.length} deleted`);
  }

  apply(obj: unknown): void {
    this.put(obj, false);
  }

  /** inPlace: the object may be consumed (generated objects nobody else holds). */
  private put(obj: unknown, inPlace: boolean): void {
    let n = normaliseObject(obj, undefined, inPlace);
    const existing = this.store.get(n.res, n.namespace, n.name);
    if (existing) {
      const id = this.store.identity(existing);
      if (inPlace) {
        const md = n.body['metadata'] as JsonObject;
        md['uid'] = id.uid;
        md['creationTimestamp'] = id.creationTimestamp;
      } else {
        n = normaliseObject(obj, id);
      }
    }
    this.store.put(n);
  }

  remove(kind: string, namespace: string | undefined, name: string): void {
    const res = resourceByAnyName(kind);
    if (!res) throw new ObjectError(`unsupported kind ${kind}`);
    this.store.delete(res, res.namespaced ? (namespace ?? 'default') : undefined, name);
  }

  compact(): void {
    this.store.compact();
  }

  rewindResourceVersion(rv: number, opts: { keepWatches?: boolean } = {}): void {
    if (!Number.isInteger(rv) || rv < 0 || rv > this.store.revision) {
      throw new RangeError(`cannot rewind the resourceVersion to ${rv} (current ${this.store.revision})`);
    }
    this.store.rewind(rv);
    if (!opts.keepWatches) this.cutWatches();
  }

  restart(): void {
    this.store.restart();
    this.cutWatches();
  }

  private cutWatches(): void {
    for (const w of [...this.watchers]) {
      w.res.destroy();
      w.close();
    }
  }

  setFailure(fn?: (req: RequestInfo) => number | undefined): void {
    this.failure = fn;
  }

  resourceVersion(): string {
    return String(this.store.revision);
  }

  watchCount(): number {
    return this.watchers.size;
  }

  watchesByResource(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const w of this.watchers) out[w.rdef.plural] = (out[w.rdef.plural] ?? 0) + 1;
    return out;
  }

  setOffline(on: boolean): Promise<void> {
    const run = async (): Promise<void> => {
      if (on === this.offline) return;
      this.offline = on;
      if (on) {
        const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
        for (const w of [...this.watchers]) {
          w.res.destroy();
          w.close();
        }
        for (const s of this.sockets) s.destroy();
        await closed;
      } else {
        for (let attempt = 0; ; attempt++) {
          try {
            await this.listen(this.port);
            return;
          } catch (e) {
            if (attempt >= 50) {
              this.log('WARNING', `cannot listen again on port ${this.port}: ${(e as Error).message}`);
              return;
            }
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      }
    };
    this.transition = this.transition.then(run, run);
    return this.transition;
  }

  async close(): Promise<void> {
    await this.transition;
    this.fileSet?.close();
    for (const w of [...this.watchers]) w.end();
    if (this.offline) return;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    await closed;
  }

  // ---------------------------------------------------------------------------------------

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const u = new URL(req.url ?? '/', 'http://sandbox');
    const query: Record<string, string> = {};
    for (const [k, v] of u.searchParams) query[k] = v;
    const info: RequestInfo = { method: req.method ?? 'GET', path: u.pathname, query, at: Date.now() };
    this.requests.push(info);
    // a client that goes away mid-response must not crash the server
    res.on('error', () => undefined);
    if (this.requests.length > 100_000) this.requests.splice(0, this.requests.length - 100_000);
    // drain any request body
    req.resume();

    const forced = this.failure?.(info);
    if (forced !== undefined) {
      this.sendForced(res, forced, info);
      return;
    }
    try {
      this.route(info, res);
    } catch (e) {
      if (e instanceof SelectorError) sendStatus(res, 400, e.message);
      else {
        this.log('WARNING', `internal error: ${(e as Error).stack ?? String(e)}`);
        if (!res.headersSent) sendStatus(res, 500, (e as Error).message);
        else res.destroy();
      }
    }
  }

  private sendForced(res: http.ServerResponse, code: number, info: RequestInfo): void {
    const segs = info.path.split('/').filter((s) => s !== '');
    const m = matchResourcePath(segs);
    const plural = m && 'res' in m ? m.res.plural : 'resource';
    let message: string;
    const extra: JsonObject = {};
    switch (code) {
      case 401:
        message = 'Unauthorized';
        break;
      case 403: {
        const group = m && 'res' in m ? m.res.group : '';
        const verb = info.query['watch'] !== undefined ? 'watch' : 'list';
        const scope =
          m && 'res' in m && m.namespace !== undefined ? `in the namespace "${m.namespace}"` : 'at the cluster scope';
        message = `${plural} is forbidden: User "system:anonymous" cannot ${verb} resource "${plural}" in API group "${group}" ${scope}`;
        extra['details'] = { kind: plural };
        break;
      }
      case 429:
        message = 'Too many requests, please try again later.';
        extra['details'] = { retryAfterSeconds: 1 };
        res.setHeader('Retry-After', '1');
        break;
      default:
        message = `forced failure ${code}`;
    }
    sendStatus(res, code, message, extra);
  }

  private route(info: RequestInfo, res: http.ServerResponse): void {
    const p = info.path.length > 1 ? info.path.replace(/\/+$/, '') : info.path;
    switch (p) {
      case '/healthz':
      case '/readyz':
      case '/livez':
        res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': 2 });
        res.end('ok');
        return;
      case '/version':
        sendJson(res, 200, KUBE_VERSION);
        return;
      case '/debug/watches':
        // Not a Kubernetes path: the open watch streams, for tests and benchmarks in other
        // processes (one set per clusterdns pod whatever its thread count, docs/multicore.md).
        sendJson(res, 200, { open: this.watchers.size, byResource: this.watchesByResource() });
        return;
      case '/api':
        sendJson(res, 200, {
          kind: 'APIVersions',
          versions: ['v1'],
          serverAddressByClientCIDRs: [
            { clientCIDR: '0.0.0.0/0', serverAddress: `${this.opts.host ?? '127.0.0.1'}:${this.port}` },
          ],
        });
        return;
      case '/apis':
        sendJson(res, 200, {
          kind: 'APIGroupList',
          apiVersion: 'v1',
          groups: [DISCOVERY_GROUP, ...(this.servesImports ? [MULTICLUSTER_GROUP] : [])].map((g) => ({
            ...g,
            kind: undefined,
            apiVersion: undefined,
          })),
        });
        return;
      case '/apis/multicluster.x-k8s.io':
        if (!this.servesImports) break;
        sendJson(res, 200, MULTICLUSTER_GROUP);
        return;
      case '/apis/multicluster.x-k8s.io/v1alpha1':
        if (!this.servesImports) break;
        sendJson(res, 200, discoveryResources('multicluster.x-k8s.io'));
        return;
      case '/apis/discovery.k8s.io':
        sendJson(res, 200, DISCOVERY_GROUP);
        return;
      case '/api/v1':
        sendJson(res, 200, discoveryResources(''));
        return;
      case '/apis/discovery.k8s.io/v1':
        sendJson(res, 200, discoveryResources('discovery.k8s.io'));
        return;
    }
    const m = matchResourcePath(p.split('/').filter((s) => s !== ''));
    if (!m || 'error' in m || (m.res.kind === 'ServiceImport' && !this.servesImports)) {
      sendStatus(res, 404, 'the server could not find the requested resource', { details: {} });
      return;
    }
    if (info.method !== 'GET') {
      sendStatus(res, 405, `the server does not allow this method on the requested resource`, { details: {} });
      return;
    }
    const watch = m.legacyWatch || parseBool(info.query['watch']);
    if (m.name !== undefined) {
      if (watch) {
        // a legacy `watch/.../name` path: a watch restricted to one name
        this.watch(info, res, m.res, m.namespace, [{ field: 'metadata.name', neg: false, value: m.name }]);
        return;
      }
      this.getOne(res, m.res, m.namespace, m.name);
      return;
    }
    if (watch) this.watch(info, res, m.res, m.namespace, []);
    else this.list(info, res, m.res, m.namespace);
  }

  private getOne(res: http.ServerResponse, rdef: ResourceDef, namespace: string | undefined, name: string): void {
    const rec = this.store.get(rdef, namespace, name);
    if (!rec) {
      sendStatus(res, 404, `${rdef.plural}${rdef.group ? '.' + rdef.group : ''} "${name}" not found`, {
        details: { name, ...(rdef.group ? { group: rdef.group } : {}), kind: rdef.plural },
      });
      return;
    }
    const text = watchObject(rdef, rec.json);
    res.writeHead(200, { ...JSON_HEADERS, 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  private selectors(info: RequestInfo, rdef: ResourceDef, extraFields: FieldRequirement[]): Filter & { any: boolean } {
    const ls = info.query['labelSelector'];
    const fs = info.query['fieldSelector'];
    const labels = ls !== undefined && ls.trim() !== '' ? parseLabelSelector(ls) : undefined;
    const fields = [...(fs !== undefined ? parseFieldSelector(fs) : []), ...extraFields];
    for (const f of fields) {
      if (f.field !== 'metadata.name' && f.field !== 'metadata.namespace' && !(f.field in rdef.fieldPaths)) {
        throw new SelectorError(`field label not supported: ${f.field}`);
      }
    }
    return { res: rdef, namespace: undefined, labels, fields, any: labels !== undefined || fields.length > 0 };
  }

  private list(info: RequestInfo, res: http.ServerResponse, rdef: ResourceDef, namespace: string | undefined): void {
    const q = info.query;
    const sel = this.selectors(info, rdef, []);
    const match = makeMatcher({ ...sel, namespace });
    const limitText = q['limit'];
    const limit = limitText !== undefined && /^\d+$/.test(limitText) ? Number(limitText) : 0;

    let atRv = this.store.revision;
    let startKey = '';
    const cont = q['continue'];
    if (cont !== undefined && cont !== '') {
      const tok = decodeContinue(cont);
      if (!tok) {
        sendStatus(
          res,
          400,
          'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)',
          {
            reason: 'BadRequest',
          },
        );
        return;
      }
      if (tok.rv !== -1 && tok.rv < this.store.compactedRevision) {
        const inconsistent = encodeContinue(-1, tok.start);
        sendStatus(
          res,
          410,
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
          { metadata: { continue: inconsistent } },
        );
        return;
      }
      atRv = tok.rv === -1 ? this.store.revision : tok.rv;
      startKey = tok.start;
    } else {
      const rvText = q['resourceVersion'];
      if (rvText !== undefined && rvText !== '' && rvText !== '0') {
        if (!/^\d+$/.test(rvText)) {
          sendStatus(
            res,
            400,
            `resourceVersion: Invalid value: "${rvText}": strconv.ParseUint: parsing "${rvText}": invalid syntax`,
          );
          return;
        }
        const want = Number(rvText);
        if (want > this.store.revision) {
          sendStatus(res, 504, `Too large resource version: ${want}, current: ${this.store.revision}`, {
            details: {
              causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
              retryAfterSeconds: 1,
            },
          });
          return;
        }
        if (q['resourceVersionMatch'] === 'Exact') {
          if (want < this.store.compactedRevision) {
            sendStatus(res, 410, `The resourceVersion for the provided list is too old.`);
            return;
          }
          atRv = want;
        }
      }
    }
    const snap = this.store.snapshotAt(rdef, atRv);
    if (!snap) {
      sendStatus(res, 410, `The resourceVersion for the provided list is too old.`);
      return;
    }
    let i = 0;
    let end = snap.length;
    if (namespace !== undefined) {
      i = lowerBound(snap, `${namespace}/`);
      end = lowerBound(snap, `${namespace}0`); // '0' is the character after '/'
    }
    if (startKey !== '') i = Math.max(i, lowerBound(snap, startKey));

    const items: string[] = [];
    let nextStart: string | undefined;
    let remaining: number | undefined;
    for (; i < end; i++) {
      const r = snap[i] as Rec;
      if (!match(r)) continue;
      if (limit > 0 && items.length >= limit) {
        nextStart = `${(snap[i - 1] as Rec).key}\u0000`;
        break;
      }
      items.push(r.json);
    }
    if (nextStart !== undefined && !sel.any) remaining = end - i;
    const meta: JsonObject = { resourceVersion: String(atRv) };
    if (nextStart !== undefined) meta['continue'] = encodeContinue(atRv, nextStart);
    if (remaining !== undefined) meta['remainingItemCount'] = remaining;
    const head = `{"kind":"${rdef.listKind}","apiVersion":"${rdef.apiVersion}","metadata":${JSON.stringify(meta)},"items":[`;
    res.writeHead(200, JSON_HEADERS);
    function* parts(): Iterable<string> {
      yield head;
      for (let k = 0; k < items.length; k++) yield k === 0 ? (items[k] as string) : `,${items[k] as string}`;
      yield ']}\n';
    }
    void writeChunks(res, parts()).then((ok) => {
      if (ok) res.end();
    });
  }

  private watch(
    info: RequestInfo,
    res: http.ServerResponse,
    rdef: ResourceDef,
    namespace: string | undefined,
    extraFields: FieldRequirement[],
  ): void {
    const q = info.query;
    const sel = this.selectors(info, rdef, extraFields);
    const match = makeMatcher({ ...sel, namespace });
    const rvText = q['resourceVersion'];
    if (rvText !== undefined && rvText !== '' && !/^\d+$/.test(rvText)) {
      sendStatus(
        res,
        400,
        `resourceVersion: Invalid value: "${rvText}": strconv.ParseUint: parsing "${rvText}": invalid syntax`,
      );
      return;
    }
    const bookmarks = parseBool(q['allowWatchBookmarks']);
    const sendInitial = parseBool(q['sendInitialEvents']);
    const timeoutText = q['timeoutSeconds'];
    const timeoutMs =
      timeoutText !== undefined && /^\d+$/.test(timeoutText) && Number(timeoutText) > 0
        ? Number(timeoutText) * 1000
        : undefined;

    res.writeHead(200, { ...JSON_HEADERS, 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();

    const from = rvText === undefined || rvText === '' || rvText === '0' ? undefined : Number(rvText);
    if (from !== undefined && !sendInitial) {
      if (from > this.store.revision) {
        // As the watch cache does: wait up to 3 s for the revision to catch up, else a 504 error.
        const t0 = Date.now();
        const poll = setInterval(() => {
          if (res.destroyed) {
            clearInterval(poll);
          } else if (from <= this.store.revision) {
            clearInterval(poll);
            this.watchFrom(res, rdef, match, from, bookmarks, timeoutMs);
          } else if (Date.now() - t0 >= 3000) {
            clearInterval(poll);
            const status = statusObject(504, `Too large resource version: ${from}, current: ${this.store.revision}`, {
              details: {
                causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
                retryAfterSeconds: 1,
              },
            });
            res.end(`${JSON.stringify({ type: 'ERROR', object: status })}\n`);
          }
        }, 20);
        return;
      }
      this.watchFrom(res, rdef, match, from, bookmarks, timeoutMs);
      return;
    }
    // No resourceVersion (or "0", or sendInitialEvents): synthetic ADDED for the current state,
    // then changes after it.
    const at = this.store.revision;
    const snap = this.store.current(rdef);
    const w = this.addWatcher(res, rdef, match);
    let i = 0;
    let end = snap.length;
    if (namespace !== undefined) {
      i = lowerBound(snap, `${namespace}/`);
      end = lowerBound(snap, `${namespace}0`);
    }
    function* initial(): Iterable<string> {
      for (let k = i; k < end; k++) {
        const r = snap[k] as Rec;
        if (match(r)) yield eventLine('ADDED', rdef, r.json);
      }
      if (sendInitial && bookmarks) yield w.bookmarkLine(at, { 'k8s.io/initial-events-end': 'true' });
    }
    void writeChunks(res, initial()).then((ok) => {
      if (!ok) return;
      w.goLive();
      w.startTimers(bookmarks ? this.bookmarkMs : undefined, timeoutMs, () => this.store.revision);
    });
  }

  private watchFrom(
    res: http.ServerResponse,
    rdef: ResourceDef,
    match: (r: Rec) => boolean,
    from: number,
    bookmarks: boolean,
    timeoutMs: number | undefined,
  ): void {
    const evs = this.store.eventsSince(from);
    if (!evs) {
      const status = statusObject(410, `too old resource version: ${from} (${this.store.compactedRevision + 1})`);
      res.end(`${JSON.stringify({ type: 'ERROR', object: status })}\n`);
      return;
    }
    const w = this.addWatcher(res, rdef, match);
    for (const ev of evs) {
      const line = filterEvent(ev, match);
      if (line !== undefined) w.write(line);
    }
    w.goLive();
    w.startTimers(bookmarks ? this.bookmarkMs : undefined, timeoutMs, () => this.store.revision);
  }

  private addWatcher(res: http.ServerResponse, rdef: ResourceDef, match: (r: Rec) => boolean): Watcher {
    const w = new Watcher(res, rdef, match, (x) => this.watchers.delete(x));
    this.watchers.add(w);
    return w;
  }
}

/** Start a sandbox API server. */
export async function startSandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  const s = new SandboxServer(opts);
  await s.start();
  return s;
}
