/** Metrics of the reload plugin (docs/plugins.md, reload). */
import { counter, gauge } from '../../src/metrics/registry.js';

export const reloadFailed = counter({
  name: 'coredns_reload_failed_total',
  help: 'Counter of the number of failed reload attempts.',
});

export const reloadVersionInfo = gauge({
  name: 'coredns_reload_version_info',
  help: "A metric with a constant '1' value labeled by hash, and value which type of hash generated.",
  labelNames: ['hash', 'value'] as const,
});

/** Publish the hash of a newly detected configuration (the previous series is removed first). */
export function setVersionInfo(hex: string): void {
  reloadVersionInfo.reset();
  reloadVersionInfo.labels('sha512', hex).set(1);
}
