// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const forward: PluginDef = {
  name: 'forward',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin forward is not implemented yet');
  },
};
