/**
 * The one way tests wait for something that happens asynchronously (a metric to move, a reload to
 * land, a server to answer, a socket to close): check a condition until it holds.
 *
 * The condition alone decides pass or fail. The deadline exists only so that a condition that
 * never holds fails the test with `what` in the message instead of hanging until vitest's own
 * timeout; it is generous on purpose, because the machines that run the suite are loaded and a
 * test must not pass or fail on how fast they are. The poll interval only bounds how late the
 * wait notices.
 */

export interface WaitOptions {
  /** Fail after this long (default 30 s, half of vitest's test timeout). */
  readonly timeoutMs?: number;
  /** Check again after this long (default 20 ms). */
  readonly everyMs?: number;
  /**
   * Errors the condition throws that mean "not yet" (a server not listening yet, a request that
   * timed out): they are remembered for the failure message and the condition is checked again.
   * Any other error ends the wait at once. Default: no error is retried.
   */
  readonly retry?: (err: unknown) => boolean;
}

/** A condition's result that means "not yet". */
type NotYet = undefined | null | false;

// The real clock, taken before any test can install fake timers: a wait must keep working in a
// test that fakes setTimeout or Date to drive the code under test.
const realSetTimeout = globalThis.setTimeout;
const realNow = Date.now.bind(Date);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => realSetTimeout(resolve, ms));

/**
 * Check `cond` until it returns something other than `false`, `undefined` or `null`, and return
 * that. `what` names the awaited event in the failure message (a function is called only then, to
 * describe the state at the deadline).
 */
export async function waitFor<T>(
  what: string | (() => string),
  cond: () => T | Promise<T>,
  opts: WaitOptions = {},
): Promise<Exclude<T, NotYet>> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const everyMs = opts.everyMs ?? 20;
  const deadline = realNow() + timeoutMs;
  let lastError: unknown = null;
  for (;;) {
    try {
      const v = await cond();
      if (v !== undefined && v !== null && v !== false) return v as Exclude<T, NotYet>;
    } catch (e) {
      if (!opts.retry?.(e)) throw e;
      lastError = e;
    }
    if (realNow() > deadline) {
      const described = typeof what === 'string' ? what : what();
      const last =
        lastError === null
          ? ''
          : ` (last error: ${lastError instanceof Error ? lastError.message : String(lastError)})`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${described}${last}`);
    }
    await sleep(everyMs);
  }
}

/** `retry` for a condition whose every error means "not yet" (a server still starting). */
export function anyError(): boolean {
  return true;
}

/**
 * `retry` while a process starts: any error (connection refused, a request timeout) means "not
 * yet", except one saying the process ` exited with ` a status, which ends the wait at once.
 */
export function retryUnlessExited(err: unknown): boolean {
  return !(err instanceof Error && / exited with /.test(err.message));
}
