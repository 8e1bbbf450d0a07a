/**
 * Replacing a query thread that dies (docs/multicore.md §2): at once after a one-off crash, with a
 * delay that doubles while it keeps dying soon after its start, and never after shutdown.
 */
import { describe, expect, it } from 'vitest';
import type { Flags } from '../../src/cli/flags.js';
import { setLogSink } from '../../src/log.js';
import { QueryThreads, restartDelay, RESTART_MAX_DELAY_MS, RESTART_STABLE_MS } from '../../src/server/threads.js';

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

  it('a thread that keeps dying: replaced once at once, then after 1 s; shutdown cancels the wait and reports success', async () => {
    const lines: string[] = [];
    let secondExit!: () => void;
    const waitingLine = new Promise<void>((resolve) => (secondExit = resolve));
    const old = setLogSink((line) => {
      lines.push(line);
      if (line.includes('starting a new one in 1s')) secondExit();
    });
    try {
      const pool = new QueryThreads(1, {} as Flags, new URL('../fixtures/dying-thread.mjs', import.meta.url));
      await pool.start({ path: 'test', text: '' }, {});
      await waitingLine;
      const exits = lines.filter((l) => l.includes('query thread 1 exited (7)'));
      expect(exits).toEqual([
        expect.stringMatching(/query thread 1 exited \(7\); starting a new one$/),
        expect.stringMatching(/query thread 1 exited \(7\); starting a new one in 1s \(exit 2 in a row within 60s of its start\)$/),
      ]);
      const pending = (pool as unknown as { pendingRestarts: Set<unknown> }).pendingRestarts;
      expect(pending.size).toBe(1);
      // The dead thread's exit code (7) is not the server's: it was logged, and nothing is left to stop.
      expect(await pool.shutdown()).toBe(0);
      expect(pending.size).toBe(0);
      expect(pool.serving).toBe(0);
    } finally {
      setLogSink(old);
    }
  });
});
