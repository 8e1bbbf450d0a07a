/** The `loadbalance` directive (docs/plugins.md, loadbalance). */
import { isAbsolute, resolve } from 'node:path';
import { backgroundLog } from '../../src/log.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import { LoadbalanceHandler } from './handler.js';
import { LOADBALANCE_OPTIONS, parseLoadbalance } from './setup.js';
import { WeightFile } from './weights.js';

export const loadbalance: PluginDef = {
  name: 'loadbalance',
  repeat: 'all',
  options: LOADBALANCE_OPTIONS,
  setup(d, ctx) {
    const cfg = parseLoadbalance(d);
    let weights: WeightFile | null = null;
    if (cfg.policy === 'weighted' && cfg.weightFile) {
      const path = isAbsolute(cfg.weightFile) ? cfg.weightFile : resolve(ctx.resolvePath(cfg.weightFile));
      const wf = new WeightFile(path);
      weights = wf;
      try {
        wf.load();
      } catch (e) {
        throw d.err(`failed to load weight file ${path}: ${(e as Error).message}`);
      }
      let timer: NodeJS.Timeout | null = null;
      // Every query thread re-reads its own copy; the main thread's re-read logs, once per change
      // as CoreDNS's (src/log.ts, backgroundLog).
      const log = backgroundLog(ctx.log, ctx.process.queryThread);
      ctx.onStartup(() => {
        if (cfg.reloadMs <= 0) return;
        timer = setInterval(() => {
          try {
            if (wf.load()) log.info(`Successfully reloaded weight file ${path}`);
          } catch (e) {
            log.error(`Failed to reload weight file ${path}: ${(e as Error).message}`);
          }
        }, cfg.reloadMs);
        timer.unref();
      });
      ctx.onShutdown(() => {
        if (timer) clearInterval(timer);
      });
    }
    return (next: Handler | null): Handler => new LoadbalanceHandler(cfg, next, weights);
  },
};
