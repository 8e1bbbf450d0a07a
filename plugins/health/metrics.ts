/** Metrics of the health plugin (docs/plugins.md, health): process-wide, no labels. */
import { counter, histogram } from '../../src/metrics/registry.js';

export const HEALTH_BUCKETS = [0.00025, 0.0025, 0.025, 0.25, 2.5];

export const healthDuration = histogram({
  name: 'coredns_health_request_duration_seconds',
  help: 'Histogram of the time (in seconds) each request took.',
  buckets: HEALTH_BUCKETS,
});

export const healthFailures = counter({
  name: 'coredns_health_request_failures_total',
  help: 'The number of times the health check failed.',
});
