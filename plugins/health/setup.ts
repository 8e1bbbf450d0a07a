/**
 * `health [ADDRESS] { lameduck DURATION }` (docs/plugins.md, health). Repeated in a block: every
 * occurrence is read and the last address / lameduck wins (docs/corefile.md §8.4).
 */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { readAddressArg } from '../../src/server/sideaddress.js';
import { parseGoDuration } from '../../src/util/duration.js';

export const DEFAULT_HEALTH_ADDRESS = ':8080';

export interface HealthConfig {
  readonly address: string;
  /** Lame-duck sleep at final shutdown, milliseconds (0 = none). */
  readonly lameduckMs: number;
}

export function parseHealth(d: Dispenser): HealthConfig {
  let address = '';
  let lameduckMs = 0;
  while (d.next()) {
    address = readAddressArg(d) ?? address;
    while (d.nextBlock()) {
      const prop = d.val();
      if (prop !== 'lameduck') throw d.err(`unknown property '${prop}'`);
      const v = d.remainingArgs();
      if (v.length !== 1) throw d.argErr();
      try {
        lameduckMs = parseGoDuration(v[0]!);
      } catch (e) {
        throw d.err(`unable to parse lameduck duration value: '${v[0]!}' : ${(e as Error).message}`);
      }
    }
  }
  return { address: address === '' ? DEFAULT_HEALTH_ADDRESS : address, lameduckMs };
}
