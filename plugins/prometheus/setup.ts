/** `prometheus [ADDRESS] { runtime_metrics; tls CONFIG_FILE }` (docs/plugins.md, prometheus). Once per block. */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, file, listenAddr, option, parseOccurrence } from '../../src/corefile/options.js';

export const DEFAULT_METRICS_ADDRESS = 'localhost:9153';

export interface PrometheusConfig {
  readonly address: string;
  readonly runtimeMetrics: boolean;
  /** Path of an exporter-toolkit web-config YAML, or '' for plain HTTP. */
  readonly tlsConfigPath: string;
}

export const PROMETHEUS_OPTIONS = directive('prometheus', {
  args: { args: [listenAddr()], min: 0 },
  options: [
    option('runtime_metrics'),
    option('tls', { args: [file('CONFIG_FILE')], repeat: 'error', repeated: 'tls block already specified' }),
  ],
  unknown: (name) => `unknown option: ${name}`,
});

export function parsePrometheus(d: Dispenser): PrometheusConfig {
  let address = DEFAULT_METRICS_ADDRESS;
  let runtimeMetrics = false;
  let tlsConfigPath = '';
  let seen = 0;
  while (d.next()) {
    if (seen++ > 0) throw d.err('this plugin can only be used once per Server Block');
    const occ = parseOccurrence(d, PROMETHEUS_OPTIONS);
    address = (occ.directive.values[0] as string | undefined) ?? address;
    runtimeMetrics = occ.has('runtime_metrics');
    tlsConfigPath = occ.str('tls', 0, '');
  }
  return { address, runtimeMetrics, tlsConfigPath };
}
