/**
 * The plugin registry: every directive clusterdns knows, in the one fixed global execution order
 * (CoreDNS 1.15.0 `plugin.cfg`, with clusterdns's own `shadow` after `log`; docs/corefile.md §8.2).
 * Directive order in a Corefile never matters; `DIRECTIVE_ORDER` does: `PLUGINS` is sorted by it,
 * so adding a plugin is one import and one entry in the list below. The server core knows plugins
 * only through `PLUGINS`.
 */
import type { PluginDef } from '../src/plugin.js';
import { reload } from './reload/index.js';
import { metadata } from './metadata/index.js';
import { cancel } from './cancel/index.js';
import { timeouts } from './timeouts/index.js';
import { debug } from './debug/index.js';
import { pprof } from './pprof/index.js';
import { bind } from './bind/index.js';
import { ready } from './ready/index.js';
import { health } from './health/index.js';
import { prometheus } from './prometheus/index.js';
import { errors } from './errors/index.js';
import { log } from './log/index.js';
import { shadow } from './shadow/index.js';
import { loadbalance } from './loadbalance/index.js';
import { rewrite } from './rewrite/index.js';
import { autopath } from './autopath/index.js';
import { cache } from './cache/index.js';
import { template } from './template/index.js';
import { hosts } from './hosts/index.js';
import { auto } from './auto/index.js';
import { secondary } from './secondary/index.js';
import { file } from './file/index.js';
import { kubernetes } from './kubernetes/index.js';
import { k8s_external } from './k8s_external/index.js';
import { loop } from './loop/index.js';
import { forward } from './forward/index.js';
import { whoami } from './whoami/index.js';
import { nsid } from './nsid/index.js';
import { bufsize } from './bufsize/index.js';
import { local } from './local/index.js';
import { dns64 } from './dns64/index.js';
import { any } from './any/index.js';
import { chaos } from './chaos/index.js';
import { acl } from './acl/index.js';
import { header } from './header/index.js';
import { minimal } from './minimal/index.js';
import { transfer } from './transfer/index.js';
import { view } from './view/index.js';
import { dnstap } from './dnstap/index.js';
import { etcd } from './etcd/index.js';
import { tls } from './tls/index.js';
import { https } from './https/index.js';
import { quic } from './quic/index.js';
import { https3 } from './https3/index.js';

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

const IMPLEMENTED: readonly PluginDef[] = [
  metadata,
  cancel,
  timeouts,
  debug,
  reload,
  bind,
  ready,
  health,
  pprof,
  prometheus,
  errors,
  log,
  shadow,
  loadbalance,
  rewrite,
  autopath,
  cache,
  template,
  transfer,
  dnstap,
  hosts,
  file,
  auto,
  secondary,
  etcd,
  kubernetes,
  k8s_external,
  loop,
  forward,
  whoami,
  nsid,
  bufsize,
  local,
  dns64,
  any,
  chaos,
  acl,
  header,
  minimal,
  view,
  tls,
  https,
  quic,
  https3,
];

function orderOf(name: string): number {
  const i = DIRECTIVE_ORDER.indexOf(name);
  if (i < 0) throw new Error(`plugin ${name} is missing from DIRECTIVE_ORDER`);
  return i;
}

export const PLUGINS: readonly PluginDef[] = [...IMPLEMENTED].sort((a, b) => orderOf(a.name) - orderOf(b.name));

/** A CoreDNS directive this build does not implement (named as such in the parse error). */
export function isForeignDirective(name: string): boolean {
  return DIRECTIVE_ORDER.includes(name) && !PLUGINS.some((p) => p.name === name);
}

export function pluginByName(name: string): PluginDef | undefined {
  return PLUGINS.find((p) => p.name === name);
}
