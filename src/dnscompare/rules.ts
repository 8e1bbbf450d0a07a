/**
 * The intentional (or inevitable) differences between clusterdns and CoreDNS 1.15.0, as data:
 * each rule names the differences it tolerates and why. The differential suite and the
 * `shadow` plugin use this list; anything a rule does not cover is a mismatch. Keep every entry
 * justified: a rule is a claim that the difference does not matter to a client.
 */
import type { ToleranceRule } from './compare.js';

export const TOLERANCE_RULES: readonly ToleranceRule[] = [
  {
    id: 'loadbalance-shuffle',
    reason: 'loadbalance shuffles A/AAAA/MX records on every reply in both servers; the order is random by design.',
    match: { kinds: ['order'], plugins: ['loadbalance'] },
  },
  {
    id: 'kubernetes-index-order',
    reason: 'CoreDNS returns several endpoints/services in the order of its informer indexes (Go map iteration), which is not deterministic; clients must not rely on it.',
    match: { kinds: ['order'], plugins: ['kubernetes'] },
  },
  {
    id: 'cache-ttl-aging',
    reason: 'Both caches count a cached answer\'s TTL down independently; two replies sent a moment apart may fall on different sides of a second boundary.',
    match: { kinds: ['ttl'], plugins: ['cache'], ttlWindow: 1 },
  },
];
