/**
 * `health [ADDRESS] { lameduck DURATION }` (docs/plugins.md, health). Repeated in a block: every
 * occurrence is read and the last address / lameduck wins (docs/corefile.md §8.4).
 */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, duration, listenAddr, option, parseOccurrences } from '../../src/corefile/options.js';

export const DEFAULT_HEALTH_ADDRESS = ':8080';

export interface HealthConfig {
  readonly address: string;
  /** Lame-duck sleep at final shutdown, milliseconds (0 = none). */
  readonly lameduckMs: number;
}

export const HEALTH_OPTIONS = directive('health', {
  args: { args: [listenAddr()], min: 0 },
  options: [
    option('lameduck', {
      args: [duration({ invalid: (v, goError) => `unable to parse lameduck duration value: '${v}' : ${goError}` })],
    }),
  ],
});

export function parseHealth(d: Dispenser): HealthConfig {
  let address = '';
  let lameduckMs = 0;
  for (const occ of parseOccurrences(d, HEALTH_OPTIONS)) {
    address = (occ.directive.values[0] as string | undefined) ?? address;
    lameduckMs = occ.num('lameduck', 0, lameduckMs);
  }
  return { address: address === '' ? DEFAULT_HEALTH_ADDRESS : address, lameduckMs };
}
