/** `ready [ADDRESS] { monitor until-ready|continuously }` (docs/plugins.md, ready). Once per block. */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, listenAddr, oneOf, option, parseOccurrence } from '../../src/corefile/options.js';

export const DEFAULT_READY_ADDRESS = ':8181';

export type MonitorType = 'until-ready' | 'continuously';

export interface ReadyConfig {
  readonly address: string;
  readonly monitor: MonitorType;
}

export const READY_OPTIONS = directive('ready', {
  args: { args: [listenAddr()], min: 0 },
  options: [
    option('monitor', {
      args: [oneOf(['until-ready', 'continuously'], undefined, (v) => `monitor type '${v}' not supported`)],
    }),
  ],
});

/** The core rejects a second `ready` in a block; this reads the one occurrence. */
export function parseReady(d: Dispenser): ReadyConfig {
  let address = DEFAULT_READY_ADDRESS;
  let monitor: MonitorType = 'until-ready';
  let seen = 0;
  while (d.next()) {
    if (seen++ > 0) throw d.err('this plugin can only be used once per Server Block');
    const occ = parseOccurrence(d, READY_OPTIONS);
    address = (occ.directive.values[0] as string | undefined) ?? address;
    monitor = occ.str('monitor', 0, monitor) as MonitorType;
  }
  return { address, monitor };
}
