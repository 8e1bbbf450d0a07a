/**
 * YAML fixture files as `kubectl get -o yaml` prints them (a `kind: List` or multi-document
 * YAML), and a watcher that re-reads them when they change (mtime/size poll plus an fs.watch
 * hint) and reports the objects that appeared, changed or disappeared.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { isObject, resourceByKind } from './resources.js';

export class YamlError extends Error {}

/** All objects in a YAML text; `List` objects are flattened. Throws YamlError when malformed. */
export function parseYamlObjects(text: string, source = 'yaml'): unknown[] {
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs)) {
    // an EmptyStream: no documents at all
    return [];
  }
  const out: unknown[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      const e = doc.errors[0];
      throw new YamlError(`${source}: ${e ? e.message : 'invalid YAML'}`);
    }
    const v: unknown = doc.toJS();
    if (v === null || v === undefined) continue;
    if (!isObject(v)) throw new YamlError(`${source}: a document is not a mapping`);
    if (typeof v['kind'] === 'string' && v['kind'].endsWith('List') && Array.isArray(v['items'])) {
      for (const item of v['items']) {
        if (!isObject(item)) throw new YamlError(`${source}: a List item is not a mapping`);
        out.push(item);
      }
    } else {
      out.push(v);
    }
  }
  return out;
}

export interface FileObject {
  kind: string;
  namespace: string | undefined;
  name: string;
  obj: unknown;
  /** canonical text of the object as written, to detect changes */
  canon: string;
}

function identify(o: unknown, source: string): FileObject {
  if (!isObject(o)) throw new YamlError(`${source}: object is not a mapping`);
  const kind = o['kind'];
  const md = o['metadata'];
  if (typeof kind !== 'string') throw new YamlError(`${source}: object without kind`);
  if (!isObject(md) || typeof md['name'] !== 'string') throw new YamlError(`${source}: ${kind} without metadata.name`);
  const res = resourceByKind(kind);
  const nsv = md['namespace'];
  const namespace = res && !res.namespaced ? undefined : typeof nsv === 'string' && nsv !== '' ? nsv : 'default';
  return { kind, namespace, name: md['name'], obj: o, canon: JSON.stringify(o) };
}

export function objectKey(kind: string, namespace: string | undefined, name: string): string {
  return `${kind}/${namespace ?? ''}/${name}`;
}

export interface FileChanges {
  upserts: FileObject[];
  deletes: FileObject[];
}

interface FileState {
  path: string;
  sig: string;
  objects: FileObject[];
}

/**
 * Holds the objects of a set of files. `load()` reads all (throws on the first bad file);
 * `start(onChange)` then polls. On a malformed file, `warn` is called and that file's previous
 * objects are kept.
 */
export class FileSet {
  private readonly states: FileState[];
  private current = new Map<string, FileObject>();
  private timer: NodeJS.Timeout | undefined;
  private watchers: fs.FSWatcher[] = [];
  private checking = false;
  private recheck = false;
  private closed = false;

  constructor(
    files: readonly string[],
    private readonly warn: (msg: string) => void,
    private readonly pollMs = 500,
  ) {
    this.states = files.map((p) => ({ path: path.resolve(p), sig: '', objects: [] }));
  }

  /** Initial synchronous load; throws on unreadable or malformed files. */
  load(): FileObject[] {
    for (const st of this.states) {
      const stat = fs.statSync(st.path);
      const text = fs.readFileSync(st.path, 'utf8');
      st.objects = this.parseFile(text, st.path);
      st.sig = sigOf(stat);
    }
    this.current = this.union();
    return [...this.current.values()];
  }

  start(onChange: (c: FileChanges) => void): void {
    this.timer = setInterval(() => this.check(onChange, false), this.pollMs);
    this.timer.unref();
    const dirs = new Set(this.states.map((s) => path.dirname(s.path)));
    for (const dir of dirs) {
      try {
        const w = fs.watch(dir, { persistent: false }, () => this.check(onChange, true));
        w.on('error', () => undefined);
        this.watchers.push(w);
      } catch {
        // polling alone still works
      }
    }
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    for (const w of this.watchers) w.close();
    this.watchers = [];
  }

  private parseFile(text: string, source: string): FileObject[] {
    return parseYamlObjects(text, source).map((o) => identify(o, source));
  }

  private union(): Map<string, FileObject> {
    const m = new Map<string, FileObject>();
    for (const st of this.states) for (const fo of st.objects) m.set(objectKey(fo.kind, fo.namespace, fo.name), fo);
    return m;
  }

  /** Re-read changed files. `force` (an fs.watch hint) re-reads even with an unchanged stat. */
  private check(onChange: (c: FileChanges) => void, force: boolean): void {
    if (this.closed) return;
    if (this.checking) {
      this.recheck = true;
      return;
    }
    this.checking = true;
    void this.doCheck(force)
      .then((changes) => {
        if (changes && !this.closed) onChange(changes);
      })
      .finally(() => {
        this.checking = false;
        if (this.recheck) {
          this.recheck = false;
          this.check(onChange, true);
        }
      });
  }

  private async doCheck(force: boolean): Promise<FileChanges | undefined> {
    let changed = false;
    for (const st of this.states) {
      let stat: fs.Stats;
      try {
        stat = await fs.promises.stat(st.path);
      } catch {
        if (st.sig !== 'missing') this.warn(`${st.path}: cannot read file, keeping previous objects`);
        st.sig = 'missing';
        continue;
      }
      const sig = sigOf(stat);
      if (sig === st.sig && !force) continue;
      let text: string;
      try {
        text = await fs.promises.readFile(st.path, 'utf8');
      } catch (e) {
        this.warn(`${st.path}: ${(e as Error).message}, keeping previous objects`);
        continue;
      }
      const wasSig = st.sig;
      st.sig = sig;
      let objs: FileObject[];
      try {
        objs = this.parseFile(text, st.path);
      } catch (e) {
        if (sig !== wasSig || !force) this.warn(`${(e as Error).message}; keeping previous objects`);
        continue;
      }
      st.objects = objs;
      changed = true;
    }
    if (!changed) return undefined;
    const next = this.union();
    const upserts: FileObject[] = [];
    const deletes: FileObject[] = [];
    for (const [k, fo] of next) {
      const old = this.current.get(k);
      if (!old || old.canon !== fo.canon) upserts.push(fo);
    }
    for (const [k, fo] of this.current) if (!next.has(k)) deletes.push(fo);
    this.current = next;
    if (upserts.length === 0 && deletes.length === 0) return undefined;
    return { upserts, deletes };
  }
}

function sigOf(s: fs.Stats): string {
  return `${s.ino}:${s.size}:${s.mtimeMs}`;
}
