/**
 * The `autopath` plugin (docs/plugins.md, autopath): server-side search-path completion. With
 * `@kubernetes` the search path of each client pod comes from the block's kubernetes plugin
 * (docs/records.md §9.2; needs `pods verified`); with a resolv.conf file it is that file's
 * search list for every client.
 */
import type { HandlerFactory, PluginDef, SetupContext } from '../../src/plugin.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { searchPathProvider } from '../kubernetes/index.js';
import { AutopathHandler, type SearchFunc } from './handler.js';
import { AUTOPATH_OPTIONS, parseAutopath } from './setup.js';

export { AutopathHandler, cnamer } from './handler.js';
export { parseAutopath } from './setup.js';

/** Plugins that can supply a per-client search path (CoreDNS's AutoPather interface). */
const SEARCH_PATH_PLUGINS = new Set(['kubernetes']);

function setup(d: Dispenser, ctx: SetupContext): HandlerFactory {
  const cfg = parseAutopath(d, ctx.block.zones);
  const plugin = cfg.plugin;
  if (plugin !== null && !SEARCH_PATH_PLUGINS.has(plugin)) {
    // A plugin of the block without search-path support is an error; an absent one is ignored.
    ctx.onStartup(() => {
      if (ctx.block.handlerPlugins.includes(plugin)) {
        throw new Error(`plugin/autopath: ${plugin} does not implement the AutoPather interface`);
      }
    });
  }
  return (next) => {
    let searchFunc: SearchFunc | null = null;
    if (plugin === 'kubernetes') {
      // The chain is built from its end, so the block's kubernetes handler already exists here.
      const provider = searchPathProvider(ctx.block);
      if (provider) searchFunc = (q) => provider.autoPath(q);
    }
    return new AutopathHandler({ zones: cfg.zones, search: plugin === null ? cfg.search : [], searchFunc }, next);
  };
}

export const autopath: PluginDef = {
  name: 'autopath',
  repeat: 'error',
  options: AUTOPATH_OPTIONS,
  setup,
};
