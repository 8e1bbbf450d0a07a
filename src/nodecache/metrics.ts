/**
 * `coredns_nodecache_setup_errors_total{errortype}` on `-metrics-listen-address` (upstream's
 * cmd/node-cache/app/metrics.go): its own registry and HTTP listener, apart from the prometheus
 * plugin's. The five error types start at 0 as upstream registers them. nftables failures count
 * as `iptables`.
 */
import type * as http from 'node:http';
import { client } from '../metrics/registry.js';
import { splitHostPort } from '../util/hostport.js';
import { nodeHttp } from '../util/require.js';

export type SetupErrorType = 'iptables' | 'iptables_lock' | 'interface_add' | 'interface_check' | 'configmap';

export class NodeCacheMetrics {
  readonly registry = new client.Registry();
  private readonly errors = new client.Counter({
    name: 'coredns_nodecache_setup_errors_total',
    help: 'The number of errors during periodic network setup for node-cache',
    labelNames: ['errortype'],
    registers: [this.registry],
  });
  private server: http.Server | null = null;

  constructor() {
    for (const t of ['iptables', 'iptables_lock', 'interface_add', 'interface_check', 'configmap'] as const)
      this.errors.inc({ errortype: t }, 0);
  }

  error(t: SetupErrorType): void {
    this.errors.inc({ errortype: t });
  }

  /** Serve /metrics on `hostport`; resolves with the bound port. */
  listen(hostport: string): Promise<number> {
    const { host, port } = splitHostPort(hostport);
    const srv = nodeHttp.createServer((req, res) => {
      if (req.url !== '/metrics') {
        res.writeHead(404).end('404 page not found\n');
        return;
      }
      void this.registry.metrics().then((text) => {
        res.writeHead(200, { 'Content-Type': this.registry.contentType }).end(text);
      });
    });
    return new Promise((resolve, reject) => {
      srv.once('error', reject);
      // Shared with the instance being replaced (docs/node-cache.md, "Upgrades without a gap").
      srv.listen({ host: host || undefined, port: Number(port), reusePort: true }, () => {
        srv.off('error', reject);
        this.server = srv;
        const a = srv.address();
        resolve(typeof a === 'object' && a ? a.port : 0);
      });
    });
  }

  close(): void {
    this.server?.close();
  }
}
