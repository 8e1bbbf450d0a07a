/**
 * Batched recording into prom-client for the per-query hot path.
 *
 * prom-client's `labels(...).inc()` / `.observe()` re-validate and re-hash the label set and
 * allocate a closure on every call (about 1 µs each; six of them per query). Here each label set
 * gets a *cell* that accumulates plain numbers (a counter's pending increment; a histogram's
 * per-bucket counts, sum and count). Cells are flushed into the prom-client metrics from the
 * metrics' `collect` hook, which prom-client runs whenever anything reads the metric
 * (`registry.metrics()`, `getSingleMetricAsString`, `metric.get()`), so every reader sees
 * up-to-date values and nothing is read from a stale metric.
 *
 * Counters are flushed through the public `inc(labels, n)`. prom-client has no public way to add
 * a batch of observations to a histogram, so histogram cells add their counts to the series
 * entry in the metric's `hashMap` (prom-client 15 layout: `{labels, bucketValues, sum, count}`,
 * `bucketValues` non-cumulative per upper bound). That layout is checked once at start-up on a
 * private histogram; if it does not match, histogram cells fall back to calling `observe`
 * directly (correct, just slower).
 */
import { client, type Prom } from './registry.js';

type Labels = Record<string, string>;

interface HistEntry {
  labels: Labels;
  bucketValues: Record<string, number>;
  sum: number;
  count: number;
}

interface HistInternals {
  hashMap: Record<string, HistEntry>;
  upperBounds: readonly number[];
}

function internalsOf(h: Prom.Histogram<string>): HistInternals | null {
  const x = h as unknown as Partial<HistInternals>;
  if (typeof x.hashMap !== 'object' || x.hashMap === null || !Array.isArray(x.upperBounds)) return null;
  return x as HistInternals;
}

/**
 * Does this prom-client keep histogram series the way `HistCell.flush` writes them? `observe()`
 * must update, in place, the entry `zero()` created: `bucketValues[bound]` (non-cumulative),
 * `sum` and `count`.
 */
function probeLayout(): boolean {
  try {
    const h = new client.Histogram({
      name: 'clusterdns_layout_probe',
      help: 'probe',
      labelNames: ['a'],
      buckets: [1, 2],
      registers: [],
    });
    const labels = { a: 'x' };
    h.zero(labels);
    const internals = internalsOf(h);
    if (!internals || internals.upperBounds.join() !== '1,2') return false;
    const entries = Object.values(internals.hashMap);
    const e = entries[0];
    if (entries.length !== 1 || !e || typeof e.bucketValues !== 'object') return false;
    h.observe(labels, 1.5);
    h.observe(labels, 7);
    const after = Object.values(internals.hashMap);
    return (
      after.length === 1 &&
      after[0] === e &&
      e.bucketValues['1'] === 0 &&
      e.bucketValues['2'] === 1 &&
      e.sum === 8.5 &&
      e.count === 2
    );
  } catch {
    return false;
  }
}

export const batchedHistograms = probeLayout();

interface Cell {
  dirty: boolean;
  flush(): void;
}

const dirty: Cell[] = [];

/** Push every pending value into prom-client (runs from the metrics' collect hooks). */
export function flushAll(): void {
  for (let i = 0; i < dirty.length; i++) {
    const c = dirty[i]!;
    c.dirty = false;
    c.flush();
  }
  dirty.length = 0;
}

function markDirty(c: Cell): void {
  c.dirty = true;
  dirty.push(c);
}

export class CounterCell implements Cell {
  dirty = false;
  private pending = 0;

  constructor(
    private readonly metric: Prom.Counter<string>,
    private readonly labels: Labels,
  ) {}

  inc(): void {
    this.pending++;
    if (!this.dirty) markDirty(this);
  }

  flush(): void {
    const n = this.pending;
    this.pending = 0;
    if (n > 0) this.metric.inc(this.labels, n);
  }
}

export class HistCell implements Cell {
  dirty = false;
  private readonly bounds: readonly number[];
  /** Non-cumulative counts per upper bound; values above the last bound only count in `count`. */
  private readonly counts: Float64Array;
  private sum = 0;
  private count = 0;
  private key: string | null = null;
  private readonly direct: { observe(v: number): void } | null;

  constructor(
    private readonly metric: Prom.Histogram<string>,
    private readonly labels: Labels,
  ) {
    const internals = batchedHistograms ? internalsOf(metric) : null;
    this.bounds = internals ? internals.upperBounds : [];
    this.counts = new Float64Array(this.bounds.length);
    this.direct = internals ? null : metric.labels(labels);
  }

  observe(v: number): void {
    if (this.direct !== null) {
      this.direct.observe(v);
      return;
    }
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (v <= b[i]!) {
        this.counts[i]!++;
        break;
      }
    }
    this.sum += v;
    this.count++;
    if (!this.dirty) markDirty(this);
  }

  flush(): void {
    if (this.count === 0) return;
    const entry = this.entry();
    for (let i = 0; i < this.bounds.length; i++) {
      const n = this.counts[i]!;
      if (n !== 0) {
        entry.bucketValues[this.bounds[i]!] = (entry.bucketValues[this.bounds[i]!] ?? 0) + n;
        this.counts[i] = 0;
      }
    }
    entry.sum += this.sum;
    entry.count += this.count;
    this.sum = 0;
    this.count = 0;
  }

  /** The series entry in the metric, created through the public `zero()` when missing (or reset). */
  private entry(): HistEntry {
    const map = internalsOf(this.metric)!.hashMap;
    if (this.key !== null) {
      const e = map[this.key];
      if (e !== undefined && sameLabels(e.labels, this.labels)) return e;
    }
    let found = findEntry(map, this.labels);
    if (found === null) {
      this.metric.zero(this.labels);
      found = findEntry(internalsOf(this.metric)!.hashMap, this.labels);
    }
    if (found === null) throw new Error(`prometheus: series ${JSON.stringify(this.labels)} not found after zero()`);
    this.key = found[0];
    return found[1];
  }
}

function sameLabels(a: Labels, b: Labels): boolean {
  if (a === b) return true;
  for (const k in b) if (a[k] !== b[k]) return false;
  for (const k in a) if (!(k in b)) return false;
  return true;
}

function findEntry(map: Record<string, HistEntry>, labels: Labels): [string, HistEntry] | null {
  for (const k in map) {
    const e = map[k]!;
    if (sameLabels(e.labels, labels)) return [k, e];
  }
  return null;
}

const hooked = new WeakSet<object>();

/**
 * Make `metric` flush the pending cells whenever it is read. Chains a collect function that was
 * already there.
 */
export function flushOnCollect(metric: Prom.Counter<string> | Prom.Histogram<string>): void {
  if (hooked.has(metric)) return;
  hooked.add(metric);
  const m = metric as unknown as { collect?: () => void | Promise<void> };
  const prev = m.collect;
  m.collect = prev
    ? function (this: unknown) {
        flushAll();
        return prev.call(this);
      }
    : () => flushAll();
}
