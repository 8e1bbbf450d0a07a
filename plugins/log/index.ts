// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const log: PluginDef = {
  name: 'log',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin log is not implemented yet');
  },
};
