// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const bind: PluginDef = {
  name: 'bind',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin bind is not implemented yet');
  },
};
