/**
 * The health endpoint: `/health` → 200 `OK` for any method, anything else → 404. While it runs,
 * a self-probe requests the endpoint once per second (3 s timeout) and feeds
 * `coredns_health_request_duration_seconds` / `coredns_health_request_failures_total`: a slow
 * or failing local request means the event loop is overloaded.
 */
import type * as http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../../src/log.js';
import { formatGoDuration } from '../../src/util/duration.js';
import { healthDuration, healthFailures } from './metrics.js';
import { sendText, SideListener } from '../../src/server/sidelistener.js';
import { nodeHttp } from '../../src/util/require.js';

const PROBE_INTERVAL_MS = 1000;
const PROBE_TIMEOUT_MS = 3000;
const SLOW_MS = 1000;

function isUnspecified(host: string): boolean {
  return host === '' || host === '0.0.0.0' || host === '::';
}

export function healthHandler(req: http.IncomingMessage, res: http.ServerResponse): void {
  const path = (req.url ?? '/').split('?', 1)[0];
  if (path === '/health') sendText(res, 200, 'OK');
  else sendText(res, 404, '404 page not found\n');
}

export class HealthServer {
  readonly listener: SideListener;
  private timer: NodeJS.Timeout | null = null;
  private readonly agent = new nodeHttp.Agent({ keepAlive: true, maxSockets: 1 });
  private probing = false;

  constructor(
    readonly address: string,
    private readonly log: Logger,
    queryThread = false,
  ) {
    this.listener = new SideListener(address, queryThread);
    this.listener.handler = healthHandler;
  }

  /** URL the self-probe requests (`localhost` when ADDRESS has no host). */
  get probeUrl(): string {
    const { host } = this.listener.hostPort;
    const h = isUnspecified(host) ? 'localhost' : host.includes(':') ? `[${host}]` : host;
    const port = this.listener.port || Number(this.listener.hostPort.port);
    return `http://${h}:${port}/health`;
  }

  async start(): Promise<void> {
    await this.listener.start();
    if (this.timer === null) {
      this.timer = setInterval(() => void this.probeOnce(), PROBE_INTERVAL_MS);
      this.timer.unref();
    }
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.agent.destroy();
    await this.listener.stop();
  }

  /** One self-probe: observe its duration; count and log a failure; warn when slow. */
  probeOnce(): Promise<void> {
    if (this.probing) return Promise.resolve(); // the previous one is still waiting (≤ 3 s)
    this.probing = true;
    const url = this.probeUrl;
    const start = performance.now();
    return new Promise<void>((resolve) => {
      let finished = false;
      const finish = (err: Error | null): void => {
        if (finished) return;
        finished = true;
        const elapsedMs = performance.now() - start;
        healthDuration.observe(elapsedMs / 1000);
        if (err) {
          healthFailures.inc();
          this.log.warning(`Local health request to ${JSON.stringify(url)} failed: ${err.message}`);
        } else if (elapsedMs > SLOW_MS) {
          this.log.warning(
            `Local health request to ${JSON.stringify(url)} took more than 1s: ${formatGoDuration(elapsedMs)}`,
          );
        }
        this.probing = false;
        resolve();
      };
      const req = nodeHttp.get(url, { agent: this.agent, timeout: PROBE_TIMEOUT_MS }, (res) => {
        res.resume();
        res.on('end', () => finish(null));
        res.on('error', (e) => finish(e));
      });
      req.on('timeout', () =>
        req.destroy(
          new Error(
            `Get ${JSON.stringify(url)}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
          ),
        ),
      );
      req.on('error', (e) => finish(e));
    });
  }
}
