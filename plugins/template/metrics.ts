/** Metrics of the template plugin (docs/plugins.md, template), named and labelled as CoreDNS 1.15.0's. */
import { counter } from '../../src/metrics/registry.js';

export const templateMatches = counter({
  name: 'coredns_template_matches_total',
  help: 'Counter of template regex matches.',
  labelNames: ['server', 'zone', 'view', 'class', 'type'] as const,
});

export const templateFailures = counter({
  name: 'coredns_template_template_failures_total',
  help: 'Counter of go template failures.',
  labelNames: ['server', 'zone', 'view', 'class', 'type', 'section', 'template'] as const,
});

export const templateRRFailures = counter({
  name: 'coredns_template_rr_failures_total',
  help: 'Counter of mis-templated RRs.',
  labelNames: ['server', 'zone', 'view', 'class', 'type', 'section', 'template'] as const,
});
