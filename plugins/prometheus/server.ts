/**
 * The `/metrics` endpoint (docs/plugins.md, prometheus): the process-wide registry in Prometheus text
 * format (gzip when the scraper accepts it), any other path 404. One listener per address, shared
 * by the blocks that use it and kept across reloads.
 */
import type * as http from 'node:http';
import { gzipSync } from 'node:zlib';
import { collectDefaultMetrics, registry } from '../../src/metrics/registry.js';
import { sendText, SideListener } from '../../src/server/sidelistener.js';

/**
 * prom-client's process_* and nodejs_* collectors, registered once per process (in the registry),
 * by the main thread (index.ts: a query thread's copies would be dropped by the aggregation).
 */
export function registerDefaultMetrics(): void {
  if (registry.getSingleMetric('process_cpu_seconds_total')) return;
  collectDefaultMetrics();
}

export async function metricsHandler(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?', 1)[0];
  if (path !== '/metrics') {
    sendText(res, 404, '404 page not found\n');
    return;
  }
  let body: string;
  try {
    body = await registry.metrics();
  } catch (e) {
    sendText(res, 500, `An error has occurred while serving metrics:\n\n${(e as Error).message}\n`);
    return;
  }
  const accept = req.headers['accept-encoding'] ?? '';
  if (/\bgzip\b/.test(Array.isArray(accept) ? accept.join(',') : accept)) {
    const gz = gzipSync(body);
    res.writeHead(200, {
      'Content-Type': registry.contentType,
      'Content-Encoding': 'gzip',
      'Content-Length': gz.length,
      Vary: 'Accept-Encoding',
    });
    res.end(gz);
    return;
  }
  res.writeHead(200, { 'Content-Type': registry.contentType, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

export class MetricsServer {
  readonly listener: SideListener;

  constructor(
    readonly address: string,
    queryThread = false,
  ) {
    this.listener = new SideListener(address, queryThread);
    this.listener.handler = (req, res) => void metricsHandler(req, res);
  }

  start(): Promise<void> {
    return this.listener.start();
  }

  stop(): Promise<void> {
    return this.listener.stop();
  }
}
