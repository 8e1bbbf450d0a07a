// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const reload: PluginDef = {
  name: 'reload',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin reload is not implemented yet');
  },
};
