/**
 * The reload loop (docs/plugins.md, reload). Process-wide: the blocks of one configuration instance
 * share one loop whose INTERVAL/JITTER are the last ones configured; the loop starts when the
 * instance serves and stops when it is replaced or the process stops. Every period it re-reads
 * and re-hashes the configuration; on a changed hash it remembers the new hash, publishes
 * `coredns_reload_version_info` and asks the core for a graceful reload.
 *
 * Failure counting (`coredns_reload_failed_total`) happens exactly once per failed reload attempt,
 * whoever triggered it (this loop or SIGUSR1): the plugin subscribes once per process to the core's
 * `onReloadResult` (never unsubscribed, so SIGUSR1 failures count even after `reload` is removed
 * from the file). Should a core's `reload()` fail without notifying (e.g. throw), the loop counts
 * the failure of the reload it triggered itself. That per-process state lives in `ReloadProcess`,
 * kept for the process (`ProcessState.keep`).
 */
import { ConfigError } from '../../src/corefile/types.js';
import type { Logger } from '../../src/log.js';
import type { Lifecycle, ProcessState } from '../../src/plugin.js';
import { hashConfigFile } from './hash.js';
import { reloadFailed, setVersionInfo } from './metrics.js';
import { pickPeriod, type ReloadConfig } from './setup.js';

/** The reload plugin's state for the life of the process. */
export class ReloadProcess {
  /** Reload outcomes seen (by any path). */
  recorded = 0;
  /** The last failure's error. */
  lastError: Error | null = null;
  /** The loop of the configuration being set up (see `loopForSetup`). */
  current: ReloadLoop | null = null;
  private subscribed = false;

  constructor(private readonly lifecycle: Lifecycle) {}

  /** Record the outcome of one reload attempt (from the core's `onReloadResult`, once per attempt). */
  record(ok: boolean, error: Error | null = null): void {
    this.recorded++;
    if (!ok) {
      reloadFailed.inc();
      this.lastError = error;
    }
  }

  /** Count every reload outcome from now on (once per process). */
  subscribe(): void {
    if (this.subscribed) return;
    this.subscribed = true;
    this.lifecycle.onReloadResult((ok, error) => this.record(ok, error));
  }
}

/** The reload plugin's per-process state, kept for the process. */
export function reloadProcess(services: ReloadServices): ReloadProcess {
  return services.processState.keep('reload', () => new ReloadProcess(services.lifecycle));
}

/** What of the server the reload plugin uses: its reloads, and the process's state. */
export interface ReloadServices {
  readonly lifecycle: Lifecycle;
  readonly processState: ProcessState;
}

/** Sources of configuration that cannot be read again. */
function rereadable(path: string): boolean {
  return path !== 'stdin' && path !== '<default>' && path !== '';
}

export interface LoopDeps {
  readonly services: ReloadServices;
  readonly log: Logger;
  readonly corefilePath: string;
  readonly hash?: (path: string) => Promise<{ hash: string }>;
  readonly random?: () => number;
}

/** The loop of one configuration instance. */
export class ReloadLoop {
  cfg: ReloadConfig;
  started = false;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private hash: string | null = null;
  private periodMs = 0;
  private deps: LoopDeps | null = null;
  /** Resolves when the tick in progress (if any) is done; for tests and orderly stop. */
  private running: Promise<void> = Promise.resolve();

  constructor(cfg: ReloadConfig) {
    this.cfg = cfg;
  }

  get period(): number {
    return this.periodMs;
  }

  get currentHash(): string | null {
    return this.hash;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Start checking (once): hash the running configuration, log it, schedule the first check. */
  async start(deps: LoopDeps): Promise<void> {
    if (this.started) return;
    this.started = true;
    reloadProcess(deps.services).subscribe();
    if (!rereadable(deps.corefilePath)) {
      deps.log.debug(`configuration from ${deps.corefilePath} cannot be re-read; not checking for changes`);
      return;
    }
    this.deps = deps;
    this.periodMs = pickPeriod(this.cfg, deps.random);
    try {
      this.hash = (await this.hashNow()).hash;
      deps.log.info(`Running configuration SHA512 = ${this.hash}\n`); // the newline is CoreDNS's (kept in -log-format json)
    } catch (e) {
      deps.log.warning(`Corefile parse failed: ${(e as Error).message}`);
    }
    this.schedule();
  }

  /**
   * Stop checking. Does not wait for a check in progress: that check may itself be waiting for the
   * reload that is shutting this instance down.
   */
  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  /** One check (also what the timer runs). */
  check(): Promise<void> {
    const p = this.running.then(() => this.tick());
    this.running = p;
    return p;
  }

  private hashNow(): Promise<{ hash: string }> {
    const deps = this.deps!;
    return (deps.hash ?? hashConfigFile)(deps.corefilePath);
  }

  private schedule(): void {
    if (this.stopped || this.periodMs <= 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.check().then(() => this.schedule());
    }, this.periodMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.deps === null || this.deps.services.lifecycle.shuttingDown) return;
    const { services, log } = this.deps;
    const { lifecycle } = services;
    let next: string;
    try {
      next = (await this.hashNow()).hash;
    } catch (e) {
      log.warning(`Corefile parse failed: ${(e as Error).message}`);
      return;
    }
    // No reloads once final shutdown has started (the core would refuse them anyway).
    if (this.stopped || lifecycle.shuttingDown || next === this.hash) return;
    // Remember the new hash first: a broken file is not retried until it changes again.
    this.hash = next;
    setVersionInfo(next);
    const state = reloadProcess(services);
    const before = state.recorded;
    let ok: boolean;
    let error: Error | null = null;
    try {
      ok = await lifecycle.reload('reload plugin');
    } catch (e) {
      ok = false;
      error = e as Error;
    }
    if (ok) return; // the new instance runs its own loop; this one is stopped by its shutdown hook
    if (state.recorded === before) state.record(false, error);
    log.error(`Corefile changed but reload failed: ${restartFailureText(error ?? state.lastError)}`);
  }
}

/**
 * The error text of a failed reload as CoreDNS words it in this line: Caddy's `Restart` wraps the
 * start-up error as `starting with listener file descriptors: <error>`.
 */
export function restartFailureText(e: Error | null): string {
  const text = e instanceof AggregateError ? e.errors.map((x: unknown) => describe(x)).join('; ') : describe(e);
  return `starting with listener file descriptors: ${text}`;
}

function describe(e: unknown): string {
  if (e instanceof ConfigError) return e.describe();
  if (e instanceof Error) return e.message;
  return 'restart failed';
}

/**
 * The loop of the configuration being set up: a new one for each (re)load, shared by the blocks
 * of that load; each `reload` directive overwrites its settings (the last one wins).
 */
export function loopForSetup(services: ReloadServices, cfg: ReloadConfig): ReloadLoop {
  const state = reloadProcess(services);
  const current = state.current;
  if (current === null || current.started || current.isStopped) state.current = new ReloadLoop(cfg);
  else current.cfg = cfg;
  return state.current!;
}
