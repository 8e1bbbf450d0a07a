/**
 * The background refresh of a cloud zone plugin (route53, clouddns, azure): after the first fetch
 * (which fails the start when it fails, as in CoreDNS 1.15.0), fetch again every `refresh`; a fetch
 * that fails is logged and the zones keep the last data fetched (docs/plugins.md, route53).
 */

/** A running refresh loop; `stop` ends it (a fetch in flight finishes but is not followed by another). */
export interface Refresher {
  stop(): void;
}

/**
 * Run `update` every `intervalMs` after the previous one ended (CoreDNS's timer is reset after each
 * update), reporting its failures to `failed`.
 */
export function startRefresh(
  update: (signal: AbortSignal) => Promise<void>,
  intervalMs: number,
  failed: (err: Error) => void,
): Refresher {
  const abort = new AbortController();
  let timer: NodeJS.Timeout | null = null;
  const tick = (): void => {
    timer = null;
    update(abort.signal).then(
      () => schedule(),
      (e: unknown) => {
        if (!abort.signal.aborted) failed(e instanceof Error ? e : new Error(String(e)));
        schedule();
      },
    );
  };
  const schedule = (): void => {
    if (abort.signal.aborted) return;
    timer = setTimeout(tick, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    stop() {
      abort.abort();
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}

/** Go's `time.ParseDuration` of a `refresh` value, a bare integer meaning seconds (CoreDNS's setup). */
export function refreshText(v: string): string {
  return /^[+-]?\d+$/.test(v) ? `${v}s` : v;
}
