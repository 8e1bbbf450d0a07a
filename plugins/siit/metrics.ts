/** Metrics of the siit plugin: CoreDNS 1.15.0's name, label and help text. */
import { counter } from '../../src/metrics/registry.js';

export const translated = counter({
  name: 'coredns_siit_requests_translated_total',
  help: 'Counter of DNS requests translated by siit.',
  labelNames: ['server'] as const,
});
