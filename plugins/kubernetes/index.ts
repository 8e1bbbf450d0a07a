// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const kubernetes: PluginDef = {
  name: 'kubernetes',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin kubernetes is not implemented yet');
  },
};
