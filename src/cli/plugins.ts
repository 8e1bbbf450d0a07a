/**
 * `-plugins`: the directives this binary knows, in the layout of CoreDNS 1.15.0's `-plugins`
 * (its Caddy fork's `DescribePlugins`): one name per line, sorted, then an empty line. (Older
 * CoreDNS releases printed sections — "Server types:", "Caddyfile loaders:", "Other plugins:" —
 * with `dns.`-prefixed names; 1.15.0 prints only the bare plugin names.)
 */
import { PLUGINS } from '../../plugins/index.js';

/** Directives Caddy registers for every server type, listed after the sorted DNS ones. */
const GENERIC: readonly string[] = ['on'];

export function pluginList(): string {
  // Go's sort.Strings orders by bytes; the names are ASCII, where UTF-16 order is the same.
  // `on` is Caddy's generic plugin (no server type): Caddy lists it after the DNS plugins.
  const names = PLUGINS.map((p) => p.name)
    .filter((n) => !GENERIC.includes(n))
    .sort();
  names.push(...PLUGINS.map((p) => p.name).filter((n) => GENERIC.includes(n)));
  return `${names.map((n) => `${n}\n`).join('')}\n`;
}
