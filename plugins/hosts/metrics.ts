/** Metrics of the hosts plugin (docs/plugins.md, hosts). */
import { gauge } from '../../src/metrics/registry.js';

export const hostsEntries = gauge({
  name: 'coredns_hosts_entries',
  help: 'The combined number of entries in hosts and Corefile.',
  labelNames: ['hostsfile'] as const,
});

export const hostsReloadTimestamp = gauge({
  name: 'coredns_hosts_reload_timestamp_seconds',
  help: 'The timestamp of the last reload of hosts file.',
});
