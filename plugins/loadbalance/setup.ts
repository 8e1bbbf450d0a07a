/**
 * Parsing of `loadbalance [round_robin | weighted WEIGHTFILE] { reload DURATION; prefer CIDR... }`
 * (docs/plugins.md, loadbalance). Repeated in a block: the last policy wins, `prefer` accumulates.
 */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { directive, duration, option, parseOccurrences, str } from '../../src/corefile/options.js';
import { parseCidr, type Cidr } from './cidr.js';

export interface LoadbalanceConfig {
  policy: 'round_robin' | 'weighted';
  weightFile: string | null;
  reloadMs: number;
  prefer: Cidr[];
}

/** Go's net.ParseCIDR: an address, a slash and a prefix length. */
function cidrOf(v: string): Cidr | undefined {
  return v.includes('/') ? parseCidr(v) : undefined;
}

const invalidReload = (v: string): string => `invalid reload duration '${v}'`;

export const LOADBALANCE_OPTIONS = directive('loadbalance', {
  // `round_robin`, or `weighted WEIGHTFILE`: the count depends on the policy, checked below.
  args: { rest: str('POLICY') },
  options: [
    option('reload', {
      args: [duration({ min: 0, invalid: invalidReload, range: (_, v) => invalidReload(v) })],
      arity: (n) => (n < 1 ? 'reload duration value is missing' : 'unexpected argument'),
    }),
    option('prefer', {
      rest: str('CIDR', (v) => (cidrOf(v) ? null : `invalid CIDR "${v}": invalid CIDR address: ${v}`)),
      repeat: 'all',
    }),
  ],
});

export function parseLoadbalance(d: Dispenser): LoadbalanceConfig {
  const cfg: LoadbalanceConfig = { policy: 'round_robin', weightFile: null, reloadMs: 30_000, prefer: [] };
  parseOccurrences(d, LOADBALANCE_OPTIONS, (occ) => {
    const args = occ.directive.raw;
    const at = occ.directive;
    if (args.length === 0 || args[0] === 'round_robin') {
      if (args.length > 1) throw occ.error(at, `unknown property for ${args[0]}`);
      cfg.policy = 'round_robin';
      cfg.weightFile = null;
      // As CoreDNS: `reload` belongs to the weighted policy's block.
      const reload = occ.last('reload');
      if (reload) throw occ.error(reload, "unknown property 'reload'");
    } else if (args[0] === 'weighted') {
      if (args.length < 2) throw occ.error(at, 'missing weight file argument');
      if (args.length > 2) throw occ.error(at, 'unexpected argument(s)');
      cfg.policy = 'weighted';
      cfg.weightFile = args[1]!;
      cfg.reloadMs = occ.num('reload', 0, cfg.reloadMs);
    } else {
      throw occ.error(at, `unknown policy: ${args[0]}`);
    }
    for (const o of occ.all('prefer')) for (const c of o.raw) cfg.prefer.push(cidrOf(c)!);
  });
  return cfg;
}
