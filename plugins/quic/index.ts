/**
 * The `quic` directive (README.md): DNS-over-QUIC limits, parsed and checked as CoreDNS 1.15.0
 * does. The runtime has no QUIC (`node:quic` is missing from Node 24), so a `quic://` listener
 * refuses to start (src/server/server.ts, docs/corefile.md §7.5); in a block without one the
 * directive configures nothing, as in CoreDNS.
 */
import { directive, int, option } from '../../src/corefile/options.js';
import { parseLimitBlock } from '../../src/corefile/limits.js';
import type { PluginDef } from '../../src/plugin.js';
import { QUIC_OPTIONS } from '../../src/server/listenopts.js';

export const QUIC_DIRECTIVE = directive('quic', {
  options: [
    option('max_streams', { args: [int({ meta: 'POSITIVE_INTEGER' })] }),
    option('max_connections', { args: [int({ meta: 'NON_NEGATIVE_INTEGER' })] }),
    option('worker_pool_size', { args: [int({ meta: 'POSITIVE_INTEGER' })] }),
  ],
});

export const quic: PluginDef = {
  name: 'quic',
  repeat: 'first',
  options: QUIC_DIRECTIVE,
  setup(d, ctx) {
    const v = parseLimitBlock(d, [
      { name: 'max_streams', min: 1 },
      { name: 'max_connections', min: 0 },
      { name: 'worker_pool_size', min: 1 },
    ]);
    ctx.provide(QUIC_OPTIONS, {
      maxStreams: v.get('max_streams'),
      maxConnections: v.get('max_connections'),
      workerPoolSize: v.get('worker_pool_size'),
    });
    return null;
  },
};
