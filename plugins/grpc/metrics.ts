/** Metrics of the grpc plugin, as CoreDNS 1.15.0's plugin/grpc/metrics.go names them. */
import { counter, exponentialBuckets, histogram } from '../../src/metrics/registry.js';

export const requests = counter({
  name: 'coredns_grpc_requests_total',
  help: 'Counter of requests made per upstream.',
  labelNames: ['to'] as const,
});

// CoreDNS gives the responses counter the requests counter's help text; kept as it is.
export const responses = counter({
  name: 'coredns_grpc_responses_total',
  help: 'Counter of requests made per upstream.',
  labelNames: ['rcode', 'to'] as const,
});

export const duration = histogram({
  name: 'coredns_grpc_request_duration_seconds',
  help: 'Histogram of the time each request took.',
  labelNames: ['to'] as const,
  // plugin.TimeBuckets
  buckets: exponentialBuckets(0.00025, 2, 16),
});
