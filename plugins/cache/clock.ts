/**
 * The cache's clock (milliseconds). Tests replace `now` to age entries without sleeping; the
 * server never changes it.
 */
export const cacheClock = {
  now: (): number => Date.now(),
};

/** Run with the clock advanced by `ms` from now on (tests). Returns a function restoring it. */
export function advanceCacheClock(ms: number): () => void {
  const prev = cacheClock.now;
  cacheClock.now = () => prev() + ms;
  return () => {
    cacheClock.now = prev;
  };
}
