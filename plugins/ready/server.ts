/**
 * The readiness endpoint `/ready` (docs/plugins.md, ready), as CoreDNS 1.15.0 answers it: 200 `OK`
 * when every readiness probe the serving instance registered says ready; else 503 whose body is
 * the sorted names of the plugins not ready joined with `,` (nothing else, byte for byte), and the
 * log line `[INFO] plugin/ready: Plugins not ready: "<names>"`. The probes' reasons (why a plugin
 * is not ready) are logged at debug level only; the plugins log their own failures. Until the
 * first configuration serves DNS it is 503 (`Starting` when no probe says otherwise). At the
 * start of final shutdown the listener closes (probes are refused) and a request still in
 * progress gets 503 `Shutting down`.
 */
import type * as http from 'node:http';
import type { Logger } from '../../src/log.js';
import type { Lifecycle, ReadinessProbe, ReadinessReport } from '../../src/plugin.js';
import { sendText, SideListener } from '../../src/server/sidelistener.js';
import type { MonitorType } from './setup.js';

/** Go's `%q` of a string of plugin names (printable ASCII: a JSON string is the same text). */
function goQuote(s: string): string {
  return JSON.stringify(s);
}

/** The log line for a 503 (CoreDNS 1.15.0: `Plugins not ready: %q`, the line operators grep for). */
export function notReadyLogLine(names: string): string {
  return `Plugins not ready: ${goQuote(names)}`;
}

export interface ReadinessResult {
  readonly ready: boolean;
  /** Sorted names of the plugins not ready. */
  readonly notReady: string[];
  /** `name: reason` lines for the not-ready probes that gave a reason. */
  readonly reasons: string[];
}

export class ReadyServer {
  readonly listener: SideListener;
  monitor: MonitorType = 'until-ready';
  /** Probes that answered ready once (until-ready never asks them again). */
  private readonly once = new WeakSet<ReadinessProbe>();
  private shuttingDown = false;
  private lifecycle: Lifecycle | null = null;
  private report: ReadinessReport | null = null;
  /**
   * Some configuration serves DNS. Before that (first start: the listener opens in the startup
   * hooks, while e.g. kubernetes may still wait for its watches and the DNS ports are not open),
   * `/ready` never answers 200.
   */
  serving = false;

  constructor(
    readonly address: string,
    private readonly log: Logger,
    queryThread = false,
  ) {
    this.listener = new SideListener(address, queryThread);
    this.listener.handler = (req, res) => this.handle(req, res);
  }

  /**
   * Attach to the server's lifecycle (once: close at the start of final shutdown) and report its
   * probes.
   */
  attach(lifecycle: Lifecycle, report: ReadinessReport): void {
    this.report = report;
    if (this.lifecycle === lifecycle) return;
    const first = this.lifecycle === null;
    this.lifecycle = lifecycle;
    if (first) lifecycle.onShutdownStart(() => void this.shutdown());
  }

  start(): Promise<void> {
    if (this.shuttingDown) return Promise.resolve();
    return this.listener.start();
  }

  /** Final shutdown: refuse new connections, answer what is in progress with `Shutting down`. */
  shutdown(): Promise<void> {
    this.shuttingDown = true;
    return this.listener.stop();
  }

  stop(): Promise<void> {
    return this.listener.stop();
  }

  evaluate(): ReadinessResult {
    const notReady: string[] = [];
    const reasons: string[] = [];
    const probes = this.report ? this.report.readiness() : new Map<string, ReadinessProbe[]>();
    const names = [...probes.keys()].sort();
    for (const name of names) {
      let ok = true;
      for (const probe of probes.get(name) ?? []) {
        if (this.monitor === 'until-ready' && this.once.has(probe)) continue;
        let r: true | string;
        try {
          r = probe();
        } catch (e) {
          r = (e as Error).message || 'probe failed';
        }
        if (r === true) {
          if (this.monitor === 'until-ready') this.once.add(probe);
          continue;
        }
        ok = false;
        if (r !== '') reasons.push(r.startsWith(`${name}: `) ? r : `${name}: ${r}`);
      }
      if (!ok) notReady.push(name);
    }
    return { ready: notReady.length === 0, notReady, reasons };
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== '/ready') {
      sendText(res, 404, '404 page not found\n');
      return;
    }
    if (this.shuttingDown || this.lifecycle?.shuttingDown) {
      sendText(res, 503, 'Shutting down');
      return;
    }
    const r = this.evaluate();
    if (r.ready && !this.serving) {
      sendText(res, 503, 'Starting');
      return;
    }
    if (r.ready) {
      sendText(res, 200, 'OK');
      return;
    }
    const names = r.notReady.join(',');
    this.log.info(notReadyLogLine(names));
    for (const reason of r.reasons) this.log.debug(`not ready: ${reason}`);
    sendText(res, 503, names);
  }
}
