/**
 * `nomad [ZONE] { address URL...; filter FILTER; token TOKEN; ttl DURATION }` (README.md), read as
 * CoreDNS 1.15.0's parse does: only the directive's first occurrence in a block, the zone argument
 * as written (default `service.nomad`), option names in any letter case, errors in its words.
 */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, option, str } from '../../src/corefile/options.js';
import { ConfigError } from '../../src/corefile/types.js';

export const NOMAD_OPTIONS = directive('nomad', {
  args: { rest: str('ZONE'), min: 0 },
  options: [
    option('address', { rest: str('URL'), min: 1 }),
    option('filter', { args: [str('FILTER')] }),
    option('token', { args: [str('TOKEN')] }),
    option('ttl', { args: [str('DURATION')] }),
  ],
});

export interface NomadConfig {
  /** The zone as written (CoreDNS keeps its letter case and dot). */
  readonly zone: string;
  /** Agent addresses; '' for the default (`NOMAD_ADDR` or http://127.0.0.1:4646). */
  readonly addresses: readonly string[];
  readonly filter: string;
  readonly token: string;
  readonly ttl: number;
}

/** Parse the first occurrence (the dispenser before it). */
export function parseNomad(d: Dispenser): NomadConfig {
  const err = (m: string): ConfigError => new ConfigError(m, d.file(), d.line(), 'nomad');
  if (!d.next()) throw err("expected 'nomad' token");
  const args = d.remainingArgs();
  const zone = args.length === 0 ? 'service.nomad' : args[0]!;
  const addresses: string[] = [];
  let filter = '';
  let token = '';
  let ttl = 30;
  while (d.nextBlock()) {
    const selector = d.val().toLowerCase();
    switch (selector) {
      case 'address': {
        const a = d.remainingArgs();
        if (a.length === 0) throw err('at least one address is required');
        addresses.push(...a);
        break;
      }
      case 'filter': {
        const a = d.remainingArgs();
        if (a.length !== 1) throw err('exactly one filter is required');
        filter = a[0]!;
        break;
      }
      case 'token': {
        const a = d.remainingArgs();
        if (a.length !== 1) throw err('exactly one token is required');
        token = a[0]!;
        break;
      }
      case 'ttl': {
        const a = d.remainingArgs();
        if (a.length !== 1) throw err('exactly one ttl value is required');
        const v = a[0]!;
        if (!/^[+-]?\d+$/.test(v))
          throw err(`error parsing ttl: strconv.Atoi: parsing ${JSON.stringify(v)}: invalid syntax`);
        const t = Number(v);
        if (!Number.isSafeInteger(t) || Math.abs(t) > 2 ** 63)
          throw err(`error parsing ttl: strconv.Atoi: parsing ${JSON.stringify(v)}: value out of range`);
        if (t < 0 || t > 3600) throw err(`ttl must be in range [0, 3600]: ${t}`);
        ttl = t;
        break;
      }
      default:
        throw err(`unknown property '${selector}'`);
    }
  }
  return { zone, addresses: addresses.length === 0 ? [''] : addresses, filter, token, ttl };
}
