/** Metrics of the kubernetes plugin (docs/records.md §8.5). */
import { counter, DEFAULT_BUCKETS, exponentialBuckets, histogram } from '../../src/metrics/registry.js';

export const programmingDuration = histogram<'service_kind'>({
  name: 'coredns_kubernetes_dns_programming_duration_seconds',
  help: 'Histogram of the time (in seconds) it took to program a dns instance.',
  labelNames: ['service_kind'],
  buckets: exponentialBuckets(0.001, 2, 20),
});

export const requestDuration = histogram<'verb' | 'host'>({
  name: 'coredns_kubernetes_rest_client_request_duration_seconds',
  help: 'Request latency in seconds. Broken down by verb and host.',
  labelNames: ['verb', 'host'],
  buckets: DEFAULT_BUCKETS,
});

export const rateLimiterDuration = histogram<'verb' | 'host'>({
  name: 'coredns_kubernetes_rest_client_rate_limiter_duration_seconds',
  help: 'Client side rate limiter latency in seconds. Broken down by verb and host.',
  labelNames: ['verb', 'host'],
  buckets: DEFAULT_BUCKETS,
});

export const requestsTotal = counter<'code' | 'method' | 'host'>({
  name: 'coredns_kubernetes_rest_client_requests_total',
  help: 'Number of HTTP requests, partitioned by status code, method, and host.',
  labelNames: ['code', 'method', 'host'],
});

/** The `host` label: host:port with invalid UTF-8 replaced by U+FFFD. */
export function hostLabel(url: URL): string {
  return Buffer.from(url.host, 'utf8').toString('utf8');
}
