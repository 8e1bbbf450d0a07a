/**
 * Zones whose answers change with every accepted UPDATE (dynupdate): *cache* in the same block
 * passes their queries on instead of caching them, as CoreDNS 1.15.0's cache asks every handler of
 * its block for `CacheBypassZones()` at start-up. The plugin that owns such a zone offers it here.
 */
import { capability } from './capabilities.js';

export const CACHE_BYPASS_ZONES = capability<readonly string[]>('cache.bypassZones');
