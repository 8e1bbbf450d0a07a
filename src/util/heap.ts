/**
 * The V8 heap bound the launcher (bin/clusterdns) gives the server: derived from the container's
 * cgroup memory limit so that V8 collects garbage before the kernel OOM-kills the process, even
 * when nobody passed `--max-old-space-size` (docs/operations.md, "Memory").
 *
 * V8 fixes the heap limit when the isolate is created (`v8.setFlagsFromString` after start does
 * not change `heap_size_limit`), so the launcher re-executes node with the flag.
 */
import { totalmem } from 'node:os';
import { cgroupMemoryLimit } from './cgroup.js';
import { MiB, resolveWorkers, THREAD_HEAP_MIB } from './cpus.js';

export { cgroupMemoryLimit };

/** Share of the memory limit given to the V8 old space (the chart's `nodeOptions.maxOldSpacePercent`). */
export const HEAP_PERCENT = 70;
/** Heap without a cgroup limit: at most this many MiB (and at most 70 % of physical memory). */
export const DEFAULT_HEAP_MIB = 1024;
/** Never less: below this the server cannot hold a small cluster. */
export const MIN_HEAP_MIB = 32;
/** The old-space size (MiB) for a memory limit (bytes, null = none). */
export function heapMiB(limitBytes: number | null, physicalBytes = totalmem()): number {
  const base = limitBytes ?? physicalBytes;
  let mib = Math.floor(((base / MiB) * HEAP_PERCENT) / 100);
  if (limitBytes === null) mib = Math.min(mib, DEFAULT_HEAP_MIB);
  return Math.max(MIN_HEAP_MIB, mib);
}

const HEAP_FLAG = /(^|\s)--max[-_]old[-_]space[-_]size(=|\s|$)/;

/** True when the operator already chose a heap size (NODE_OPTIONS or node's own arguments). */
export function heapChosen(env: NodeJS.ProcessEnv, execArgv: readonly string[]): boolean {
  return HEAP_FLAG.test(env.NODE_OPTIONS ?? '') || execArgv.some((a) => HEAP_FLAG.test(a));
}

/** `-workers N` as given: 0 (sized from the container, the default) when absent, 0 or not a number. */
export function explicitWorkers(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const m = /^--?workers(?:=(.*))?$/.exec(argv[i]!);
    if (!m) continue;
    const n = Number(m[1] ?? argv[i + 1]);
    return Number.isInteger(n) && n > 0 ? n : 0;
  }
  return 0;
}

export interface HeapPlan {
  /** The flag to re-execute node with, or null to run as is. */
  flag: string | null;
  mib: number | null;
  limitBytes: number | null;
  reason: string;
}

/**
 * What the launcher does. `CLUSTERDNS_CGROUP_ROOT` points at another cgroup mount (tests use a
 * fake one; the process is then taken to sit at its root).
 */
export function heapPlan(env: NodeJS.ProcessEnv, execArgv: readonly string[], argv: readonly string[]): HeapPlan {
  if (heapChosen(env, execArgv)) return { flag: null, mib: null, limitBytes: null, reason: 'set by the operator' };
  const root = env.CLUSTERDNS_CGROUP_ROOT;
  const limit = root ? cgroupMemoryLimit(root, null) : cgroupMemoryLimit();
  // Query threads hold no index (it is the main thread's, shared): each thread's isolate is
  // bounded by THREAD_HEAP_MIB (src/server/threads.ts), and the main thread's bound is the usual
  // share of what the threads leave of the limit, so that every bound together stays inside it.
  const workers = resolveWorkers(explicitWorkers(argv), env);
  const mainLimit = limit !== null ? Math.max(0, limit - (workers - 1) * THREAD_HEAP_MIB * MiB) : limit;
  const mib = heapMiB(mainLimit);
  return {
    flag: `--max-old-space-size=${mib}`,
    mib,
    limitBytes: limit,
    reason: limit === null ? 'no cgroup memory limit' : `cgroup memory limit ${Math.floor(limit / MiB)} MiB`,
  };
}
