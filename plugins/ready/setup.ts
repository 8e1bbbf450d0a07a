/** `ready [ADDRESS] { monitor until-ready|continuously }` (docs/plugins.md, ready). Once per block. */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { readAddressArg } from '../../src/server/sideaddress.js';

export const DEFAULT_READY_ADDRESS = ':8181';

export type MonitorType = 'until-ready' | 'continuously';

export interface ReadyConfig {
  readonly address: string;
  readonly monitor: MonitorType;
}

export function parseReady(d: Dispenser): ReadyConfig {
  let address = DEFAULT_READY_ADDRESS;
  let monitor: MonitorType = 'until-ready';
  let seen = 0;
  while (d.next()) {
    if (seen++ > 0) throw d.err('this plugin can only be used once per Server Block');
    address = readAddressArg(d) ?? address;
    while (d.nextBlock()) {
      const prop = d.val();
      if (prop !== 'monitor') throw d.err(`unknown property '${prop}'`);
      const v = d.remainingArgs();
      if (v.length !== 1) throw d.argErr();
      if (v[0] !== 'until-ready' && v[0] !== 'continuously') throw d.err(`monitor type '${v[0]!}' not supported`);
      monitor = v[0];
    }
  }
  return { address, monitor };
}
