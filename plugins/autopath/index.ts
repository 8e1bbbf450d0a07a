/**
 * The `autopath` plugin (docs/plugins.md, autopath): server-side search-path completion. With
 * `@kubernetes` the search path of each client pod comes from the block's kubernetes plugin
 * (docs/records.md §9.2; needs `pods verified`); with a resolv.conf file it is that file's
 * search list for every client.
 */
import type { HandlerFactory, PluginDef, SetupContext } from '../../src/plugin.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { SEARCH_PATH } from '../../src/searchpath.js';
import { AutopathHandler, type SearchFunc } from './handler.js';
import { AUTOPATH_OPTIONS, parseAutopath } from './setup.js';

export { AutopathHandler, cnamer } from './handler.js';
export { parseAutopath } from './setup.js';

function setup(d: Dispenser, ctx: SetupContext): HandlerFactory {
  const cfg = parseAutopath(d, ctx.block.zones);
  const plugin = cfg.plugin;
  /** The search path capability of the plugin `@PLUGIN` names, when that plugin offers it. */
  const provider = () => {
    const p = ctx.lookup(SEARCH_PATH);
    return p !== undefined && p.plugin === plugin ? p : undefined;
  };
  if (plugin !== null) {
    // As CoreDNS: a plugin of the block that offers no search path is a start-up error; a plugin
    // the block does not have leaves autopath without a search path (it passes every query on).
    ctx.onStartup((block) => {
      if (provider() === undefined && block.handlerPlugins.includes(plugin)) {
        throw new Error(`plugin/autopath: ${plugin} does not implement the AutoPather interface`);
      }
    });
  }
  return (next) => {
    let searchFunc: SearchFunc | null = null;
    if (plugin !== null) {
      const p = provider();
      if (p) searchFunc = (q) => p.autoPath(q);
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
