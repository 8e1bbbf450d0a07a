/**
 * One set of metrics with worker processes (`-workers N` on Node 20, docs/multicore.md): the
 * worker whose /metrics listener a scrape reaches asks the primary, the primary asks every other
 * worker for its registry (as JSON) and hands them back, and the scrape serves the totals
 * (src/metrics/registry.ts `aggregateMetrics`). The primary only relays: it loads no metrics code.
 */
import type { Worker } from 'node:cluster';

/** How long the primary waits for a worker's metrics before answering without them. */
const WAIT_MS = 5000;

type Msg =
  | { readonly clusterdns: 'scrape'; readonly id: number }
  | { readonly clusterdns: 'collect'; readonly id: number }
  | { readonly clusterdns: 'metrics'; readonly id: number; readonly data: unknown }
  | { readonly clusterdns: 'scraped'; readonly id: number; readonly data: unknown[] };

function isMsg(m: unknown): m is Msg {
  return typeof m === 'object' && m !== null && typeof (m as { clusterdns?: unknown }).clusterdns === 'string';
}

/** Primary: relay scrapes among `workers()`. */
export function relayScrapes(workers: () => Worker[], on: (fn: (worker: Worker, m: unknown) => void) => void): void {
  let next = 1;
  const pending = new Map<number, (data: unknown) => void>();
  on((worker, m) => {
    if (!isMsg(m)) return;
    if (m.clusterdns === 'metrics') {
      pending.get(m.id)?.(m.data);
      return;
    }
    if (m.clusterdns !== 'scrape') return;
    const others = workers().filter((w) => w !== worker && w.isConnected());
    void Promise.all(
      others.map(
        (w) =>
          new Promise<unknown>((resolve) => {
            const id = next++;
            const timer = setTimeout(() => done(null), WAIT_MS);
            const done = (data: unknown): void => {
              clearTimeout(timer);
              pending.delete(id);
              resolve(data);
            };
            pending.set(id, done);
            w.once('exit', () => done(null));
            w.send({ clusterdns: 'collect', id } satisfies Msg);
          }),
      ),
    ).then((data) => {
      if (worker.isConnected()) worker.send({ clusterdns: 'scraped', id: m.id, data: data.filter((d) => d !== null) } satisfies Msg);
    });
  });
}

/**
 * Worker: answer the primary's `collect` with `own()`, and return the gather function for the
 * registry (the other workers' metrics, through the primary).
 */
export function workerGather<T>(own: () => Promise<T>): () => Promise<T[]> {
  let next = 1;
  const pending = new Map<number, (data: T[]) => void>();
  process.on('message', (m: unknown) => {
    if (!isMsg(m)) return;
    if (m.clusterdns === 'collect') {
      void own().then((data) => process.send?.({ clusterdns: 'metrics', id: m.id, data } satisfies Msg));
    } else if (m.clusterdns === 'scraped') {
      pending.get(m.id)?.(m.data as T[]);
      pending.delete(m.id);
    }
  });
  return () =>
    new Promise<T[]>((resolve) => {
      const id = next++;
      // The primary answers within its own wait; a primary gone answers nothing: serve our own.
      const timer = setTimeout(() => {
        pending.delete(id);
        resolve([]);
      }, WAIT_MS * 2);
      pending.set(id, (data) => {
        clearTimeout(timer);
        resolve(data);
      });
      process.send?.({ clusterdns: 'scrape', id } satisfies Msg);
    });
}
