/**
 * The plugin registry: every directive clusterdns knows, in the one fixed global execution order
 * (CoreDNS 1.15.0 `plugin.cfg`, with clusterdns's own `shadow` after `log`; docs/corefile.md §8.2).
 * Directive order in a Corefile never matters; `DIRECTIVE_ORDER` does: `PLUGINS` is sorted by it,
 * so adding a plugin is one entry in the list below. The server core knows plugins only through
 * `PLUGINS`.
 *
 * A plugin's code is loaded when a Corefile first names it (`PluginEntry.load`), not when the
 * registry is: every module is compiled and kept once more in each query thread's isolate, and the
 * plugins a Corefile does not use were about 4.9 MiB of every thread (docs/multicore.md §2, "What a
 * query thread loads"). Their metric families are registered at start-up all the same, as
 * CoreDNS's are (plugins/metrics.ts).
 */
import type { PluginDef } from '../src/plugin.js';
import './metrics.js';

/** One directive of the registry: its name now, its code (setup, handler) when first used. */
export interface PluginEntry {
  /** The Corefile directive. */
  readonly name: string;
  /** Imports the plugin's module once; later calls return the same definition. */
  load(): Promise<PluginDef>;
}

/**
 * The entry of directive `name`, whose module `importDef` imports on first use. The definition's
 * own name must be the directive's (a mismatch is a registry bug, reported when it is loaded).
 */
function plugin(name: string, importDef: () => Promise<PluginDef>): PluginEntry {
  let loaded: Promise<PluginDef> | null = null;
  const load = async (): Promise<PluginDef> => {
    const def = await importDef();
    if (def.name !== name) throw new Error(`plugins/index.ts: entry ${name} loads plugin ${def.name}`);
    return def;
  };
  return {
    name,
    load() {
      loaded ??= load();
      return loaded;
    },
  };
}

/**
 * CoreDNS 1.15.0's `plugin.cfg` order, plus `shadow` (clusterdns only). A Corefile directive in
 * this list that clusterdns does not implement is rejected as such, not as a typo.
 */
export const DIRECTIVE_ORDER: readonly string[] = [
  'root',
  'metadata',
  'geoip',
  'cancel',
  'proxyproto',
  'quic',
  'grpc_server',
  'https',
  'https3',
  'timeouts',
  'multisocket',
  'reload',
  'nsid',
  'bufsize',
  'bind',
  'debug',
  'trace',
  'ready',
  'health',
  'pprof',
  'shed',
  'prometheus',
  'errors',
  'log',
  'shadow',
  'dnstap',
  'local',
  'dns64',
  'siit',
  'any',
  'chaos',
  'loadbalance',
  'tsig',
  'rewrite',
  'autopath',
  'acl',
  'cache',
  'header',
  'dnssec',
  'tls',
  'minimal',
  'template',
  'transfer',
  'dynupdate',
  'hosts',
  'route53',
  'azure',
  'clouddns',
  'k8s_external',
  'kubernetes',
  'file',
  'auto',
  'secondary',
  'etcd',
  'loop',
  'forward',
  'grpc',
  'erratic',
  'whoami',
  'on',
  'sign',
  'view',
  'nomad',
];

const IMPLEMENTED: readonly PluginEntry[] = [
  plugin('metadata', async () => (await import('./metadata/index.js')).metadata),
  plugin('cancel', async () => (await import('./cancel/index.js')).cancel),
  plugin('proxyproto', async () => (await import('./proxyproto/index.js')).proxyproto),
  plugin('quic', async () => (await import('./quic/index.js')).quic),
  plugin('grpc_server', async () => (await import('./grpc_server/index.js')).grpc_server),
  plugin('https', async () => (await import('./https/index.js')).https),
  plugin('https3', async () => (await import('./https3/index.js')).https3),
  plugin('timeouts', async () => (await import('./timeouts/index.js')).timeouts),
  plugin('multisocket', async () => (await import('./multisocket/index.js')).multisocket),
  plugin('debug', async () => (await import('./debug/index.js')).debug),
  plugin('trace', async () => (await import('./trace/index.js')).trace),
  plugin('reload', async () => (await import('./reload/index.js')).reload),
  plugin('bind', async () => (await import('./bind/index.js')).bind),
  plugin('ready', async () => (await import('./ready/index.js')).ready),
  plugin('health', async () => (await import('./health/index.js')).health),
  plugin('pprof', async () => (await import('./pprof/index.js')).pprof),
  plugin('prometheus', async () => (await import('./prometheus/index.js')).prometheus),
  plugin('shed', async () => (await import('./shed/index.js')).shed),
  plugin('errors', async () => (await import('./errors/index.js')).errors),
  plugin('log', async () => (await import('./log/index.js')).log),
  plugin('shadow', async () => (await import('./shadow/index.js')).shadow),
  plugin('loadbalance', async () => (await import('./loadbalance/index.js')).loadbalance),
  plugin('tsig', async () => (await import('./tsig/index.js')).tsig),
  plugin('rewrite', async () => (await import('./rewrite/index.js')).rewrite),
  plugin('autopath', async () => (await import('./autopath/index.js')).autopath),
  plugin('cache', async () => (await import('./cache/index.js')).cache),
  plugin('template', async () => (await import('./template/index.js')).template),
  plugin('transfer', async () => (await import('./transfer/index.js')).transfer),
  plugin('dynupdate', async () => (await import('./dynupdate/index.js')).dynupdate),
  plugin('dnstap', async () => (await import('./dnstap/index.js')).dnstap),
  plugin('hosts', async () => (await import('./hosts/index.js')).hosts),
  plugin('route53', async () => (await import('./route53/index.js')).route53),
  plugin('azure', async () => (await import('./azure/index.js')).azure),
  plugin('clouddns', async () => (await import('./clouddns/index.js')).clouddns),
  plugin('file', async () => (await import('./file/index.js')).file),
  plugin('auto', async () => (await import('./auto/index.js')).auto),
  plugin('secondary', async () => (await import('./secondary/index.js')).secondary),
  plugin('etcd', async () => (await import('./etcd/index.js')).etcd),
  plugin('kubernetes', async () => (await import('./kubernetes/index.js')).kubernetes),
  plugin('k8s_external', async () => (await import('./k8s_external/index.js')).k8s_external),
  plugin('loop', async () => (await import('./loop/index.js')).loop),
  plugin('forward', async () => (await import('./forward/index.js')).forward),
  plugin('grpc', async () => (await import('./grpc/index.js')).grpc),
  plugin('whoami', async () => (await import('./whoami/index.js')).whoami),
  plugin('sign', async () => (await import('./sign/index.js')).sign),
  plugin('nsid', async () => (await import('./nsid/index.js')).nsid),
  plugin('bufsize', async () => (await import('./bufsize/index.js')).bufsize),
  plugin('local', async () => (await import('./local/index.js')).local),
  plugin('dns64', async () => (await import('./dns64/index.js')).dns64),
  plugin('any', async () => (await import('./any/index.js')).any),
  plugin('chaos', async () => (await import('./chaos/index.js')).chaos),
  plugin('acl', async () => (await import('./acl/index.js')).acl),
  plugin('header', async () => (await import('./header/index.js')).header),
  plugin('dnssec', async () => (await import('./dnssec/index.js')).dnssec),
  plugin('tls', async () => (await import('./tls/index.js')).tls),
  plugin('minimal', async () => (await import('./minimal/index.js')).minimal),
  plugin('view', async () => (await import('./view/index.js')).view),
  plugin('nomad', async () => (await import('./nomad/index.js')).nomad),
  plugin('root', async () => (await import('./root/index.js')).root),
  plugin('geoip', async () => (await import('./geoip/index.js')).geoip),
  plugin('siit', async () => (await import('./siit/index.js')).siit),
  plugin('erratic', async () => (await import('./erratic/index.js')).erratic),
  plugin('on', async () => (await import('./on/index.js')).on),
];

function orderOf(name: string): number {
  const i = DIRECTIVE_ORDER.indexOf(name);
  if (i < 0) throw new Error(`plugin ${name} is missing from DIRECTIVE_ORDER`);
  return i;
}

export const PLUGINS: readonly PluginEntry[] = [...IMPLEMENTED].sort((a, b) => orderOf(a.name) - orderOf(b.name));

/** A CoreDNS directive this build does not implement (named as such in the parse error). */
export function isForeignDirective(name: string): boolean {
  return DIRECTIVE_ORDER.includes(name) && !PLUGINS.some((p) => p.name === name);
}

export function pluginByName(name: string): PluginEntry | undefined {
  return PLUGINS.find((p) => p.name === name);
}
