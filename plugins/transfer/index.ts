/**
 * transfer: zone transfers out — AXFR and IXFR (answered as AXFR unless the client's serial is
 * current) over TCP for the zones of plugins that offer them, and NOTIFY to the secondaries when
 * such a zone is loaded or changes (docs/plugins.md, transfer; CoreDNS 1.15.0 plugin/transfer).
 * The zone plugins find this plugin through the TRANSFER capability (src/transfer.ts).
 */
import type { PluginDef } from '../../src/plugin.js';
import { TRANSFER, type TransferSource } from '../../src/transfer.js';
import { longestMatch, TransferHandler } from './handler.js';
import { sendNotify } from './notify.js';
import { parseTransfer, TRANSFER_OPTIONS } from './setup.js';

export { TRANSFER_OPTIONS };

export const transfer: PluginDef = {
  name: 'transfer',
  repeat: 'all',
  options: TRANSFER_OPTIONS,
  setup(d, ctx) {
    const stanzas = parseTransfer(d, ctx.block.zones);
    const sources: TransferSource[] = [];
    ctx.provide(TRANSFER, {
      addSource: (s) => {
        sources.push(s);
      },
      notify: async (zone) => {
        const x = longestMatch(stanzas, zone);
        if (x === null) return null;
        const errs: string[] = [];
        for (const to of x.to) {
          if (to === '*') continue;
          const err = await sendNotify(zone, to, x.source);
          if (err !== null) errs.push(err);
        }
        ctx.log.debug(`Sent notifies for zone ${JSON.stringify(zone)} to [${x.to.join(' ')}]`);
        return errs.length > 0 ? new Error(errs.join('\n')) : null;
      },
    });
    return (next) => new TransferHandler(stanzas, sources, next, ctx.log);
  },
};
