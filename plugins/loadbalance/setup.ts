/**
 * Parsing of `loadbalance [round_robin | weighted WEIGHTFILE] { reload DURATION; prefer CIDR... }`
 * (docs/plugins.md, loadbalance). Repeated in a block: the last policy wins, `prefer` accumulates.
 */
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { parseDuration } from '../../src/util/duration.js';
import { parseCidr, type Cidr } from './cidr.js';

export interface LoadbalanceConfig {
  policy: 'round_robin' | 'weighted';
  weightFile: string | null;
  reloadMs: number;
  prefer: Cidr[];
}

export function parseLoadbalance(d: Dispenser): LoadbalanceConfig {
  const cfg: LoadbalanceConfig = { policy: 'round_robin', weightFile: null, reloadMs: 30_000, prefer: [] };
  while (d.next()) {
    const args = d.remainingArgs();
    let weighted = false;
    if (args.length === 0 || args[0] === 'round_robin') {
      if (args.length > 1) throw d.err(`unknown property for ${args[0]}`);
      cfg.policy = 'round_robin';
      cfg.weightFile = null;
    } else if (args[0] === 'weighted') {
      if (args.length < 2) throw d.err('missing weight file argument');
      if (args.length > 2) throw d.err('unexpected argument(s)');
      cfg.policy = 'weighted';
      cfg.weightFile = args[1]!;
      weighted = true;
    } else {
      throw d.err(`unknown policy: ${args[0]}`);
    }
    while (d.nextBlock()) {
      const opt = d.val();
      if (opt === 'reload') {
        if (!weighted) throw d.err('reload is only valid with the weighted policy');
        const a = d.remainingArgs();
        if (a.length !== 1) throw d.argErr();
        const ms = parseDuration(a[0]!);
        if (ms === undefined || ms < 0) throw d.err(`invalid reload duration '${a[0]}'`);
        cfg.reloadMs = ms;
      } else if (opt === 'prefer') {
        const a = d.remainingArgs();
        if (a.length === 0) throw d.argErr();
        for (const s of a) {
          const c = parseCidr(s);
          if (!c) throw d.err(`invalid CIDR: ${s}`);
          cfg.prefer.push(c);
        }
      } else {
        throw d.err(`unknown property '${opt}'`);
      }
    }
  }
  return cfg;
}
