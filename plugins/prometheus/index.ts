// SCAFFOLD: replaced by the real plugin; the registry needs the export to compile.
import type { PluginDef } from '../../src/plugin.js';

export const prometheus: PluginDef = {
  name: 'prometheus',
  repeat: 'error',
  setup(d) {
    throw d.err('plugin prometheus is not implemented yet');
  },
};
