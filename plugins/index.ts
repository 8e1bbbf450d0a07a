/**
 * The plugin registry: every directive clusterdns knows, in the one fixed global execution order
 * (CoreDNS 1.14.7 `plugin.cfg`, restricted to the plugins this product has; docs/corefile.md §8.2).
 * Directive order in a Corefile never matters; this list does. The server core knows plugins only
 * through this list.
 */
import type { PluginDef } from '../src/plugin.js';
import { reload } from './reload/index.js';
import { bind } from './bind/index.js';
import { ready } from './ready/index.js';
import { health } from './health/index.js';
import { prometheus } from './prometheus/index.js';
import { errors } from './errors/index.js';
import { log } from './log/index.js';
import { shadow } from './shadow/index.js';
import { loadbalance } from './loadbalance/index.js';
import { autopath } from './autopath/index.js';
import { cache } from './cache/index.js';
import { hosts } from './hosts/index.js';
import { kubernetes } from './kubernetes/index.js';
import { loop } from './loop/index.js';
import { forward } from './forward/index.js';
import { whoami } from './whoami/index.js';

export const PLUGINS: readonly PluginDef[] = [
  reload,
  bind,
  ready,
  health,
  prometheus,
  errors,
  log,
  shadow,
  loadbalance,
  autopath,
  cache,
  hosts,
  kubernetes,
  loop,
  forward,
  whoami,
];

export function pluginByName(name: string): PluginDef | undefined {
  return PLUGINS.find((p) => p.name === name);
}
