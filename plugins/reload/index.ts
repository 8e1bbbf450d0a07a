/**
 * reload (docs/plugins.md, reload): poll the Corefile (and its imports) every INTERVAL ± JITTER/2 and
 * reload gracefully when its token hash changes. Setup-only; process-wide.
 */
import type { PluginDef } from '../../src/plugin.js';
import { loopForSetup } from './loop.js';
import { parseReload, RELOAD_OPTIONS } from './setup.js';

export const reload: PluginDef = {
  name: 'reload',
  repeat: 'first',
  options: RELOAD_OPTIONS,
  setup(d, ctx) {
    const loop = loopForSetup(ctx, parseReload(d));
    ctx.onServing(() => loop.start({ services: ctx, log: ctx.log, corefilePath: ctx.process.corefilePath }));
    ctx.onShutdown(() => loop.stop());
    return null;
  },
};
