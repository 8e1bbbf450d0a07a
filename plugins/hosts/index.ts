// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const hosts: PluginDef = {
  name: 'hosts',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin hosts is not implemented yet');
  },
};
