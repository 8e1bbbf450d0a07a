/** Watches: which store events a filtered watch sees, their JSON lines, and one open watch stream with its bookmarks and timeout. */
import type * as http from 'node:http';
import type { JsonObject, ResourceDef } from './resources.js';
import { matchFields, type FieldRequirement, type LabelSelector } from './selectors.js';
import type { Rec, StoreEvent } from './store.js';

/** How a watch filters events: resource, namespace, label and field selectors. */
export interface Filter {
  res: ResourceDef;
  namespace: string | undefined;
  labels: LabelSelector | undefined;
  fields: FieldRequirement[];
}

export function makeMatcher(f: Filter): (r: Rec) => boolean {
  return (r) => {
    if (r.res !== f.res) return false;
    if (f.namespace !== undefined && r.namespace !== f.namespace) return false;
    if (f.labels && !f.labels(r.labels)) return false;
    if (f.fields.length > 0 && !matchFields(f.fields, (name) => fieldValue(r, name))) return false;
    return true;
  };
}

function fieldValue(r: Rec, name: string): string {
  if (name === 'metadata.name') return r.name;
  if (name === 'metadata.namespace') return r.namespace;
  return r.fields[name] ?? '';
}

export function watchObject(res: ResourceDef, json: string): string {
  return `{"kind":"${res.kind}","apiVersion":"${res.apiVersion}",${json.slice(1)}`;
}

export function eventLine(type: string, res: ResourceDef, json: string): string {
  return `{"type":"${type}","object":${watchObject(res, json)}}\n`;
}

function replaceRv(json: string, rv: number): string {
  const o = JSON.parse(json) as JsonObject;
  (o['metadata'] as JsonObject)['resourceVersion'] = String(rv);
  return JSON.stringify(o);
}

/** Translate a store event into what a filtered watch sees (the watch cache's rules). */
export function filterEvent(ev: StoreEvent, match: (r: Rec) => boolean): string | undefined {
  const cur = match(ev.rec);
  if (ev.type === 'ADDED') return cur ? eventLine('ADDED', ev.rec.res, ev.rec.json) : undefined;
  if (ev.type === 'DELETED') return cur ? eventLine('DELETED', ev.rec.res, ev.rec.json) : undefined;
  const prev = ev.prev ? match(ev.prev) : false;
  if (cur && prev) return eventLine('MODIFIED', ev.rec.res, ev.rec.json);
  if (cur) return eventLine('ADDED', ev.rec.res, ev.rec.json);
  if (prev && ev.prev) return eventLine('DELETED', ev.rec.res, replaceRv(ev.prev.json, ev.rv));
  return undefined;
}

export class Watcher {
  live = false;
  pending: string[] = [];
  private bookmarkTimer: NodeJS.Timeout | undefined;
  private timeoutTimer: NodeJS.Timeout | undefined;
  closed = false;

  constructor(
    readonly res: http.ServerResponse,
    readonly rdef: ResourceDef,
    readonly match: (r: Rec) => boolean,
    private readonly onClose: (w: Watcher) => void,
  ) {
    res.on('close', () => this.close());
  }

  write(line: string): void {
    if (this.closed || this.res.writableEnded) return;
    if (!this.live) {
      this.pending.push(line);
      return;
    }
    this.res.write(line);
    // A client that stops reading is dropped, as the API server drops a stuck watcher.
    if (this.res.writableLength > 256 * 1024 * 1024) this.res.destroy();
  }

  goLive(): void {
    this.live = true;
    const p = this.pending;
    this.pending = [];
    for (const l of p) this.write(l);
  }

  startTimers(bookmarkMs: number | undefined, timeoutMs: number | undefined, currentRv: () => number): void {
    if (bookmarkMs !== undefined) {
      this.bookmarkTimer = setInterval(() => {
        if (this.live) this.write(this.bookmarkLine(currentRv()));
      }, bookmarkMs);
    }
    if (timeoutMs !== undefined) {
      this.timeoutTimer = setTimeout(() => this.end(), timeoutMs);
    }
  }

  bookmarkLine(rv: number, annotations?: Record<string, string>): string {
    const md: JsonObject = { resourceVersion: String(rv) };
    if (annotations) md['annotations'] = annotations;
    return `${JSON.stringify({ type: 'BOOKMARK', object: { kind: this.rdef.kind, apiVersion: this.rdef.apiVersion, metadata: md } })}\n`;
  }

  end(): void {
    if (this.closed) return;
    this.res.end();
    this.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.bookmarkTimer) clearInterval(this.bookmarkTimer);
    if (this.timeoutTimer) clearTimeout(this.timeoutTimer);
    this.onClose(this);
  }
}
