/**
 * bind: restrict a server block's listeners to given addresses or interfaces (docs/plugins.md, bind).
 * Setup-only: it tells the core where to listen through `ctx.listenOn`.
 */
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { PluginDef } from '../../src/plugin.js';

/** Addresses of an interface (IPv6 link-local ones get `%iface`), or null if no such interface. */
function interfaceAddresses(name: string): string[] | null {
  const ifs = networkInterfaces()[name];
  if (!ifs) return null;
  return ifs.map((i) => (i.family === 'IPv6' && i.address.toLowerCase().startsWith('fe80:') ? `${i.address}%${name}` : i.address));
}

function resolve(arg: string): string[] | null {
  if (isIP(arg)) return [arg];
  return interfaceAddresses(arg);
}

export const bind: PluginDef = {
  name: 'bind',
  repeat: 'all',
  setup(d, ctx) {
    while (d.next()) {
      const args = d.remainingArgs();
      if (args.length === 0) throw d.err('at least one address or interface name is expected');
      const addrs: string[] = [];
      for (const a of args) {
        const r = resolve(a);
        if (!r) throw d.err(`not a valid IP address or interface name: "${a}"`);
        addrs.push(...r);
      }
      const except = new Set<string>();
      while (d.nextBlock()) {
        if (d.val() !== 'except') throw d.err(`invalid option "${d.val()}"`);
        const ex = d.remainingArgs();
        if (ex.length === 0) throw d.argErr();
        for (const e of ex) {
          const r = resolve(e);
          if (!r) throw d.err(`not a valid IP address or interface name: "${e}"`);
          for (const x of r) except.add(x);
        }
      }
      ctx.listenOn(addrs.filter((a) => !except.has(a)));
    }
    return null;
  },
};
