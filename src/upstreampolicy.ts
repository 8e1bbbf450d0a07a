/**
 * The order in which a forwarding plugin tries its upstreams for one query (`policy` of *forward*
 * and *grpc*, CoreDNS 1.15.0's plugin/forward/policy.go and plugin/grpc/policy.go, which agree;
 * docs/plugins.md, forward, step 3).
 */
export type UpstreamPolicy = 'random' | 'round_robin' | 'sequential';

/** Per plugin instance: round_robin's counter. */
export interface PolicyState {
  counter: number;
}

/**
 * `random`: a random permutation (for two upstreams a coin flip); `round_robin`: a per-instance
 * counter picks the first upstream, the rest follow in configured order (move-to-front);
 * `sequential`: configured order (the list itself, not a copy).
 */
export function orderUpstreams<T>(list: readonly T[], policy: UpstreamPolicy, state: PolicyState): readonly T[] {
  const n = list.length;
  if (n <= 1 || policy === 'sequential') return list;
  if (policy === 'round_robin') {
    state.counter = (state.counter + 1) % 0x7fffffff;
    const first = state.counter % n;
    const out = [list[first]!];
    for (let k = 0; k < n; k++) if (k !== first) out.push(list[k]!);
    return out;
  }
  if (n === 2) return Math.random() < 0.5 ? list : [list[1]!, list[0]!];
  const out = list.slice();
  for (let k = n - 1; k > 0; k--) {
    const j = Math.floor(Math.random() * (k + 1));
    const t = out[k]!;
    out[k] = out[j]!;
    out[j] = t;
  }
  return out;
}
