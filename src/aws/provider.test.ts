/** The credentials cache: asked again only inside the expiry window, one fetch at a time, stale keys kept while valid. */
import { describe, expect, it } from 'vitest';
import { CachedProvider, type ExpiringCredentials } from './provider.js';

describe('CachedProvider', () => {
  it('refreshes inside the expiry window, shares one fetch, keeps valid keys when a refresh fails', async () => {
    let now = 1_000_000;
    let n = 0;
    let failing = false;
    const stale: string[] = [];
    const p = new CachedProvider(
      'Test',
      async (): Promise<ExpiringCredentials> => {
        if (failing) throw new Error('source away');
        n++;
        return { credentials: { accessKeyId: `K${n}`, secretAccessKey: 's' }, expires: now + 600_000 };
      },
      { expiryWindowMs: 300_000, now: () => now, onStale: (e) => stale.push(e.message) },
    );
    const [a, b] = await Promise.all([p.get(), p.get()]);
    expect([a.accessKeyId, b.accessKeyId, n]).toEqual(['K1', 'K1', 1]);
    now += 299_999;
    expect((await p.get()).accessKeyId).toBe('K1');
    now += 1; // expiry − window reached
    expect((await p.get()).accessKeyId).toBe('K2');
    now += 400_000;
    failing = true;
    expect((await p.get()).accessKeyId).toBe('K2');
    expect(stale).toEqual(['source away']);
    now += 200_000; // K2 expired
    await expect(p.get()).rejects.toThrow('source away');
  });
});
