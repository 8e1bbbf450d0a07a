/**
 * Forwarding-loop detection (docs/plugins.md, loop): after the server starts serving, send
 * `<r1>.<r2>.<zone> IN HINFO` to the block's own listener; if that probe comes back through the
 * chain more than twice, the server is forwarding to itself.
 */
import { randomBytes } from 'node:crypto';
import { Qtype } from '../../src/dns/constants.js';
import type { Logger } from '../../src/log.js';
import { udpExchange } from '../../src/dns/client.js';
import { buildQuery } from '../../src/dns/encode.js';

/** How the process ends on a detected loop; tests replace it. */
export const loopHooks = {
  exit: (code: number): void => {
    process.exit(code);
  },
};

const PROBE_TIMEOUT_MS = 2000;
const RETRY_DELAY_MS = 1000;
const PROBE_BUDGET_MS = 30_000;

/** A random non-negative integer below 2^62, in decimal. */
export function random62(): string {
  return (randomBytes(8).readBigUInt64BE() & ((1n << 62n) - 1n)).toString();
}

export class LoopState {
  /** Lower-cased probe name, absolute. */
  readonly qname: string;
  private count = 0;
  private disabledFlag = false;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  /** The probe in flight, aborted by stop(). */
  private probe: AbortController | null = null;

  constructor(
    readonly zone: string,
    private readonly log: Logger,
  ) {
    this.qname = `${random62()}.${random62()}.${zone === '.' ? '' : zone}`;
  }

  get disabled(): boolean {
    return this.disabledFlag;
  }

  get seen(): number {
    return this.count;
  }

  /** Count a probe seen in the chain; true when the loop threshold is crossed. */
  inc(): boolean {
    this.count++;
    return this.count > 2;
  }

  /** Log the fatal line and end the process (CoreDNS `log.Fatalf`). */
  fatal(from: string, to: string): void {
    this.log.raw(
      'FATAL',
      `plugin/loop: Loop (${from} -> ${to}) detected for zone "${this.zone}", see https://coredns.io/plugins/loop#troubleshooting. Query: "HINFO ${this.qname}"`,
    );
    loopHooks.exit(1);
  }

  /**
   * Probe `host:port` in the background: retry failed exchanges after 1 s for up to 30 s, and
   * disable detection once any reply arrived or the time is up.
   */
  start(host: string, port: number): void {
    const deadline = Date.now() + PROBE_BUDGET_MS;
    const attempt = (): void => {
      if (this.stopped || this.disabledFlag) return;
      if (Date.now() >= deadline) {
        this.disable();
        return;
      }
      this.exchange(host, port).then(
        () => this.disable(),
        () => {
          this.count = 0;
          if (this.stopped) return;
          this.timer = setTimeout(attempt, RETRY_DELAY_MS);
          this.timer.unref();
        },
      );
    };
    attempt();
  }

  /** One probe: the HINFO query to the server itself; resolves once a reply with its ID came back. */
  private async exchange(host: string, port: number): Promise<void> {
    const abort = new AbortController();
    this.probe = abort;
    try {
      await udpExchange(buildQuery(this.qname, Qtype.HINFO, true), {
        host,
        port,
        timeoutMs: PROBE_TIMEOUT_MS,
        signal: abort.signal,
        matchId: true,
      });
    } finally {
      if (this.probe === abort) this.probe = null;
    }
  }

  disable(): void {
    this.disabledFlag = true;
  }

  stop(): void {
    this.stopped = true;
    this.disabledFlag = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.probe?.abort();
    this.probe = null;
  }
}
