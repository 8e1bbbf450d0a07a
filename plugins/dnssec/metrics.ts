/** Metrics of the dnssec plugin (docs/plugins.md, dnssec): CoreDNS 1.15.0's names, help and labels. */
import { counter, gauge } from '../../src/metrics/registry.js';

export const cacheEntries = gauge({
  name: 'coredns_dnssec_cache_entries',
  help: 'The number of elements in the dnssec cache.',
  labelNames: ['server', 'type'] as const,
});

export const cacheHits = counter({
  name: 'coredns_dnssec_cache_hits_total',
  help: 'The count of cache hits.',
  labelNames: ['server'] as const,
});

export const cacheMisses = counter({
  name: 'coredns_dnssec_cache_misses_total',
  help: 'The count of cache misses.',
  labelNames: ['server'] as const,
});
