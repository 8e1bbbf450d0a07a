/**
 * The `kubernetes` plugin: cluster DNS records from Services, EndpointSlices, Namespaces and
 * (with `pods verified`) Pods, per docs/records.md.
 */
import { readFileSync } from 'node:fs';
import * as os from 'node:os';
import { isIP } from 'node:net';
import { canonicalIP, matchZone } from '../../src/dns/name.js';
import { LOOKUP_REFUSED, type HandlerFactory, type PluginDef, type SetupContext } from '../../src/plugin.js';
import { SEARCH_PATH } from '../../src/searchpath.js';
import { TRANSFER } from '../../src/transfer.js';
import { kubernetesTransfer } from './xfr.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { KubernetesHandler, type HandlerConfig } from './handler.js';
import { collectGarbage } from '../../src/util/gc.js';
import { isLoopback } from '../../src/util/ip.js';
import { resolvConfSearch as searchDomains } from '../../src/util/resolvconf.js';
import { kubeIndex, type KubeIndex } from './kubeindex.js';
import { KUBERNETES_OPTIONS, parseKubernetes, watchSettings, type KubernetesConfig } from './setup.js';
import { KUBERNETES_EXTERNAL } from '../../src/kubernetes/external.js';
import { kubernetesExternal } from './external.js';
import { METADATA_COLLECTOR } from '../../src/metadata.js';
import { kubernetesMetadata } from './metadata.js';

export { KubernetesHandler } from './handler.js';
export type { KubernetesConfig } from './setup.js';

/** The server's own non-loopback IPs (§3.2 step 1). */
export function localIPs(bindAddresses: readonly string[]): string[] {
  const out: string[] = [];
  const add = (ip: string): void => {
    const c = canonicalIP(ip.split('%')[0]!);
    if (c && !isLoopback(c) && !out.includes(c)) out.push(c);
  };
  const bound = bindAddresses.filter((a) => isIP(a.split('%')[0]!) !== 0);
  if (bound.length) bound.forEach(add);
  else
    for (const list of Object.values(os.networkInterfaces()))
      for (const a of list ?? []) if (!a.internal) add(a.address);
  return out;
}

/**
 * The initial lists finish after start-up, while serving: the server's compacting collection ran
 * too early to return their garbage, so run one when they are in (once; a stop of tens of ms).
 * `scheduled` is shared by the blocks sharing the index, which schedule one collection.
 */
function compactWhenSynced(index: KubeIndex, scheduled: { done: boolean }): void {
  if (scheduled.done) return;
  scheduled.done = true;
  const timer = setInterval(() => {
    if (index.stopped) clearInterval(timer);
    else if (index.synced()) {
      clearInterval(timer);
      collectGarbage(true);
    }
  }, 100);
  timer.unref();
}

async function waitForSync(
  index: KubeIndex,
  timeoutMs: number,
  ctx: SetupContext,
  compaction: { done: boolean },
): Promise<void> {
  const start = Date.now();
  let lastLog = start;
  while (!index.synced()) {
    const now = Date.now();
    if (now - start >= timeoutMs) {
      ctx.log.warning('starting server with unsynced Kubernetes API');
      compactWhenSynced(index, compaction);
      return;
    }
    if (now - lastLog >= 500) {
      lastLog = now;
      ctx.log.info('waiting for Kubernetes API before starting server');
    }
    await new Promise((r) => setTimeout(r, Math.min(100, Math.max(1, timeoutMs - (now - start)))));
  }
}

/** The search domains of /etc/resolv.conf; none without one. */
function resolvConfSearch(): string[] {
  try {
    return searchDomains(readFileSync('/etc/resolv.conf', 'utf8'));
  } catch {
    return [];
  }
}

function handlerConfig(cfg: KubernetesConfig, ips: string[], search: string[]): HandlerConfig {
  return {
    zones: cfg.zones,
    primaryZone: cfg.primaryZone,
    ttl: cfg.ttl,
    podMode: cfg.podMode,
    endpointPodNames: cfg.endpointPodNames,
    namespaces: cfg.namespaces ? new Set(cfg.namespaces) : null,
    ignoreEmptyService: cfg.ignoreEmptyService,
    zonal: cfg.zonal,
    localIPs: ips,
    fallthrough: cfg.fallthrough,
    searchDomains: search,
    multiclusterZones: cfg.multiclusterZones,
  };
}

function setup(d: Dispenser, ctx: SetupContext): HandlerFactory {
  const cfg = parseKubernetes(d, ctx.block.zones, ctx.log);
  const settings = watchSettings(cfg);
  const indexKey = `kubernetes:${JSON.stringify(settings)}`;
  // With query threads the main thread watches and the threads keep copies (docs/multicore.md).
  const index = ctx.shared(
    indexKey,
    () => kubeIndex(settings, ctx.log, ctx.processState.replication, indexKey),
    (ix) => ix.stop(),
  );
  const compaction = ctx.shared(`${indexKey}:compaction`, () => ({ done: false }));
  // The search path autopath completes with (§9.2): read once, at setup, as CoreDNS's setup.go does.
  const search = resolvConfSearch();
  /** The handler of the block's chain (the core calls the factory once per load). */
  let handler: KubernetesHandler | null = null;
  // ExternalName targets outside the zone are resolved through the whole server (upstream.Lookup).
  const selfLookup = ctx.selfLookup;

  /** The block's bind addresses, known once the factory runs (before any query). */
  let bound: readonly string[] = [];
  let ownIPs: string[] | null = null;
  ctx.provide(
    KUBERNETES_EXTERNAL,
    kubernetesExternal(index.reader, {
      ttl: cfg.ttl,
      namespaces: cfg.namespaces ? new Set(cfg.namespaces) : null,
      endpointPodNames: cfg.endpointPodNames,
      localIPs: () => (ownIPs ??= localIPs(bound)),
      // k8s_external keeps a CNAME whose target lookup was refused (a cycle) without its answers.
      upstream: async (sub) => {
        const r = await selfLookup.lookup(sub);
        return r === LOOKUP_REFUSED ? null : r;
      },
    }),
  );
  ctx.registerReady('kubernetes', () => (index.synced() ? true : index.notReadyReason()));
  ctx.onStartup(() =>
    ctx.lookup(METADATA_COLLECTOR)?.addProvider(kubernetesMetadata(index.reader, cfg.zones, cfg.podMode, cfg.zonal)),
  );
  ctx.onStartup(async () => {
    try {
      index.start();
      await index.whenStarted();
    } catch (e) {
      throw new Error(`plugin/kubernetes: ${(e as Error).message}`);
    }
    await waitForSync(index, cfg.startupTimeoutMs, ctx, compaction);
  });
  // With `transfer` in the block, the zones can be transferred (xfr.ts). CoreDNS 1.15.0's kubernetes
  // sends no NOTIFY: secondaries see the serial change when they refresh (docs/plugins.md, transfer).
  ctx.onStartup(() =>
    ctx.lookup(TRANSFER)?.addSource({
      plugin: 'kubernetes',
      transfer: (zone, serial) =>
        // Any name inside a zone, which then stands as the zone (CoreDNS's Zones.Contains is a
        // subdomain test; its records are built under the asked name).
        handler !== null && matchZone(cfg.zones, zone) !== undefined
          ? kubernetesTransfer(index.reader, handler.resolver, zone, serial)
          : null,
    }),
  );
  ctx.onShutdown(() => handler?.close());
  // `autopath @kubernetes` of this block asks the handler for each client's search path (§9.2).
  ctx.provide(SEARCH_PATH, { plugin: 'kubernetes', autoPath: (q) => handler?.autoPath(q) ?? null });

  return (next, block) => {
    // Chains are built after every plugin's setup, so `bind` has filled bindAddresses by now.
    bound = block.bindAddresses;
    const hcfg = handlerConfig(cfg, localIPs(bound), search);
    handler = new KubernetesHandler(
      hcfg,
      index.reader,
      () => index.synced(),
      next,
      (sub) => selfLookup.lookup(sub),
    );
    return handler;
  };
}

export const kubernetes: PluginDef = {
  name: 'kubernetes',
  repeat: 'error',
  options: KUBERNETES_OPTIONS,
  setup,
};
