/**
 * The `k8s_external` directive (README.md): names in an external zone for the external addresses
 * of Services, read from the kubernetes plugin of the same server block through the
 * `kubernetes.external` capability (src/kubernetes/external.ts) — no second watch.
 */
import { KUBERNETES_EXTERNAL } from '../../src/kubernetes/external.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import { ExternalHandler } from './handler.js';
import { K8S_EXTERNAL_OPTIONS, parseExternal } from './setup.js';

export const k8s_external: PluginDef = {
  name: 'k8s_external',
  repeat: 'all',
  options: K8S_EXTERNAL_OPTIONS,
  setup(d, ctx) {
    const cfg = parseExternal(d, ctx.block.zones);
    // As CoreDNS: the kubernetes plugin is required, and its absence is a startup error.
    ctx.onStartup(() => {
      if (!ctx.lookup(KUBERNETES_EXTERNAL)) throw new Error('plugin/k8s_external: kubernetes plugin not loaded');
    });
    return (next: Handler | null): Handler => {
      const k8s = ctx.lookup(KUBERNETES_EXTERNAL);
      if (!k8s)
        return {
          name: 'k8s_external',
          serve: (q) => q.fail(new Error('plugin/k8s_external: kubernetes plugin not loaded'), 2),
        };
      return new ExternalHandler(cfg, k8s, next);
    };
  },
};
