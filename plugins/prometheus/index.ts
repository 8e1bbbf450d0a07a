/**
 * prometheus (docs/plugins.md, prometheus): records the `coredns_dns_*` family for the queries of its
 * block and serves `/metrics` (one listener per address, kept across reloads). Also fills
 * `coredns_plugin_enabled` for its block and sets `coredns_build_info`.
 */
import { buildInfo } from '../../src/metrics/dns.js';
import type { PluginDef } from '../../src/plugin.js';
import { REVISION, VERSION } from '../../src/version.js';
import { EnabledSeries } from './enabled.js';
import { MetricsHandler } from './handler.js';
import { MetricsServer, registerDefaultMetrics } from './server.js';
import { parsePrometheus, PROMETHEUS_OPTIONS } from './setup.js';
import { loadWebConfig } from './webconfig.js';

/** `coredns_build_info{version,revision,goversion}` = 1 (goversion carries the Node.js version; idempotent). */
export function setBuildInfo(): void {
  buildInfo.labels(VERSION, REVISION, process.version).set(1);
}

export const prometheus: PluginDef = {
  name: 'prometheus',
  repeat: 'error',
  options: PROMETHEUS_OPTIONS,
  setup(d, ctx) {
    const cfg = parsePrometheus(d);
    const server = ctx.shared(
      `prometheus:${cfg.address}`,
      () => new MetricsServer(cfg.address, ctx.process.queryThread),
      (s) => s.stop(),
    );
    const enabled = ctx.shared('prometheus:enabled', () => new EnabledSeries());
    // TLS settings of a reload apply when the new instance serves (a failed reload keeps the old ones).
    let tls: Awaited<ReturnType<typeof loadWebConfig>> | null = null;
    ctx.onStartup(async () => {
      setBuildInfo();
      // The rest is the listener's: only the main thread listens, and it reports the process_* and
      // nodejs_* collectors for the pod (docs/multicore.md §3). A query thread would load the
      // default collectors, the YAML parser and TLS for nothing (§2 there).
      if (ctx.process.queryThread) return;
      registerDefaultMetrics();
      if (cfg.tlsConfigPath !== '') {
        try {
          tls = await loadWebConfig(cfg.tlsConfigPath);
        } catch (e) {
          throw new Error(`plugin/prometheus: ${(e as Error).message}`);
        }
      }
      if (!server.listener.listening) server.listener.setTls(tls);
      await server.start();
    });
    let withdraw: (() => void) | null = null;
    ctx.onServing((block) => {
      server.listener.setTls(tls);
      withdraw ??= enabled.publish(block);
    });
    ctx.onShutdown(() => {
      withdraw?.();
    });
    const zones = ctx.block.zones.length ? ctx.block.zones : ['.'];
    return (next, block) => new MetricsHandler(zones, next, block.view ?? '');
  },
};
