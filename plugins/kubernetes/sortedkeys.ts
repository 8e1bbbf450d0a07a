/**
 * The service keys (`name.namespace`, store.ts serviceKey) of an index in zone-transfer order, kept
 * between changes of the index: a transfer of `cluster.local` lists Services sorted by name as
 * CoreDNS 1.15.0 does, and sorting 10,000 keys when each transfer began stopped every other client
 * for tens of milliseconds (and the ~1 MiB of sort entries, alive for the whole transfer, was
 * promoted by every young-generation collection): docs/benchmarks.md, issue 27's third section.
 *
 * The index reports each key it added or removed ({@link changed}); the order is rebuilt when it is
 * next asked for, by merging the changed keys into the previous order (linear, no comparisons of
 * keys that did not change), or by one whole sort when there is none or too much changed. Every
 * rebuild makes a new array and never touches one handed out: a transfer in progress keeps the
 * order of its start, as it did when it sorted its own copy.
 */

/** By name, then namespace (CoreDNS's sort is not stable; the namespace orders equal names here). */
export function compareServiceKeys(a: string, b: string): number {
  const da = a.lastIndexOf('.');
  const db = b.lastIndexOf('.');
  // The name is the text before the last dot (a namespace has no dot): compare it char by char, a
  // shorter name that is a prefix of the other first, then the namespaces the same way.
  const n = Math.min(da, db);
  for (let i = 0; i < n; i++) {
    const d = a.charCodeAt(i) - b.charCodeAt(i);
    if (d !== 0) return d;
  }
  if (da !== db) return da - db;
  const ns = a.length < b.length ? a.length : b.length;
  for (let i = da + 1; i < ns; i++) {
    const d = a.charCodeAt(i) - b.charCodeAt(i);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

export class SortedKeys {
  /** The order as last built; null before the first request and after a reset. */
  private order: readonly string[] | null = null;
  /** Keys added, removed or touched since {@link order} was built (whether each is there is asked at the rebuild). */
  private readonly dirty = new Set<string>();

  /** `key` was added to or removed from the index (a key that was only updated may be reported too). */
  changed(key: string): void {
    if (this.order === null) return;
    this.dirty.add(key);
    // A relist of a whole cluster with no transfer in between: a whole sort will be as cheap, and
    // the set stays small.
    if (this.dirty.size > 1024 && this.dirty.size > this.order.length / 4) this.reset();
  }

  /** Forget the order (the index was replaced as a whole). */
  reset(): void {
    this.order = null;
    this.dirty.clear();
  }

  /**
   * The keys in order. `all` lists every key of the index (for a whole sort); `has` tells whether a
   * changed key is in it now. The array is never changed afterwards.
   */
  sorted(all: () => Iterable<string>, has: (key: string) => boolean): readonly string[] {
    if (this.order !== null && this.dirty.size === 0) return this.order;
    if (this.order === null || this.dirty.size > this.order.length / 4) {
      this.dirty.clear();
      this.order = [...all()].sort(compareServiceKeys);
      return this.order;
    }
    const added: string[] = [];
    for (const k of this.dirty) if (has(k)) added.push(k);
    added.sort(compareServiceKeys);
    const base = this.order;
    const out: string[] = [];
    let j = 0;
    for (const k of base) {
      // A changed key leaves the old order and comes back from `added` when it is still there.
      if (this.dirty.has(k)) continue;
      while (j < added.length && compareServiceKeys(added[j]!, k) < 0) out.push(added[j++]!);
      out.push(k);
    }
    while (j < added.length) out.push(added[j++]!);
    this.dirty.clear();
    this.order = out;
    return out;
  }
}
