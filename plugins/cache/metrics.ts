/** Metrics of the cache plugin (docs/plugins.md, cache; labels in catalogue order). */
import { counter, gauge } from '../../src/metrics/registry.js';
import { flushOnCollect } from '../../src/metrics/batch.js';

export const entries = gauge({
  name: 'coredns_cache_entries',
  help: 'The number of elements in the cache.',
  labelNames: ['server', 'type', 'zones', 'view'] as const,
});

export const requests = counter({
  name: 'coredns_cache_requests_total',
  help: 'The count of cache requests.',
  labelNames: ['server', 'zones', 'view'] as const,
});

export const hits = counter({
  name: 'coredns_cache_hits_total',
  help: 'The count of cache hits.',
  labelNames: ['server', 'type', 'zones', 'view'] as const,
});

export const misses = counter({
  name: 'coredns_cache_misses_total',
  help: 'The count of cache misses. Deprecated, derive misses from cache hits/requests counters.',
  labelNames: ['server', 'zones', 'view'] as const,
});

export const prefetches = counter({
  name: 'coredns_cache_prefetch_total',
  help: 'The number of times the cache has prefetched a cached item.',
  labelNames: ['server', 'zones', 'view'] as const,
});

export const drops = counter({
  name: 'coredns_cache_drops_total',
  help: 'The number responses that are not cached, because the reply is malformed.',
  labelNames: ['server', 'zones', 'view'] as const,
});

export const servedStale = counter({
  name: 'coredns_cache_served_stale_total',
  help: 'The number of requests served from stale cache entries.',
  labelNames: ['server', 'zones', 'view'] as const,
});

export const evictions = counter({
  name: 'coredns_cache_evictions_total',
  help: 'The count of cache evictions.',
  labelNames: ['server', 'type', 'zones', 'view'] as const,
});

// The per-query counters are recorded through batched cells (src/metrics/batch.ts).
for (const m of [requests, hits, misses, prefetches, drops, servedStale]) flushOnCollect(m);
