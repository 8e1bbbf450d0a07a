// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const cache: PluginDef = {
  name: 'cache',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin cache is not implemented yet');
  },
};
