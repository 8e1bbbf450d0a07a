/**
 * The main thread's query threads (docs/multicore.md). The main thread serves DNS like any
 * thread and also owns what exists once per pod: the watches (it offers their index to the
 * threads through the ReplicationHub), the HTTP side listeners, signals and reloads. This pool
 * starts the other threads on the ports the main thread bound, sends them every reload, gathers
 * their metrics for a scrape, stops them at shutdown and replaces one that dies.
 */
import { Worker } from 'node:worker_threads';
import type { Flags } from '../cli/flags.js';
import { coreLog } from '../log.js';
import type { MetricsJson } from '../metrics/registry.js';
import type { ConfigSource } from './instance.js';
import { ReplicationHub } from './replication.js';
import { THREAD_HEAP_MIB } from '../util/cpus.js';
import { releaseHeapFlags } from './thread-heap.js';
import { parseFromThread, type FromThread, type ThreadData, type ToThread } from './threads-protocol.js';

/** How long a scrape waits for a thread's metrics before serving without them. */
const METRICS_WAIT_MS = 5000;
/** How long a reload waits for a query thread to run the new configuration before replacing it. */
const RELOAD_WAIT_MS = 120_000;

/** A thread that served this long before it died is replaced at once (its crash was a one-off). */
export const RESTART_STABLE_MS = 60_000;
/** The first delay before replacing a thread that keeps dying; it doubles up to the largest. */
export const RESTART_FIRST_DELAY_MS = 1000;
/** The largest delay before replacing a thread that keeps dying. */
export const RESTART_MAX_DELAY_MS = 30_000;

/**
 * When to replace a thread that exited: at once if it had served for RESTART_STABLE_MS (or it is
 * the first exit), else after a delay that doubles with every quick exit in a row, up to
 * RESTART_MAX_DELAY_MS. A thread that cannot start or keeps dying (its heap bound, a bug) then
 * costs a start every 30 s instead of a start loop that takes a core and floods the log; the
 * other threads keep serving meanwhile. `quickExits` is the count before this exit.
 */
export function restartDelay(quickExits: number, servedMs: number): { delayMs: number; quickExits: number } {
  if (servedMs >= RESTART_STABLE_MS) return { delayMs: 0, quickExits: 0 };
  const n = quickExits + 1;
  if (n === 1) return { delayMs: 0, quickExits: n };
  return { delayMs: Math.min(RESTART_MAX_DELAY_MS, RESTART_FIRST_DELAY_MS * 2 ** (n - 2)), quickExits: n };
}

interface Thread {
  readonly index: number;
  worker: Worker;
  /** Set once the thread has been asked to stop (its exit is then expected). */
  stopping: boolean;
  /** It exited (a replacement may be waiting for its delay): nothing to ask it any more. */
  exited: boolean;
  stopped: Promise<number>;
}

export class QueryThreads {
  readonly hub = new ReplicationHub();
  private readonly threads: Thread[] = [];
  private source: ConfigSource | null = null;
  private ports: Readonly<Record<string, number>> = {};
  private nextId = 1;
  private readonly waiting = new Map<number, (m: FromThread) => void>();
  private shuttingDown = false;
  /** start() succeeded: from then on a thread that exits is replaced (before, its exit fails the start). */
  private running = false;
  private started = 0;
  /** Per thread index: quick exits in a row (restartDelay). */
  private readonly quickExits = new Map<number, number>();
  /** Replacements waiting for their delay (cancelled by shutdown). */
  private readonly pendingRestarts = new Set<NodeJS.Timeout>();

  constructor(
    /** Threads beside the main thread. */
    readonly count: number,
    private readonly flags: Flags,
    /** The thread's module (a test gives a stand-in that starts and dies). */
    private readonly entry: URL = new URL('./thread-entry.js', import.meta.url),
  ) {}

  /** shutdown() was called. */
  get stopping(): boolean {
    return this.shuttingDown;
  }

  /** Threads that started and have not exited. */
  get serving(): number {
    return this.started;
  }

  /** Start every thread; rejects with the first thread's start-up error. */
  async start(source: ConfigSource, ports: Readonly<Record<string, number>>): Promise<void> {
    this.source = source;
    this.ports = ports;
    // The launcher's --max-old-space-size is the main thread's bound: cleared here, or V8 would
    // give it to every thread instead of THREAD_HEAP_MIB (src/server/thread-heap.ts).
    releaseHeapFlags();
    const starts: Promise<void>[] = [];
    for (let i = 1; i <= this.count; i++) starts.push(this.spawn(i));
    await Promise.all(starts);
    this.running = true;
  }

  private spawn(index: number): Promise<void> {
    const data: ThreadData = {
      clusterdnsQueryThread: true,
      index,
      flags: this.flags,
      source: this.source!,
      ports: this.ports,
    };
    // A thread's heap holds code and answers, not the index (the main thread's, shared): a bound of
    // its own keeps a runaway thread from taking the main thread's room; one that reaches it is
    // restarted like any thread that dies (docs/multicore.md §4). It applies because start()
    // cleared the process-wide heap flags first.
    const worker = new Worker(this.entry, {
      workerData: data,
      resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MIB },
    });
    let settle: ((e: Error | null) => void) | null = null;
    const started = new Promise<void>((resolve, reject) => {
      settle = (e) => {
        settle = null;
        if (e) reject(e);
        else resolve();
      };
    });
    let stoppedCode: number | null = null;
    // After `stopped` the pool terminates the thread (exit code 1): its own shutdown code counts.
    const stopped = new Promise<number>((resolve) => worker.once('exit', (code) => resolve(stoppedCode ?? code)));
    const thread: Thread = { index, worker, stopping: false, exited: false, stopped };
    const existing = this.threads.findIndex((t) => t.index === index);
    if (existing >= 0) this.threads[existing] = thread;
    else this.threads.push(thread);
    let up = false;
    let upSince = 0;
    const peer = { postMessage: (m: ToThread) => worker.postMessage(m) };
    worker.on('message', (raw: unknown) => {
      let m: FromThread;
      try {
        m = parseFromThread(raw);
      } catch (e) {
        // Both sides run the same build: a bug, logged; the main thread keeps serving.
        coreLog.error(`query thread ${index}: ${e instanceof Error ? e.message : String(e)}`);
        return;
      }
      switch (m.t) {
        case 'sub':
        case 'unsub':
        case 'ask':
        case 'req':
        case 'applied':
          this.hub.handle(peer, m);
          return;
        case 'started':
          up = true;
          upSince = Date.now();
          this.started++;
          settle?.(null);
          return;
        case 'failed':
          settle?.(new Error(m.error));
          // Its listener would keep it alive and its slot empty: end it, so that a replacement
          // that cannot start is retried like one that dies (restartDelay).
          void worker.terminate();
          return;
        case 'stopped':
          stoppedCode = m.code;
          thread.stopping = true;
          void worker.terminate();
          return;
        case 'reloaded':
        case 'metrics':
          this.waiting.get(m.id)?.(m);
          return;
      }
    });
    worker.on('error', (e) => {
      coreLog.error(`query thread ${index}: ${e.message}`);
      settle?.(e);
    });
    worker.once('exit', (code) => {
      thread.exited = true;
      this.hub.forget(peer);
      if (up) this.started--;
      settle?.(new Error(`query thread ${index} exited (${code}) while starting`));
      if (thread.stopping || this.shuttingDown || !this.running) return;
      // A thread that dies while serving is replaced; its sockets closed with it.
      const next = restartDelay(this.quickExits.get(index) ?? 0, up ? Date.now() - upSince : 0);
      this.quickExits.set(index, next.quickExits);
      const respawn = (): void => {
        this.spawn(index).catch((e: unknown) => coreLog.error(`query thread ${index}: ${(e as Error).message}`));
      };
      if (next.delayMs === 0) {
        coreLog.error(`query thread ${index} exited (${code}); starting a new one`);
        respawn();
        return;
      }
      coreLog.error(
        `query thread ${index} exited (${code}); starting a new one in ${next.delayMs / 1000}s (exit ${next.quickExits} in a row within ${RESTART_STABLE_MS / 1000}s of its start)`,
      );
      const timer = setTimeout(() => {
        this.pendingRestarts.delete(timer);
        if (!this.shuttingDown) respawn();
      }, next.delayMs);
      this.pendingRestarts.add(timer);
    });
    return started;
  }

  private request(thread: Thread, make: (id: number) => ToThread, waitMs: number | null): Promise<FromThread | null> {
    // An exited worker will not answer, nor emit 'exit' again.
    if (thread.exited) return Promise.resolve(null);
    const id = this.nextId++;
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | null = null;
      const done = (m: FromThread | null): void => {
        if (timer) clearTimeout(timer);
        this.waiting.delete(id);
        thread.worker.off('exit', gone);
        resolve(m);
      };
      const gone = (): void => done(null);
      this.waiting.set(id, done);
      thread.worker.once('exit', gone);
      if (waitMs !== null) timer = setTimeout(() => done(null), waitMs);
      thread.worker.postMessage(make(id));
    });
  }

  /** Every thread loads `source` (after the main thread did); resolves to each thread's error or null. */
  async reload(source: ConfigSource, ports: Readonly<Record<string, number>>): Promise<(string | null)[]> {
    this.source = source;
    this.ports = ports;
    // A thread waiting to be replaced is skipped: its replacement starts with `source`.
    const live = this.threads.filter((t) => !t.exited);
    const replies = await Promise.all(
      live.map(async (t) => {
        const r = await this.request(t, (id) => ({ t: 'reload', id, source, ports }), RELOAD_WAIT_MS);
        if (r !== null || t.exited) return r;
        // No answer in time: a thread stuck in its reload (or in a start that never ends) would
        // hold this reload, and every later one, for ever. It is ended; the pool starts it again
        // from `source`.
        void t.worker.terminate();
        return {
          t: 'reloaded',
          id: -1,
          error: `no answer within ${RELOAD_WAIT_MS / 1000}s; the thread is replaced`,
        } as const;
      }),
    );
    const errors = replies.map((r) => (r && r.t === 'reloaded' ? r.error : 'query thread gone'));
    errors.forEach((e, i) => {
      if (e) coreLog.error(`query thread ${live[i]!.index}: reload failed: ${e}`);
    });
    return errors;
  }

  /** Every thread's metrics (those that answer within METRICS_WAIT_MS). */
  async collect(): Promise<MetricsJson[]> {
    const replies = await Promise.all(
      this.threads
        .filter((t) => !t.exited)
        .map((t) => this.request(t, (id) => ({ t: 'metrics', id }), METRICS_WAIT_MS)),
    );
    return replies.flatMap((r) => (r && r.t === 'metrics' ? [r.data] : []));
  }

  /** Stop every thread (each runs its final shutdown: lameduck, drain); resolves to the worst exit code. */
  async shutdown(): Promise<number> {
    this.shuttingDown = true;
    for (const timer of this.pendingRestarts) clearTimeout(timer);
    this.pendingRestarts.clear();
    // A thread that died and was not replaced yet has nothing left to stop; its crash was logged.
    const live = this.threads.filter((t) => !t.exited);
    for (const t of live) t.worker.postMessage({ t: 'shutdown' } satisfies ToThread);
    const codes = await Promise.all(live.map((t) => t.stopped));
    return Math.max(0, ...codes);
  }
}
