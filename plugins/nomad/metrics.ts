/** Metrics of the nomad plugin: CoreDNS 1.15.0's names, labels and help texts. */
import { counter } from '../../src/metrics/registry.js';

export const successRequests = counter({
  name: 'coredns_nomad_success_requests_total',
  help: 'Counter of DNS requests handled successfully.',
  labelNames: ['server', 'namespace'] as const,
});

export const failedRequests = counter({
  name: 'coredns_nomad_failed_requests_total',
  help: 'Counter of DNS requests failed.',
  labelNames: ['server', 'namespace'] as const,
});
