/**
 * bind: restrict a server block's listeners to given addresses or interfaces (docs/plugins.md, bind).
 * Setup-only: it tells the core where to listen through `ctx.listenOn`.
 */
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { directive, option, parseOccurrences, str } from '../../src/corefile/options.js';
import type { PluginDef } from '../../src/plugin.js';

/** Addresses of an interface (IPv6 link-local ones get `%iface`), or null if no such interface. */
function interfaceAddresses(name: string): string[] | null {
  const ifs = networkInterfaces()[name];
  if (!ifs) return null;
  return ifs.map((i) =>
    i.family === 'IPv6' && i.address.toLowerCase().startsWith('fe80:') ? `${i.address}%${name}` : i.address,
  );
}

function resolve(arg: string): string[] | null {
  if (isIP(arg)) return [arg];
  return interfaceAddresses(arg);
}

const addressOrIface = str('ADDRESS|IFACE', (v) =>
  resolve(v) ? null : `not a valid IP address or interface name: "${v}"`,
);

export const BIND_OPTIONS = directive('bind', {
  args: { rest: addressOrIface, min: 1, arity: 'at least one address or interface name is expected' },
  options: [
    // As in CoreDNS 1.15.0, a later `except` line of the occurrence replaces an earlier one.
    option('except', {
      rest: addressOrIface,
      min: 1,
      arity: 'at least one address or interface must be given to except subdirective',
    }),
  ],
  unknown: (name) => `invalid option "${name}"`,
});

const resolveAll = (names: readonly unknown[]): string[] => names.flatMap((n) => resolve(String(n)) ?? []);

export const bind: PluginDef = {
  name: 'bind',
  repeat: 'all',
  options: BIND_OPTIONS,
  setup(d, ctx) {
    for (const occ of parseOccurrences(d, BIND_OPTIONS)) {
      const except = new Set(resolveAll(occ.last('except')?.values ?? []));
      ctx.listenOn(resolveAll(occ.directive.values).filter((a) => !except.has(a)));
    }
    return null;
  },
};
