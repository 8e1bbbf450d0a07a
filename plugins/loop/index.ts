// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const loop: PluginDef = {
  name: 'loop',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin loop is not implemented yet');
  },
};
