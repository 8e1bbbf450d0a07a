/** Metrics of the autopath plugin (docs/plugins.md, autopath). */
import { counter } from '../../src/metrics/registry.js';

export const successTotal = counter({
  name: 'coredns_autopath_success_total',
  help: 'Counter of requests that did autopath.',
  labelNames: ['server'] as const,
});
