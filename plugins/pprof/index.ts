/**
 * The `pprof` directive (README.md): an HTTP listener (default `localhost:6053`) with CoreDNS's
 * `/debug/pprof/` index and paths, serving Node's CPU profile and heap snapshot.
 */
import { isIPv6 } from 'node:net';
import { directive, option, str } from '../../src/corefile/options.js';
import type { PluginDef } from '../../src/plugin.js';
import { PprofServer } from './server.js';

export const PPROF_OPTIONS = directive('pprof', {
  args: { args: [str('ADDRESS')], min: 0 },
  options: [option('block', { args: [str('RATE')], min: 0 })],
});

const DEFAULT_ADDR = 'localhost:6053';

/** Go's net.SplitHostPort, with its error texts. */
export function splitHostPort(addr: string): { host: string; port: string } {
  const missing = `address ${addr}: missing port in address`;
  const i = addr.lastIndexOf(':');
  if (i < 0) throw new Error(missing);
  let host: string;
  if (addr.startsWith('[')) {
    const end = addr.indexOf(']');
    if (end < 0) throw new Error(`address ${addr}: missing ']' in address`);
    if (end + 1 === addr.length) throw new Error(missing);
    if (end + 1 !== i) throw new Error(addr[end + 1] === ':' ? `address ${addr}: too many colons in address` : missing);
    host = addr.slice(1, end);
  } else {
    host = addr.slice(0, i);
    if (host.includes(':')) throw new Error(`address ${addr}: too many colons in address`);
  }
  return { host, port: addr.slice(i + 1) };
}

/** Go's net.LookupPort for tcp: a number 0..65535 (service names are not looked up), else -1. */
function portNumber(port: string): number {
  if (port === '') return 0;
  if (!/^\d+$/.test(port) || Number(port) > 65535) return -1;
  return Number(port);
}

export const pprof: PluginDef = {
  name: 'pprof',
  repeat: 'all',
  options: PPROF_OPTIONS,
  setup(d, ctx) {
    let addr = DEFAULT_ADDR;
    let blockRate = 0;
    let seen = 0;
    while (d.next()) {
      if (seen++ > 0) throw d.err('this plugin can only be used once per Server Block');
      const args = d.remainingArgs();
      if (args.length === 1) {
        addr = args[0]!;
        try {
          splitHostPort(addr);
        } catch (e) {
          throw d.err((e as Error).message);
        }
      }
      if (args.length > 1) throw d.argErr();
      while (d.nextBlock()) {
        if (d.val() !== 'block') throw d.err(`unknown property '${d.val()}'`);
        const a = d.remainingArgs();
        if (a.length > 1) throw d.argErr();
        blockRate = 1;
        if (a.length > 0) {
          if (!/^[+-]?\d+$/.test(a[0]!) || !Number.isSafeInteger(Number(a[0])))
            throw d.err(`property 'block' invalid integer value '${a[0]}'`);
          blockRate = Number(a[0]);
        }
      }
    }
    const { host, port } = splitHostPort(addr);
    const portNum = portNumber(port);
    if (portNum < 0) {
      // As CoreDNS: the listen fails at startup.
      ctx.onStartup(() => {
        const msg = `listen tcp: lookup tcp/${port}: unknown port`;
        ctx.log.error(`Failed to start pprof handler: ${msg}`);
        throw new Error(msg);
      });
      return null;
    }
    const server = ctx.shared(
      `pprof:${addr}`,
      () => new PprofServer(host, portNum, ctx.process.queryThread),
      (s) => s.close(),
    );
    ctx.onStartup(async () => {
      try {
        await server.listen();
      } catch (e) {
        const msg = `listen tcp ${isIPv6(host) ? `[${host}]` : host}:${port}: ${(e as NodeJS.ErrnoException).code === 'EADDRINUSE' ? 'bind: address already in use' : (e as Error).message}`;
        ctx.log.error(`Failed to start pprof handler: ${msg}`);
        throw new Error(msg);
      }
      // Go's block profile rate has no Node counterpart: accepted, without effect.
      if (blockRate > 0) ctx.log.debug(`block profiling (rate ${blockRate}) is not available on Node.js`);
    });
    return null;
  },
};
