/**
 * The `debug` directive (README.md): `[DEBUG]` log lines on (process-wide while any block has it),
 * and no panic recovery on the block's listeners — both through the core (src/server/listenopts.ts).
 */
import { directive } from '../../src/corefile/options.js';
import type { PluginDef } from '../../src/plugin.js';
import { SERVER_DEBUG } from '../../src/server/listenopts.js';

export const DEBUG_OPTIONS = directive('debug');

export const debug: PluginDef = {
  name: 'debug',
  repeat: 'all',
  options: DEBUG_OPTIONS,
  setup(d, ctx) {
    while (d.next()) {
      if (d.nextArg()) throw d.val() === '{' ? d.err("Unexpected token '{', expecting argument") : d.argErr();
    }
    ctx.provide(SERVER_DEBUG, true);
    return null;
  },
};
