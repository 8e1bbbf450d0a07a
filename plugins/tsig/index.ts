/**
 * The `tsig` directive (docs/plugins.md, tsig): TSIG keys (RFC 8945), verification of signed
 * requests, signing of the replies to them (each message of a zone transfer included), and
 * `require`/`require_opcode` for unsigned ones. The keys go to the core (LISTENER_TSIG_KEYS), which
 * verifies with the keys of every block on the listener as CoreDNS's server does; the handler acts
 * on the result for the plugin's zones.
 */
import type { PluginDef } from '../../src/plugin.js';
import { LISTENER_TSIG_KEYS } from '../../src/server/listenopts.js';
import { TsigHandler } from './handler.js';
import { parseTsig, TSIG_OPTIONS } from './setup.js';

export const tsig: PluginDef = {
  name: 'tsig',
  repeat: 'all',
  options: TSIG_OPTIONS,
  setup(d, ctx) {
    const cfg = parseTsig(d, ctx.block.zones);
    ctx.provide(LISTENER_TSIG_KEYS, cfg.secrets);
    return (next) => new TsigHandler(cfg, next, ctx.log);
  },
};
