// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const errors: PluginDef = {
  name: 'errors',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin errors is not implemented yet');
  },
};
