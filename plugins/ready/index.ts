// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const ready: PluginDef = {
  name: 'ready',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin ready is not implemented yet');
  },
};
