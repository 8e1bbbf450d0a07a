/**
 * Replacing a query thread that dies (docs/multicore.md §2): at once after a one-off crash, with a
 * delay that doubles while it keeps dying soon after its start, and never after shutdown.
 */
import { describe, expect, it } from 'vitest';
import type { Flags } from '../cli/flags.js';
import { QueryThreads, restartDelay, RESTART_MAX_DELAY_MS, RESTART_STABLE_MS } from './threads.js';
import { captureLogs, type LogCapture } from '../../test/helpers/logs.js';

const STANDIN = new URL('../../test/fixtures/standin-thread.mjs', import.meta.url);
const SOURCE = { path: 'test', text: '' };

interface PoolInternals {
  pendingRestarts: Set<unknown>;
  threads: { worker: { terminate(): Promise<number> }; stopped: Promise<number> }[];
}

/**
 * A pool of one stand-in thread (test/fixtures/standin-thread.mjs) in `mode`, with the log
 * captured; `body` may change the mode for the replacements it provokes.
 */
async function withStandin(
  mode: string,
  body: (pool: QueryThreads, internals: PoolInternals, log: LogCapture) => Promise<void>,
): Promise<void> {
  process.env.CLUSTERDNS_STANDIN = mode;
  const log = captureLogs();
  try {
    const pool = new QueryThreads(1, {} as Flags, STANDIN);
    await body(pool, pool as unknown as PoolInternals, log);
  } finally {
    log.restore();
    delete process.env.CLUSTERDNS_STANDIN;
  }
}

describe('when a dead query thread is replaced', () => {
  it('at once for a first exit or one after a long life; doubling from 1 s up to 30 s while it keeps dying young', () => {
    let state = { delayMs: 0, quickExits: 0 };
    const delays: number[] = [];
    for (let i = 0; i < 9; i++) {
      state = restartDelay(state.quickExits, 200);
      delays.push(state.delayMs);
    }
    expect(delays).toEqual([0, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    expect(RESTART_MAX_DELAY_MS).toBe(30000);
    // It then served a whole minute: the next exit is a one-off again.
    expect(restartDelay(state.quickExits, RESTART_STABLE_MS)).toEqual({ delayMs: 0, quickExits: 0 });
    // A thread that never started counts as dying young.
    expect(restartDelay(1, 0)).toEqual({ delayMs: 1000, quickExits: 2 });
  });

  it('a thread that keeps dying: replaced once at once, then after 1 s; reload and scrape skip it; shutdown cancels the wait and reports success', () =>
    withStandin('die', async (pool, internals, log) => {
      await pool.start(SOURCE, {});
      await log.waitFor('starting a new one in 1s');
      expect(log.lines.filter((l) => l.includes('query thread 1 exited (7)'))).toEqual([
        expect.stringMatching(/query thread 1 exited \(7\); starting a new one$/),
        expect.stringMatching(
          /query thread 1 exited \(7\); starting a new one in 1s \(exit 2 in a row within 60s of its start\)$/,
        ),
      ]);
      expect(internals.pendingRestarts.size).toBe(1);
      // Nothing to ask a dead thread: a reload and a scrape do not wait for it.
      expect(await pool.reload(SOURCE, {})).toEqual([]);
      expect(await pool.collect()).toEqual([]);
      // The dead thread's exit code (7) is not the server's: it was logged, and nothing is left to stop.
      expect(await pool.shutdown()).toBe(0);
      expect(internals.pendingRestarts.size).toBe(0);
      expect(pool.serving).toBe(0);
    }));

  it('a replacement that cannot start is ended and retried after a delay, not left in its slot', () =>
    withStandin('serve', async (pool, internals, log) => {
      await pool.start(SOURCE, {});
      expect(pool.serving).toBe(1);
      process.env.CLUSTERDNS_STANDIN = 'fail';
      await internals.threads[0]!.worker.terminate();
      await log.waitFor('starting a new one in 1s');
      expect(log.lines.filter((l) => l.includes('query thread 1'))).toEqual([
        expect.stringMatching(/query thread 1 exited \(1\); starting a new one$/),
        expect.stringMatching(/query thread 1: listen udp 127\.0\.0\.1:53: bind: address already in use$/),
        expect.stringMatching(
          /query thread 1 exited \(1\); starting a new one in 1s \(exit 2 in a row within 60s of its start\)$/,
        ),
      ]);
      expect(pool.serving).toBe(0);
      expect(await pool.shutdown()).toBe(0);
    }));

  it('a thread that fails at start-up fails the start and is not replaced', () =>
    withStandin('fail', async (pool, internals, log) => {
      await expect(pool.start(SOURCE, {})).rejects.toThrow('address already in use');
      // It was ended; its exit replaced nothing.
      await internals.threads[0]!.stopped;
      expect(log.lines.filter((l) => l.includes('starting a new one'))).toEqual([]);
      expect(internals.pendingRestarts.size).toBe(0);
    }));
});
