/**
 * The registry takes prom-client's classes from their own files (registry.ts says why); they must
 * be the very classes the package exports, or a prom-client upgrade that moves them must fail here.
 */
import { describe, expect, it } from 'vitest';
import type * as Prom from 'prom-client';
import { client, collectDefaultMetrics, counter, registry } from './registry.js';
import { requireCjs } from '../util/require.js';

describe('the metrics registry', () => {
  it('uses the classes prom-client exports', () => {
    const index = requireCjs('prom-client') as typeof Prom;
    expect(client.Registry).toBe(index.Registry);
    expect(client.Counter).toBe(index.Counter);
    expect(client.Gauge).toBe(index.Gauge);
    expect(client.Histogram).toBe(index.Histogram);
    expect(requireCjs('prom-client/lib/cluster')).toBe(index.AggregatorRegistry);
    expect(requireCjs('prom-client/lib/defaultMetrics')).toBe(index.collectDefaultMetrics);
  });

  it('registers the default collectors and serves a counter in text format', async () => {
    collectDefaultMetrics();
    const c = counter({ name: 'clusterdns_registry_test_total', help: 'test', labelNames: ['a'] });
    c.inc({ a: 'x' }, 3);
    const text = await registry.metrics();
    expect(text).toContain('clusterdns_registry_test_total{a="x"} 3');
    expect(text).toMatch(/^process_cpu_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d/m);
  });
});
