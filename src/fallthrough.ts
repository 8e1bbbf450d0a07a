/**
 * `fallthrough [ZONES...]`, shared by every plugin that offers it (file, hosts, kubernetes,
 * k8s_external, template), as CoreDNS's `plugin/pkg/fall`: a name inside one of the zones that the
 * plugin would answer NXDOMAIN (or not at all) goes to the next plugin instead (docs/records.md
 * §4.7). In `src/` because plugins may not import each other's folders.
 */
import { matchZone } from './dns/name.js';

/** The zones that fall through (`.` = every name), or null when the plugin has no `fallthrough`. */
export type Fallthrough = readonly string[] | null;

/**
 * The zones of one `fallthrough` line, already normalised by the option parser (absolute, lower
 * case): none means every name (CoreDNS's `fall.Root`). Repeated zones are kept once.
 */
export function parseFallthrough(zones: readonly string[]): string[] {
  return zones.length > 0 ? [...new Set(zones)] : ['.'];
}

/** Does the lower-cased `lname` fall through? Never when `ft` is null (CoreDNS's `fall.Through`). */
export function fallsThrough(ft: Fallthrough, lname: string): boolean {
  return ft !== null && matchZone(ft, lname) !== undefined;
}
