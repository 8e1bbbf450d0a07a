/**
 * The `shed` directive (README.md): load shedding on the block's UDP listener sockets, done by the
 * core (src/server/shed.ts) which the plugin switches on through `core.shed`. Takes no arguments;
 * only plain DNS server blocks, as CoreDNS 1.15.0 checks at setup.
 */
import { directive } from '../../src/corefile/options.js';
import type { PluginDef } from '../../src/plugin.js';
import { LISTENER_SHED } from '../../src/server/listenopts.js';

export const SHED_OPTIONS = directive('shed');

export const shed: PluginDef = {
  name: 'shed',
  repeat: 'error',
  options: SHED_OPTIONS,
  setup(d, ctx) {
    while (d.next()) {
      if (d.remainingArgs().length !== 0) throw d.argErr();
      if (d.nextBlock()) throw d.err('shed takes no options');
    }
    for (const k of ctx.block.keys ?? []) {
      if (k.scheme !== 'dns') {
        throw d.err(`only plain DNS server blocks are supported; "${k.text}" uses transport "${k.scheme}"`);
      }
    }
    ctx.provide(LISTENER_SHED, true);
    return null;
  },
};
