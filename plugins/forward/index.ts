/**
 * The `forward` directive: every occurrence in a block becomes one forwarder; the forwarders are
 * chained in file order in front of the next plugin (docs/plugins.md, forward).
 */
import { Resolver } from 'node:dns/promises';
import type * as tls from 'node:tls';
import { DNSTAP } from '../../src/dnstap/forwarder.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import { ForwardHandler } from './handler.js';
import { Proxy, type ProxyOptions } from './proxy.js';
import { FORWARD_OPTIONS, setupWarnings, parseForward, type ForwardConfig, type ToSpec } from './setup.js';

function proxyOptions(cfg: ForwardConfig): ProxyOptions {
  const t: tls.ConnectionOptions = {};
  if (cfg.tls.ca) t.ca = cfg.tls.ca;
  if (cfg.tls.cert) t.cert = cfg.tls.cert;
  if (cfg.tls.key) t.key = cfg.tls.key;
  return {
    expireMs: cfg.expireMs,
    maxAgeMs: cfg.maxAgeMs,
    maxIdleConns: cfg.maxIdleConns,
    sourceAddress: cfg.sourceAddress,
    tls: t,
    tlsServerName: cfg.tlsServerName,
    forceTcp: cfg.forceTcp,
    healthCheck: cfg.healthCheck,
    dohMethod: cfg.dohMethod,
  };
}

/** Resolve a hostname TO to all its A and AAAA addresses. */
async function resolveHostname(spec: Extract<ToSpec, { kind: 'hostname' }>, resolvers: string[]): Promise<string[]> {
  const r = new Resolver();
  if (resolvers.length > 0) r.setServers(resolvers);
  const name = spec.name.slice(0, -1);
  // Asked as an absolute name (trailing dot): never expanded with resolv.conf search domains (CoreDNS 1.15.0).
  const [v4, v6] = await Promise.all([
    r.resolve4(spec.name).catch(() => [] as string[]),
    r.resolve6(spec.name).catch(() => [] as string[]),
  ]);
  const all = [...v4, ...v6];
  if (all.length === 0) throw new Error(`plugin/forward: failed to resolve upstream hostname ${name}`);
  return all;
}

export const forward: PluginDef = {
  name: 'forward',
  repeat: 'all',
  options: FORWARD_OPTIONS,
  handlesAllClasses: true,
  setup(d, ctx) {
    const configs = parseForward(d, ctx.resolvePath);
    for (const cfg of configs) for (const w of setupWarnings(cfg, ctx.block.port)) ctx.log.warning(w);
    const instances = configs.map((cfg) => {
      const opts = proxyOptions(cfg);
      const proxies = cfg.to.flatMap((t) => (t.kind === 'addr' && !t.quic ? [new Proxy(t, opts)] : []));
      return { cfg, opts, proxies };
    });
    const quic = configs.flatMap((c) => c.to.filter((t) => t.quic));
    ctx.onStartup(async () => {
      if (quic[0]) {
        const t = quic[0];
        const where =
          t.kind === 'addr' ? `${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}` : `${t.name}:${t.port}`;
        throw new Error(
          `plugin/forward: upstream quic://${where} needs DNS over QUIC, and this runtime (Node ${process.versions.node}) has no node:quic module ` +
            `(node --experimental-quic -e "import('node:quic')" fails with "No such built-in module"); use tls:// or https:// upstreams instead`,
        );
      }
      for (const inst of instances) {
        for (const t of inst.cfg.to) {
          if (t.kind !== 'hostname') continue;
          const addrs = await resolveHostname(t, inst.cfg.resolvers);
          for (const host of addrs) {
            if (inst.proxies.some((p) => p.addr.host === host && p.addr.port === t.port && p.addr.scheme === t.scheme))
              continue;
            inst.proxies.push(
              new Proxy(
                {
                  scheme: t.scheme,
                  host,
                  port: t.port,
                  serverName: t.serverName ?? (t.scheme !== 'dns' ? t.name.slice(0, -1) : null),
                },
                inst.opts,
              ),
            );
          }
        }
        for (const p of inst.proxies) p.start();
      }
    });
    ctx.onShutdown(() => {
      for (const inst of instances) for (const p of inst.proxies) p.stop();
    });
    return (next: Handler | null): Handler => {
      // The block's dnstap, if any, receives every attempt (CoreDNS looks its handler up at start).
      const tap = { current: ctx.lookup(DNSTAP) ?? null };
      let chain = next;
      for (let k = instances.length - 1; k >= 0; k--) {
        const inst = instances[k]!;
        chain = new ForwardHandler(inst.cfg, inst.proxies, chain, tap);
      }
      return chain!;
    };
  },
};
