/** Metrics of the kubernetes plugin (docs/records.md §8.5). */
import { counter, DEFAULT_BUCKETS, exponentialBuckets, gauge, histogram } from '../../src/metrics/registry.js';

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

/**
 * Sources of {@link watchStaleness}: each running reflector adds a function returning its
 * resource and the seconds since its last event or bookmark (removed when it stops).
 */
export const stalenessSources = new Set<() => [string, number]>();

/**
 * `coredns_kubernetes_watch_staleness_seconds{resource}` (beyond CoreDNS): seconds since the last
 * watch event, bookmark or completed list of each watched resource; with several indexes (server
 * blocks with different watch settings) the stalest one.
 */
export const watchStaleness = gauge<'resource'>({
  name: 'coredns_kubernetes_watch_staleness_seconds',
  help: 'Seconds since the last watch event, bookmark or list of a resource from the Kubernetes API.',
  labelNames: ['resource'],
  collect() {
    this.reset();
    const worst = new Map<string, number>();
    for (const f of stalenessSources) {
      const [resource, s] = f();
      worst.set(resource, Math.max(worst.get(resource) ?? 0, s));
    }
    for (const [resource, s] of worst) this.set({ resource }, Number(s.toFixed(3)));
  },
});
