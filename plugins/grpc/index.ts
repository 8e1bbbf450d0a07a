/**
 * The `grpc` directive (README.md): forward queries inside FROM to CoreDNS-style gRPC upstreams.
 * Once per block, as CoreDNS; the connections are dialled on the first query and closed when the
 * configuration is replaced or the server stops. node:http2 (and with it TLS) is loaded only then,
 * so a query thread whose Corefile has no grpc plugin never loads it.
 */
import type * as tls from 'node:tls';
import type { PluginDef } from '../../src/plugin.js';
import { GrpcHandler } from './handler.js';
import { GrpcProxy } from './proxy.js';
import { GRPC_OPTIONS, parseGrpc, type GrpcConfig } from './setup.js';

function tlsOptions(cfg: GrpcConfig): tls.ConnectionOptions | null {
  if (cfg.tls === null) return null;
  const t: tls.ConnectionOptions = { minVersion: 'TLSv1.2' };
  if (cfg.tls.ca) t.ca = cfg.tls.ca;
  if (cfg.tls.cert) t.cert = cfg.tls.cert;
  if (cfg.tls.key) t.key = cfg.tls.key;
  if (cfg.tlsServerName) t.servername = cfg.tlsServerName;
  return t;
}

export const grpc: PluginDef = {
  name: 'grpc',
  // Once per block: parseGrpc refuses a second occurrence as CoreDNS does (after the first parsed).
  repeat: 'all',
  options: GRPC_OPTIONS,
  handlesAllClasses: true,
  setup(d, ctx) {
    const cfg = parseGrpc(d, ctx.resolvePath);
    const t = tlsOptions(cfg);
    const proxies = cfg.to.map((up) => new GrpcProxy(up, t));
    ctx.onShutdown(() => {
      for (const p of proxies) p.close();
    });
    return (next) => new GrpcHandler(cfg, proxies, next);
  },
};
