/** The `hosts` directive (docs/plugins.md, hosts): once per server block. */
import { isAbsolute, resolve } from 'node:path';
import { backgroundLog } from '../../src/log.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import { HostsData, HostsHandler } from './handler.js';
import { HOSTS_OPTIONS, parseHosts } from './setup.js';

export const hosts: PluginDef = {
  name: 'hosts',
  repeat: 'error',
  options: HOSTS_OPTIONS,
  setup(d, ctx) {
    const cfg = parseHosts(d);
    if (!isAbsolute(cfg.path)) cfg.path = resolve(ctx.resolvePath(cfg.path));
    const zones = cfg.zones.length > 0 ? cfg.zones : [...ctx.block.zones];
    // The file's re-reads log from the main thread only: each query thread re-reads its own copy,
    // and CoreDNS logs a missing or unreadable file once (src/log.ts, backgroundLog).
    const data = new HostsData(cfg, zones, backgroundLog(ctx.log, ctx.process.queryThread));
    let timer: NodeJS.Timeout | null = null;
    ctx.onStartup(() => {
      data.refresh();
      data.updateMetrics();
      if (cfg.reloadMs > 0) {
        timer = setInterval(() => data.refresh(), cfg.reloadMs);
        timer.unref();
      }
    });
    ctx.onShutdown(() => {
      if (timer) clearInterval(timer);
      timer = null;
    });
    return (next: Handler | null): Handler => new HostsHandler(data, next);
  },
};
