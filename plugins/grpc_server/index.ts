/**
 * The `grpc_server` directive (README.md): the stream and connection limits of the block's
 * grpc:// listener, given to the core (src/server/listenopts.ts, GRPC_SERVER_LIMITS), which applies
 * them on every (re)load. Parsed by hand for CoreDNS 1.15.0's exact error texts (Go's strconv.Atoi
 * wording); the options are declared for `-plugins` and the README check.
 */
import { directive, int, option } from '../../src/corefile/options.js';
import type { PluginDef } from '../../src/plugin.js';
import { GRPC_SERVER_LIMITS, type GrpcServerLimits } from '../../src/server/listenopts.js';

export const GRPC_SERVER_OPTIONS = directive('grpc_server', {
  options: [
    option('max_streams', { args: [int({ meta: 'NON_NEGATIVE_INTEGER' })] }),
    option('max_connections', { args: [int({ meta: 'NON_NEGATIVE_INTEGER' })] }),
  ],
});

/** Go's strconv.Atoi: an optionally signed decimal that fits in 64 bits, or its error text. */
function atoi(text: string): number | string {
  if (!/^[+-]?\d+$/.test(text)) return `strconv.Atoi: parsing ${JSON.stringify(text)}: invalid syntax`;
  const v = BigInt(text);
  if (v > 9223372036854775807n || v < -9223372036854775808n)
    return `strconv.Atoi: parsing ${JSON.stringify(text)}: value out of range`;
  return Number(v);
}

export const grpc_server: PluginDef = {
  name: 'grpc_server',
  // CoreDNS keeps one value per option for the block and refuses a second one, across occurrences.
  repeat: 'all',
  options: GRPC_SERVER_OPTIONS,
  setup(d, ctx) {
    const limits: { -readonly [K in keyof GrpcServerLimits]: GrpcServerLimits[K] } = {};
    while (d.next()) {
      if (d.remainingArgs().length > 0) throw d.argErr();
      while (d.nextBlock()) {
        const name = d.val();
        if (name !== 'max_streams' && name !== 'max_connections') throw d.err(`unknown property '${name}'`);
        const args = d.remainingArgs();
        if (args.length !== 1) throw d.argErr();
        const v = atoi(args[0]!);
        if (typeof v === 'string') throw d.err(`invalid ${name} value '${args[0]}': ${v}`);
        if (v < 0) throw d.err(`${name} must be a non-negative integer: ${v}`);
        const key = name === 'max_streams' ? 'maxStreams' : 'maxConnections';
        if (limits[key] !== undefined) throw d.err(`${name} already defined for this server block`);
        limits[key] = v;
      }
    }
    ctx.provide(GRPC_SERVER_LIMITS, limits);
    return null;
  },
};
