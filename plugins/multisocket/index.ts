/**
 * The `multisocket` directive (README.md): how many SO_REUSEPORT sockets each query thread opens
 * per listen address, given to the core (src/server/listenopts.ts). Without an argument: one per
 * thread — the threads already number the CPUs, as CoreDNS's default of GOMAXPROCS sockets does
 * (docs/multicore.md §9). Parsed by hand for CoreDNS 1.15.0's error texts.
 */
import { directive, int } from '../../src/corefile/options.js';
import { BareSetupError } from '../../src/corefile/types.js';
import type { PluginDef } from '../../src/plugin.js';
import { LISTENER_SOCKETS } from '../../src/server/listenopts.js';

const MAX_SOCKETS = 1024;

export const MULTISOCKET_OPTIONS = directive('multisocket', {
  args: { args: [int({ meta: 'NUM_SOCKETS', min: 1, max: MAX_SOCKETS })], min: 0, max: 1 },
});

export const multisocket: PluginDef = {
  name: 'multisocket',
  repeat: 'all',
  options: MULTISOCKET_OPTIONS,
  setup(d, ctx) {
    d.next();
    const args = d.remainingArgs();
    if (args.length > 1 || d.next()) throw d.argErr();
    const bare = (msg: string): BareSetupError => new BareSetupError(msg, d.file(), d.line(), 'multisocket');
    let n = 1;
    if (args.length === 1) {
      const text = args[0]!;
      if (!/^[+-]?\d+$/.test(text))
        throw bare(`invalid num sockets: strconv.Atoi: parsing ${JSON.stringify(text)}: invalid syntax`);
      const big = BigInt(text);
      if (big > 9223372036854775807n || big < -9223372036854775808n) {
        throw bare(`invalid num sockets: strconv.Atoi: parsing ${JSON.stringify(text)}: value out of range`);
      }
      if (big < 1n) throw bare(`num sockets can not be zero or negative: ${big}`);
      if (big > BigInt(MAX_SOCKETS)) throw bare(`num sockets exceeds maximum (${MAX_SOCKETS}): ${big}`);
      n = Number(big);
    }
    ctx.provide(LISTENER_SOCKETS, n);
    return null;
  },
};
