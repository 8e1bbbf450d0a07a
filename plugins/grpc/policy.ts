/** Upstream order per query, as CoreDNS 1.15.0's plugin/grpc/policy.go. */
import type { Policy } from './setup.js';

export interface PolicyState {
  robin: number;
}

/**
 * `random`: a random permutation (two upstreams: a coin flip); `round_robin`: a counter picks the
 * first, the others follow in configured order; `sequential`: configured order.
 */
export function order<T>(list: readonly T[], policy: Policy, state: PolicyState): readonly T[] {
  const n = list.length;
  if (n <= 1 || policy === 'sequential') return list;
  if (policy === 'round_robin') {
    state.robin = (state.robin + 1) >>> 0;
    const first = state.robin % n;
    return [list[first]!, ...list.slice(0, first), ...list.slice(first + 1)];
  }
  if (n === 2) return Math.random() < 0.5 ? [list[1]!, list[0]!] : list;
  const out = list.slice();
  for (let k = n - 1; k > 0; k--) {
    const j = Math.floor(Math.random() * (k + 1));
    const t = out[k]!;
    out[k] = out[j]!;
    out[j] = t;
  }
  return out;
}
