// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const autopath: PluginDef = {
  name: 'autopath',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin autopath is not implemented yet');
  },
};
