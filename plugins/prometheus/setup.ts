/** `prometheus [ADDRESS] { runtime_metrics; tls CONFIG_FILE }` (docs/plugins.md, prometheus). Once per block. */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { readAddressArg } from '../../src/server/sideaddress.js';

export const DEFAULT_METRICS_ADDRESS = 'localhost:9153';

export interface PrometheusConfig {
  readonly address: string;
  readonly runtimeMetrics: boolean;
  /** Path of an exporter-toolkit web-config YAML, or '' for plain HTTP. */
  readonly tlsConfigPath: string;
}

export function parsePrometheus(d: Dispenser): PrometheusConfig {
  let address = DEFAULT_METRICS_ADDRESS;
  let runtimeMetrics = false;
  let tlsConfigPath = '';
  let seen = 0;
  while (d.next()) {
    if (seen++ > 0) throw d.err('this plugin can only be used once per Server Block');
    address = readAddressArg(d) ?? address;
    while (d.nextBlock()) {
      switch (d.val()) {
        case 'runtime_metrics':
          if (d.remainingArgs().length !== 0) throw d.argErr();
          runtimeMetrics = true;
          break;
        case 'tls': {
          if (tlsConfigPath !== '') throw d.err('tls block already specified');
          const rest = d.remainingArgs();
          if (rest.length !== 1) throw d.err('tls requires exactly one argument');
          tlsConfigPath = rest[0]!;
          break;
        }
        default:
          throw d.err(`unknown option: ${d.val()}`);
      }
    }
  }
  return { address, runtimeMetrics, tlsConfigPath };
}
