/**
 * Metrics of the forward plugin (docs/plugins.md, forward and the metric catalogue): the current
 * `coredns_proxy_*` / `coredns_forward_*` names and the pre-1.11 compatibility family that the
 * coredns-mixin dashboards still query (all four of them, never `sockets_open`).
 */
import { flushOnCollect } from '../../src/metrics/batch.js';
import { counter, exponentialBuckets, histogram } from '../../src/metrics/registry.js';

const DURATION_BUCKETS = exponentialBuckets(0.00025, 2, 16);

export const proxyRequestDuration = histogram({
  name: 'coredns_proxy_request_duration_seconds',
  help: 'Histogram of the time each request took.',
  labelNames: ['proxy_name', 'to', 'rcode'] as const,
  buckets: DURATION_BUCKETS,
});

export const proxyHealthcheckFailures = counter({
  name: 'coredns_proxy_healthcheck_failures_total',
  help: 'Counter of the number of failed healthchecks.',
  labelNames: ['proxy_name', 'to'] as const,
});

export const proxyConnCacheHits = counter({
  name: 'coredns_proxy_conn_cache_hits_total',
  help: 'Counter of connection cache hits per upstream and protocol.',
  labelNames: ['proxy_name', 'to', 'proto'] as const,
});

export const proxyConnCacheMisses = counter({
  name: 'coredns_proxy_conn_cache_misses_total',
  help: 'Counter of connection cache misses per upstream and protocol.',
  labelNames: ['proxy_name', 'to', 'proto'] as const,
});

export const healthcheckBroken = counter({
  name: 'coredns_forward_healthcheck_broken_total',
  help: 'Counter of the number of complete failures of the healthchecks.',
});

export const maxConcurrentRejects = counter({
  name: 'coredns_forward_max_concurrent_rejects_total',
  help: 'Counter of the number of queries rejected because the concurrent queries were at maximum.',
});

// Compatibility family (CoreDNS ≤ 1.10 names), counted per upstream exchange.
export const forwardRequests = counter({
  name: 'coredns_forward_requests_total',
  help: 'Counter of requests made per upstream.',
  labelNames: ['to'] as const,
});

export const forwardResponses = counter({
  name: 'coredns_forward_responses_total',
  help: 'Counter of responses received per upstream.',
  labelNames: ['rcode', 'to'] as const,
});

export const forwardRequestDuration = histogram({
  name: 'coredns_forward_request_duration_seconds',
  help: 'Histogram of the time each request took.',
  labelNames: ['to', 'rcode'] as const,
  buckets: DURATION_BUCKETS,
});

export const forwardHealthcheckFailures = counter({
  name: 'coredns_forward_healthcheck_failures_total',
  help: 'Counter of the number of failed healthchecks.',
  labelNames: ['to'] as const,
});

// Recorded per query through batched cells (proxy.ts): pushed into prom-client when read.
for (const metric of [
  forwardRequests,
  forwardResponses,
  forwardRequestDuration,
  proxyRequestDuration,
  proxyConnCacheHits,
  proxyConnCacheMisses,
])
  flushOnCollect(metric);
