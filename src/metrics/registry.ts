/**
 * The process-wide Prometheus registry. Every metric is created through `counter`/`gauge`/
 * `histogram` here so that re-running a plugin's setup (reload) returns the existing metric
 * instead of failing on a duplicate name. The prometheus plugin serves this registry.
 */
import type * as Prom from 'prom-client';
import { requireCjs } from '../util/require.js';

const client = requireCjs('prom-client') as typeof Prom;

export const registry = new client.Registry();

type Cfg<T extends string> = { name: string; help: string; labelNames?: readonly T[] };

export function counter<T extends string>(cfg: Cfg<T>): Prom.Counter<T> {
  const existing = registry.getSingleMetric(cfg.name);
  if (existing) return existing as Prom.Counter<T>;
  return new client.Counter<T>({ ...cfg, labelNames: cfg.labelNames ?? [], registers: [registry] });
}

export function gauge<T extends string>(cfg: Cfg<T> & { collect?: (this: Prom.Gauge<T>) => void | Promise<void> }): Prom.Gauge<T> {
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

export { client, type Prom };
