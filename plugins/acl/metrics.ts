/** Metrics of the acl plugin: CoreDNS 1.15.0's names, labels and help texts. */
import { counter } from '../../src/metrics/registry.js';

export const blocked = counter({
  name: 'coredns_acl_blocked_requests_total',
  help: 'Counter of DNS requests being blocked.',
  labelNames: ['server', 'zone', 'view'] as const,
});

export const filtered = counter({
  name: 'coredns_acl_filtered_requests_total',
  help: 'Counter of DNS requests being filtered.',
  labelNames: ['server', 'zone', 'view'] as const,
});

export const allowed = counter({
  name: 'coredns_acl_allowed_requests_total',
  help: 'Counter of DNS requests being allowed.',
  labelNames: ['server', 'view'] as const,
});

export const dropped = counter({
  name: 'coredns_acl_dropped_requests_total',
  help: 'Counter of DNS requests being dropped.',
  labelNames: ['server', 'zone', 'view'] as const,
});
