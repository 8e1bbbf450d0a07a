// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const loadbalance: PluginDef = {
  name: 'loadbalance',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin loadbalance is not implemented yet');
  },
};
