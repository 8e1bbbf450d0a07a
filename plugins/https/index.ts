/**
 * The `https` directive (README.md): the DoH listener's connection and HTTP/2 stream limits,
 * given to the core (src/server/listenopts.ts, HTTPS_OPTIONS) which applies them to the block's
 * `https://` listeners (src/server/doh.ts). Setup only: no handler.
 */
import { directive, int, option } from '../../src/corefile/options.js';
import { parseLimitBlock } from '../../src/corefile/limits.js';
import type { PluginDef } from '../../src/plugin.js';
import { HTTPS_OPTIONS } from '../../src/server/listenopts.js';

const UINT32_MAX = 4294967295;

export const HTTPS_DIRECTIVE = directive('https', {
  options: [
    option('max_connections', { args: [int({ meta: 'NON_NEGATIVE_INTEGER' })] }),
    option('max_streams', { args: [int({ meta: 'NON_NEGATIVE_INTEGER' })] }),
  ],
});

export const https: PluginDef = {
  name: 'https',
  repeat: 'first',
  options: HTTPS_DIRECTIVE,
  setup(d, ctx) {
    const v = parseLimitBlock(d, [
      { name: 'max_connections', min: 0 },
      { name: 'max_streams', min: 0, max: UINT32_MAX },
    ]);
    ctx.provide(HTTPS_OPTIONS, { maxConnections: v.get('max_connections'), maxStreams: v.get('max_streams') });
    return null;
  },
};
