/**
 * The `kubernetes` plugin: cluster DNS records from Services, EndpointSlices, Namespaces and
 * (with `pods verified`) Pods, per docs/records.md.
 */
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import { isIP } from 'node:net';
import { canonicalIP, fqdn } from '../../src/dns/name.js';
import type { BlockInfo, HandlerFactory, PluginDef, SetupContext } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { KubernetesHandler, type HandlerConfig } from './handler.js';
import { collectGarbage } from '../../src/util/gc.js';
import { KubeIndex } from './kubeindex.js';
import { selfLookup } from './selfquery.js';
import { parseKubernetes, watchSettings, type KubernetesConfig } from './setup.js';

export { KubernetesHandler } from './handler.js';
export type { KubernetesConfig } from './setup.js';

/** What autopath needs from the kubernetes plugin of its server block (§9.2). */
export interface SearchPathProvider {
  autoPath(q: Query): string[] | null;
}

const providers = new WeakMap<BlockInfo, KubernetesHandler>();

/**
 * The kubernetes handler of a server block (for `autopath @kubernetes`), once the block's chain
 * has been built; undefined when the block has no kubernetes plugin.
 */
export function searchPathProvider(block: BlockInfo): SearchPathProvider | undefined {
  return providers.get(block);
}

function isLoopback(ip: string): boolean {
  return ip.startsWith('127.') || ip === '::1';
}

/** The server's own non-loopback IPs (§3.2 step 1). */
export function localIPs(bindAddresses: readonly string[]): string[] {
  const out: string[] = [];
  const add = (ip: string): void => {
    const c = canonicalIP(ip.split('%')[0]!);
    if (c && !isLoopback(c) && !out.includes(c)) out.push(c);
  };
  const bound = bindAddresses.filter((a) => isIP(a.split('%')[0]!) !== 0);
  if (bound.length) bound.forEach(add);
  else for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) if (!a.internal) add(a.address);
  return out;
}

/** `search` domains of a resolv.conf text (the last `search` line wins). */
export function searchDomains(text: string): string[] {
  let out: string[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[0] === 'search' || f[0] === 'domain') out = f.slice(1).map((d) => fqdn(d.toLowerCase()));
  }
  return out;
}

/**
 * The initial lists finish after start-up, while serving: the server's compacting collection ran
 * too early to return their garbage, so run one when they are in (once; a stop of tens of ms).
 */
const compactionScheduled = new WeakSet<KubeIndex>();

function compactWhenSynced(index: KubeIndex): void {
  // Blocks sharing one index schedule one collection.
  if (compactionScheduled.has(index)) return;
  compactionScheduled.add(index);
  const timer = setInterval(() => {
    if (index.stopped) clearInterval(timer);
    else if (index.synced()) {
      clearInterval(timer);
      collectGarbage(true);
    }
  }, 100);
  timer.unref();
}

async function waitForSync(index: KubeIndex, timeoutMs: number, ctx: SetupContext): Promise<void> {
  const start = Date.now();
  let lastLog = start;
  while (!index.synced()) {
    const now = Date.now();
    if (now - start >= timeoutMs) {
      ctx.log.warning('starting server with unsynced Kubernetes API');
      compactWhenSynced(index);
      return;
    }
    if (now - lastLog >= 500) {
      lastLog = now;
      ctx.log.info('waiting for Kubernetes API before starting server');
    }
    await new Promise((r) => setTimeout(r, Math.min(100, Math.max(1, timeoutMs - (now - start)))));
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
  };
}

function setup(d: Dispenser, ctx: SetupContext): HandlerFactory {
  const cfg = parseKubernetes(d, ctx.block.zones, ctx.log);
  const settings = watchSettings(cfg);
  const key = `kubernetes:${JSON.stringify(settings)}`;
  // With query threads the main thread watches and the threads keep copies (docs/multicore.md).
  const repl = ctx.core.replication ? { replication: ctx.core.replication, key } : undefined;
  const index = ctx.shared(key, () => new KubeIndex(settings, ctx.log, repl), (ix) => ix.stop());
  const search: string[] = [];
  const handlers: KubernetesHandler[] = [];
  // ExternalName targets outside the zone are resolved through this server's own listener.
  const self = {
    host: (): string => {
      const a = ctx.block.bindAddresses.find((x) => isIP(x) !== 0 && x !== '0.0.0.0' && x !== '::');
      return a ?? '127.0.0.1';
    },
    port: (): number => ctx.block.port,
  };

  ctx.registerReady('kubernetes', () => (index.synced() ? true : index.notReadyReason()));
  ctx.onStartup(async () => {
    try {
      index.start();
      await index.whenStarted();
    } catch (e) {
      throw new Error(`plugin/kubernetes: ${(e as Error).message}`);
    }
    try {
      search.push(...searchDomains(await fs.readFile('/etc/resolv.conf', 'utf8')));
    } catch {
      /* no resolv.conf: no extra search domains */
    }
    await waitForSync(index, cfg.startupTimeoutMs, ctx);
  });
  ctx.onShutdown(() => {
    for (const h of handlers) h.close();
  });

  return (next) => {
    // Chains are built after every plugin's setup, so `bind` has filled bindAddresses by now.
    const hcfg = handlerConfig(cfg, localIPs(ctx.block.bindAddresses), search);
    const h = new KubernetesHandler(hcfg, index.store, () => index.synced(), next, (sub) => selfLookup(sub, self));
    handlers.push(h);
    providers.set(ctx.block, h);
    return h;
  };
}

export const kubernetes: PluginDef = {
  name: 'kubernetes',
  repeat: 'error',
  setup,
};
