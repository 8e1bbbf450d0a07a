/** The `cache` directive (docs/plugins.md, cache): once per server block. */
import { CACHE_BYPASS_ZONES } from '../../src/cachebypass.js';
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
    // Filled at start-up, before queries are served, as CoreDNS's OnStartup asks the handlers.
    const bypass: string[] = [];
    ctx.onStartup(() => {
      bypass.push(...(ctx.lookup(CACHE_BYPASS_ZONES) ?? []));
    });
    return (next: Handler | null, block): Handler => new CacheHandler(cfg, zones, next, block.view ?? '', bypass);
  },
};
