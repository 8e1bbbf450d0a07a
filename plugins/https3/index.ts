/**
 * The `https3` directive (README.md): DNS-over-HTTPS/3 limits, parsed and checked as CoreDNS 1.15.0
 * does. The runtime has no QUIC (`node:quic` is missing from Node 24), so an `https3://` listener
 * refuses to start (src/server/server.ts, docs/corefile.md §7.5); in a block without one the
 * directive configures nothing, as in CoreDNS.
 */
import { directive, int, option } from '../../src/corefile/options.js';
import { parseLimitBlock } from '../../src/corefile/limits.js';
import type { PluginDef } from '../../src/plugin.js';
import { HTTPS3_OPTIONS } from '../../src/server/listenopts.js';

export const HTTPS3_DIRECTIVE = directive('https3', {
  options: [
    option('max_streams', { args: [int({ meta: 'NON_NEGATIVE_INTEGER' })] }),
    option('max_connections', { args: [int({ meta: 'NON_NEGATIVE_INTEGER' })] }),
  ],
});

export const https3: PluginDef = {
  name: 'https3',
  repeat: 'first',
  options: HTTPS3_DIRECTIVE,
  setup(d, ctx) {
    const v = parseLimitBlock(d, [
      { name: 'max_streams', min: 0 },
      { name: 'max_connections', min: 0 },
    ]);
    ctx.provide(HTTPS3_OPTIONS, { maxStreams: v.get('max_streams'), maxConnections: v.get('max_connections') });
    return null;
  },
};
