/**
 * The V8 heap bound the launcher (bin/clusterdns) gives the server: derived from the container's
 * cgroup memory limit so that V8 collects garbage before the kernel OOM-kills the process, even
 * when nobody passed `--max-old-space-size` (docs/operations.md, "Memory").
 *
 * V8 fixes the heap limit when the isolate is created (`v8.setFlagsFromString` after start does
 * not change `heap_size_limit`), so the launcher re-executes node with the flag.
 */
import { totalmem } from 'node:os';
import { CGROUP_ROOT, cgroupDirs, readProcCgroup, v1File, v2Files } from './cgroup.js';
import { resolveWorkers } from './cpus.js';

/** Share of the memory limit given to the V8 old space (the chart's `nodeOptions.maxOldSpacePercent`). */
export const HEAP_PERCENT = 70;
/** Heap without a cgroup limit: at most this many MiB (and at most 70 % of physical memory). */
export const DEFAULT_HEAP_MIB = 1024;
/** Never less: below this the server cannot hold a small cluster. */
export const MIN_HEAP_MIB = 32;
/** cgroup v1 reports "no limit" as a number near 2^63; anything this large is no limit. */
const NO_LIMIT = 2 ** 60;

/** A limit file's value: null for `max`, no number or a number too large to be a limit. */
function limitValue(text: string): number | null {
  if (text === 'max') return null;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0 || n >= NO_LIMIT) return null;
  return n;
}

/**
 * The memory limit in bytes of the cgroup this process runs in, or null when there is none.
 * cgroup v2: `memory.max` of the process's cgroup and its ancestors (the smallest wins); cgroup v1:
 * `memory/…/memory.limit_in_bytes` likewise. `root` is the cgroup mount (`/sys/fs/cgroup`),
 * `procCgroup` the text of `/proc/self/cgroup` (null: the process sits at the root of the mount,
 * as inside a container with its own cgroup namespace).
 */
export function cgroupMemoryLimit(root = CGROUP_ROOT, procCgroup: string | null = readProcCgroup()): number | null {
  const dirs = cgroupDirs(procCgroup, 'memory');
  let texts = v2Files(root, dirs.v2, 'memory.max');
  if (texts.length === 0) texts = dirs.v1.flatMap((dir) => v1File(root, ['memory'], dir, 'memory.limit_in_bytes') ?? []);
  let limit: number | null = null;
  for (const text of texts) {
    const n = limitValue(text);
    if (n !== null && (limit === null || n < limit)) limit = n;
  }
  return limit;
}

/** The old-space size (MiB) for a memory limit (bytes, null = none), split among `processes`. */
export function heapMiB(limitBytes: number | null, processes = 1, physicalBytes = totalmem()): number {
  const base = limitBytes ?? physicalBytes;
  let mib = Math.floor((base / 1048576) * HEAP_PERCENT / 100 / Math.max(1, processes));
  if (limitBytes === null) mib = Math.min(mib, DEFAULT_HEAP_MIB);
  return Math.max(MIN_HEAP_MIB, mib);
}

const HEAP_FLAG = /(^|\s)--max[-_]old[-_]space[-_]size(=|\s|$)/;

/** True when the operator already chose a heap size (NODE_OPTIONS or node's own arguments). */
export function heapChosen(env: NodeJS.ProcessEnv, execArgv: readonly string[]): boolean {
  return HEAP_FLAG.test(env.NODE_OPTIONS ?? '') || execArgv.some((a) => HEAP_FLAG.test(a));
}

/** `-workers N` from the command line (the processes sharing the limit), 1 when absent. */
export function workersFrom(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const m = /^--?workers(?:=(.*))?$/.exec(argv[i]!);
    if (!m) continue;
    const n = Number(m[1] ?? argv[i + 1]);
    return Number.isInteger(n) && n > 1 ? n : 1;
  }
  return 1;
}

/** `-workers N` as given: 1 when absent (the default), 0 (sized from the CPUs) for 0 or not a number. */
export function explicitWorkers(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const m = /^--?workers(?:=(.*))?$/.exec(argv[i]!);
    if (!m) continue;
    const n = Number(m[1] ?? argv[i + 1]);
    return Number.isInteger(n) && n > 0 ? n : 0;
  }
  return 1;
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
  // Query threads are isolates with a heap each (the flag bounds every one of them), as worker
  // processes are: the limit is split among them.
  const mib = heapMiB(limit, resolveWorkers(explicitWorkers(argv), env));
  return { flag: `--max-old-space-size=${mib}`, mib, limitBytes: limit, reason: limit === null ? 'no cgroup memory limit' : `cgroup memory limit ${Math.floor(limit / 1048576)} MiB` };
}
