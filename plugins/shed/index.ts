/**
 * The `shed` directive (README.md): load shedding on the block's UDP listener sockets, done by the
 * core (src/server/shed.ts) which the plugin switches on through `core.shed`. Takes no arguments;
 * only plain DNS server blocks, as CoreDNS 1.15.0 checks at setup.
 */
import { directive } from '../../src/corefile/options.js';
import { BareSetupError } from '../../src/corefile/types.js';
import type { PluginDef } from '../../src/plugin.js';
import { LISTENER_SHED } from '../../src/server/listenopts.js';

export const SHED_OPTIONS = directive('shed');

export const shed: PluginDef = {
  name: 'shed',
  repeat: 'all',
  options: SHED_OPTIONS,
  setup(d, ctx) {
    let n = 0;
    while (d.next()) {
      // plugin.ErrOnce, which CoreDNS prints without a position.
      if (n++ > 0)
        throw new BareSetupError('this plugin can only be used once per Server Block', d.file(), d.line(), 'shed');
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
