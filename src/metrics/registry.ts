/**
 * The process-wide Prometheus registry. Every metric is created through `counter`/`gauge`/
 * `histogram` here so that re-running a plugin's setup (reload) returns the existing metric
 * instead of failing on a duplicate name. The prometheus plugin serves this registry.
 */
import type * as Prom from 'prom-client';
import { requireCjs } from '../util/require.js';

/**
 * prom-client's classes, each from its own file rather than the package index: the index also
 * loads the Pushgateway (node:https and TLS) and the default collectors (@opentelemetry/api),
 * about 10 MiB of RSS in every query thread for code only the main thread's scrape runs. Those
 * two parts are loaded where they are used (`aggregateMetrics`, `collectDefaultMetrics`).
 * registry.test.ts checks that these are the classes the index exports.
 */
const client = {
  Registry: requireCjs('prom-client/lib/registry') as typeof Prom.Registry,
  Counter: requireCjs('prom-client/lib/counter') as typeof Prom.Counter,
  Gauge: requireCjs('prom-client/lib/gauge') as typeof Prom.Gauge,
  Histogram: requireCjs('prom-client/lib/histogram') as typeof Prom.Histogram,
};

/** Metrics of one registry as `getMetricsAsJSON` gives them (what a query thread sends). */
export type MetricsJson = Prom.MetricObjectWithValues<Prom.MetricValue<string>>[];

/**
 * Gauges whose per-thread values add up (each thread has its own cache or shadow queue); every
 * other gauge is the same fact seen from each thread (build info, enabled plugins, hosts entries,
 * the configuration hash) and reads the largest value.
 */
const SUMMED_GAUGES = new Set(['coredns_cache_entries', 'clusterdns_shadow_outstanding']);

/** Metrics about the process and the main thread's runtime: reported once, from the main thread. */
function processWide(name: string): boolean {
  return name.startsWith('process_') || name.startsWith('nodejs_');
}

/**
 * The pod's totals from the main thread's metrics and each query thread's (docs/multicore.md):
 * counters and histograms (buckets, sum, count) are summed per name and labels; gauges as above.
 */
export function aggregateMetrics(own: MetricsJson, threads: readonly MetricsJson[]): Prom.Registry {
  const arrays: MetricsJson[] = [own, ...threads.map((t) => t.filter((m) => !processWide(m.name)))];
  for (const list of arrays) {
    for (const m of list) {
      const aggregator: Prom.Aggregator =
        (m.type as unknown as string) === 'gauge' && !SUMMED_GAUGES.has(m.name) ? 'max' : 'sum';
      (m as { aggregator: Prom.Aggregator }).aggregator = aggregator;
    }
  }
  return (requireCjs('prom-client/lib/cluster') as typeof Prom.AggregatorRegistry).aggregate(arrays);
}

/**
 * The process-wide registry. With query threads, `gather` (set by the main thread) returns every
 * thread's metrics and a scrape serves the totals under the same names and labels.
 */
class PodRegistry extends client.Registry {
  private gather: (() => Promise<MetricsJson[]>) | null = null;

  setGather(fn: (() => Promise<MetricsJson[]>) | null): void {
    this.gather = fn;
  }

  override async metrics(): Promise<string> {
    if (!this.gather) return super.metrics();
    const [own, threads] = await Promise.all([this.getMetricsAsJSON() as Promise<MetricsJson>, this.gather()]);
    return aggregateMetrics(own, threads).metrics();
  }
}

export const registry = new PodRegistry();

type Cfg<T extends string> = { name: string; help: string; labelNames?: readonly T[] };

export function counter<T extends string>(cfg: Cfg<T>): Prom.Counter<T> {
  const existing = registry.getSingleMetric(cfg.name);
  if (existing) return existing as Prom.Counter<T>;
  return new client.Counter<T>({ ...cfg, labelNames: cfg.labelNames ?? [], registers: [registry] });
}

export function gauge<T extends string>(
  cfg: Cfg<T> & { collect?: (this: Prom.Gauge<T>) => void | Promise<void> },
): Prom.Gauge<T> {
  const existing = registry.getSingleMetric(cfg.name);
  if (existing) return existing as Prom.Gauge<T>;
  return new client.Gauge<T>({ ...cfg, labelNames: cfg.labelNames ?? [], registers: [registry] });
}

export function histogram<T extends string>(cfg: Cfg<T> & { buckets: number[] }): Prom.Histogram<T> {
  const existing = registry.getSingleMetric(cfg.name);
  if (existing) return existing as Prom.Histogram<T>;
  return new client.Histogram<T>({ ...cfg, labelNames: cfg.labelNames ?? [], registers: [registry] });
}

/** `start * factor^k` for k = 0..count-1 (Prometheus ExponentialBuckets). */
export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  const out: number[] = [];
  for (let i = 0, v = start; i < count; i++, v *= factor) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Prometheus client_golang DefBuckets. */
export const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** prom-client's process_* and nodejs_* collectors, registered into `registry` (main thread). */
export function collectDefaultMetrics(): void {
  (requireCjs('prom-client/lib/defaultMetrics') as typeof Prom.collectDefaultMetrics)({ register: registry });
}

export { client, type Prom };
