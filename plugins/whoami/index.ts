// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const whoami: PluginDef = {
  name: 'whoami',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin whoami is not implemented yet');
  },
};
