/**
 * Reloads are serialised on a promise chain inside the Server. A reload whose own promise rejects
 * (here: a reload-result listener throws) is the caller's to handle; the chain kept for the next
 * reload must not become a second, unhandled rejection (which ends a Node process by default).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../test/helpers/server.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('reload chain', () => {
  it('a reload that rejects leaves no unhandled rejection behind, and the next reload still runs', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    cleanups.push(() => {
      process.off('unhandledRejection', onUnhandled);
    });
    const s: TestServer = await startServer('. {\n whoami\n}\n');
    cleanups.push(() => s.stop());

    const off = s.server.onReloadResult(() => {
      throw new Error('listener failed');
    });
    await expect(s.reload('. {\n whoami\n log\n}\n')).rejects.toThrow('listener failed');
    off();
    // Unhandled rejections are reported after the microtask queue drains: give it two turns.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(unhandled).toEqual([]);

    // The chain goes on: the next reload runs and succeeds.
    await expect(s.reload('. {\n whoami\n}\n')).resolves.toBe(true);
  });
});
