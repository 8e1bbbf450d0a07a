/**
 * The `root` plugin's folder applied to a plugin's file argument, as CoreDNS 1.15.0's plugins do it
 * (`if !filepath.IsAbs(p) && config.Root != "" { p = filepath.Join(config.Root, p) }`): file,
 * auto, hosts, tls, loadbalance's weight file, dnssec's and sign's key files, sign's zone and
 * directory, dynupdate's seed and database. The core keeps the root per server block
 * (`SetupContext.setRoot` / `resolvePath`); plugins never read it from each other.
 */
import { isAbsolute, join } from 'node:path';

/** `path` joined to `root` when `root` is set and `path` is relative; Go's Join also cleans the result. */
export function resolveAgainstRoot(root: string, path: string): string {
  if (root === '' || isAbsolute(path)) return path;
  const joined = join(root, path);
  // filepath.Clean drops a trailing slash (path.join keeps it), except for the root `/` itself.
  return joined.length > 1 && joined.endsWith('/') ? joined.slice(0, -1) : joined;
}
