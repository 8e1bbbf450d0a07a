// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const health: PluginDef = {
  name: 'health',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin health is not implemented yet');
  },
};
