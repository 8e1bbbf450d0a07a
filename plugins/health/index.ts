/**
 * health (docs/plugins.md, health): an HTTP liveness endpoint, process-wide per address, with a
 * self-probe feeding the health metrics, and the lame-duck sleep at final shutdown.
 * Not part of the query chain.
 */
import type { PluginDef } from '../../src/plugin.js';
import { formatGoDuration } from '../../src/util/duration.js';
import { HealthServer } from './server.js';
import { HEALTH_OPTIONS, parseHealth } from './setup.js';

/** Sleep `ms` (the lame-duck period); DNS keeps being served meanwhile. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export const health: PluginDef = {
  name: 'health',
  repeat: 'all',
  options: HEALTH_OPTIONS,
  setup(d, ctx) {
    const cfg = parseHealth(d);
    const server = ctx.shared(
      `health:${cfg.address}`,
      () => new HealthServer(cfg.address, ctx.log, ctx.process.queryThread),
      (s) => s.stop(),
    );
    ctx.onStartup(() => server.start());
    // The final shutdown (once per process) goes through lame duck once, however many blocks configure it.
    const lameduck = ctx.processState.keep('health:lameduck', () => ({ entered: false }));
    if (cfg.lameduckMs > 0) {
      ctx.onFinalShutdown(async () => {
        if (lameduck.entered) return;
        lameduck.entered = true;
        ctx.log.info(`Going into lameduck mode for ${formatGoDuration(cfg.lameduckMs)}`);
        await sleep(cfg.lameduckMs);
      });
    }
    return null;
  },
};
