/** The `cache` directive (docs/plugins.md, cache): once per server block. */
import type { Handler, PluginDef } from '../../src/plugin.js';
import { CacheHandler } from './handler.js';
import { CACHE_OPTIONS, parseCache } from './setup.js';

export const cache: PluginDef = {
  name: 'cache',
  repeat: 'error',
  options: CACHE_OPTIONS,
  setup(d, ctx) {
    const cfg = parseCache(d);
    const zones = cfg.zones.length > 0 ? cfg.zones : [...ctx.block.zones];
    return (next: Handler | null, block): Handler => new CacheHandler(cfg, zones, next, block.view ?? '');
  },
};
