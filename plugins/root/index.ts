/**
 * The `root` directive (README.md): the folder the block's relative file arguments are read from.
 * The core keeps it per server block (SetupContext.setRoot); file, auto, hosts, tls, loadbalance,
 * dnssec, sign, dynupdate and the TLS files of forward, grpc and etcd resolve their paths through `ctx.resolvePath` (src/rootpath.ts). `root` is first in
 * the plugin order, so its setup runs before theirs.
 */
import { statSync } from 'node:fs';
import { directive, file } from '../../src/corefile/options.js';
import { ConfigError } from '../../src/corefile/types.js';
import type { PluginDef } from '../../src/plugin.js';
import { openErrorText } from '../../src/zone/load.js';

export const ROOT_OPTIONS = directive('root', { args: { args: [file('PATH')] } });

export const root: PluginDef = {
  name: 'root',
  // CoreDNS does not enforce its README's "once per Server Block": the last PATH wins.
  repeat: 'all',
  options: ROOT_OPTIONS,
  setup(d, ctx) {
    let dir = '';
    // CoreDNS's loop, token for token: a second argument on the line is read as the next
    // occurrence's directive and then lacks its own argument (the argument count error after it).
    while (d.next()) {
      if (!d.nextArg()) throw d.argErr();
      dir = d.val();
    }
    const at = d.token();
    try {
      statSync(dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
        const why = openErrorText(dir, e).replace(/^open /, 'stat ');
        throw new ConfigError(`unable to access root path '${dir}': ${why}`, at?.file, at?.line, 'root');
      }
      // Allowed, as in CoreDNS: the folder may appear later.
      ctx.log.warning(`Root path does not exist: ${dir}`);
    }
    ctx.setRoot(dir);
    return null;
  },
};
