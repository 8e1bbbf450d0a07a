/**
 * Each thread's V8 heap bound: made to apply to the query threads, and shown to operators
 * (docs/multicore.md §4, "Heap").
 *
 * `--max-old-space-size` and `--max-heap-size` are process-wide V8 flags. Once one is set (by the
 * launcher, bin/clusterdns, or an operator's NODE_OPTIONS), V8 sizes every isolate the process
 * creates from it and ignores the `resourceLimits` a Worker asks for (nodejs/node#43991): each
 * query thread got the main thread's bound, so N threads could grow to N times it. The main
 * thread's isolate is sized when it is created and keeps its bound when the flags change later;
 * clearing them before the first query thread starts makes every thread's isolate take its own
 * `resourceLimits`. Measured on Node 24.21.0, a Worker asking for 64 MiB: with the main thread
 * started with --max-semi-space-size=2 --max-old-space-size=300 (as the launcher starts it) its
 * heap_size_limit was 306 MiB, the main thread's; with the flags cleared first, 70 MiB (64 MiB
 * old space and 3 × 2 MiB of young generation). Giving the Worker an `execArgv` without the flag
 * changes nothing (main started with only --max-old-space-size=300: 492 MiB either way, the
 * main thread's). After the clearing the main thread still runs out of memory at its own bound.
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { gauge } from '../metrics/registry.js';

/** Clears the process-wide heap flags so that the next isolates take their Worker's resourceLimits. */
export function releaseHeapFlags(): void {
  setFlagsFromString('--max-old-space-size=0');
  setFlagsFromString('--max-heap-size=0');
}

/**
 * `clusterdns_thread_heap_size_limit_bytes{thread}`: this isolate's `heap_size_limit` (old space
 * plus young generation) as V8 applies it, read inside the thread; thread "0" is the main thread.
 * A scrape shows every thread's own line (docs/multicore.md §3).
 */
export function registerHeapLimit(thread: number): void {
  gauge({
    name: 'clusterdns_thread_heap_size_limit_bytes',
    help: "Each thread's V8 heap size limit as it applies inside the thread (thread 0 is the main thread).",
    labelNames: ['thread'],
  })
    .labels(String(thread))
    .set(getHeapStatistics().heap_size_limit);
}
