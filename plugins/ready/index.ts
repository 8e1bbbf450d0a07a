/**
 * ready (docs/plugins.md, ready): the `/ready` endpoint, one listener per address shared by the blocks
 * and kept across reloads; reports the readiness probes of the serving instance.
 */
import type { PluginDef } from '../../src/plugin.js';
import { ReadyServer } from './server.js';
import { parseReady, READY_OPTIONS } from './setup.js';

export const ready: PluginDef = {
  name: 'ready',
  repeat: 'error',
  options: READY_OPTIONS,
  setup(d, ctx) {
    const cfg = parseReady(d);
    const server = ctx.shared(
      `ready:${cfg.address}`,
      () => new ReadyServer(cfg.address, ctx.log, ctx.process.queryThread),
      (s) => s.stop(),
    );
    ctx.onStartup(async () => {
      server.attach(ctx.lifecycle, ctx.readinessReport);
      if (!server.listener.listening) server.monitor = cfg.monitor;
      await server.start();
    });
    // The monitor mode of the new configuration applies once it serves.
    ctx.onServing(() => {
      server.monitor = cfg.monitor;
      server.serving = true;
    });
    return null;
  },
};
