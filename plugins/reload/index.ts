/**
 * reload (docs/plugins.md, reload): poll the Corefile (and its imports) every INTERVAL ± JITTER/2 and
 * reload gracefully when its token hash changes. Setup-only; process-wide.
 */
import { backgroundLog } from '../../src/log.js';
import type { PluginDef } from '../../src/plugin.js';
import { loopForSetup } from './loop.js';
import { parseReload, RELOAD_OPTIONS } from './setup.js';

export const reload: PluginDef = {
  name: 'reload',
  repeat: 'first',
  options: RELOAD_OPTIONS,
  setup(d, ctx) {
    const loop = loopForSetup(ctx, parseReload(d));
    // A query thread's loop checks the Corefile too but never reloads (the main thread's reloads
    // every thread, docs/multicore.md §5); its warnings would repeat the main thread's, so it is
    // silent (src/log.ts, backgroundLog).
    const log = backgroundLog(ctx.log, ctx.process.queryThread);
    ctx.onServing(() => loop.start({ services: ctx, log, corefilePath: ctx.process.corefilePath }));
    ctx.onShutdown(() => loop.stop());
    return null;
  },
};
