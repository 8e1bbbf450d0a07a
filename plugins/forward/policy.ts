/** Upstream ordering per query (docs/plugins.md, forward, step 3). */
import type { Policy } from './setup.js';

export interface PolicyState {
  counter: number;
}

/**
 * `random`: a random permutation (for two upstreams a coin flip); `round_robin`: a per-instance
 * counter picks the first upstream, the rest follow in configured order (move-to-front);
 * `sequential`: configured order.
 */
export function orderProxies<T>(list: readonly T[], policy: Policy, state: PolicyState): T[] {
  const n = list.length;
  if (n <= 1 || policy === 'sequential') return list.slice();
  if (policy === 'round_robin') {
    state.counter = (state.counter + 1) % 0x7fffffff;
    const first = state.counter % n;
    const out = [list[first]!];
    for (let k = 0; k < n; k++) if (k !== first) out.push(list[k]!);
    return out;
  }
  if (n === 2) return Math.random() < 0.5 ? [list[0]!, list[1]!] : [list[1]!, list[0]!];
  const out = list.slice();
  for (let k = n - 1; k > 0; k--) {
    const j = Math.floor(Math.random() * (k + 1));
    const t = out[k]!;
    out[k] = out[j]!;
    out[j] = t;
  }
  return out;
}
