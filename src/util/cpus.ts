/**
 * How many query threads the server runs when `-workers` is absent or 0 (docs/multicore.md §4):
 * the CPUs the container is given, as the Go runtime of CoreDNS sizes GOMAXPROCS — the cgroup CPU
 * quota (v2 `cpu.max`, v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`, the smallest along the
 * process's cgroup and its ancestors) rounded up, at most the CPUs the process may run on
 * (affinity) — and no more than the container's memory limit leaves room for.
 */
import { availableParallelism } from 'node:os';
import { CGROUP_ROOT, cgroupDirs, cgroupMemoryLimit, readProcCgroup, v1File, v2Files } from './cgroup.js';

export const MiB = 1048576;
/**
 * Memory kept for the main thread before a second thread is started: the node binary, the index,
 * a list page being parsed (docs/multicore.md §4). Measured at 10,000 Services: 94 MiB after sync.
 */
export const MAIN_RESERVE_MIB = 160;
/**
 * Old-space bound of a query thread's isolate, and the room each further thread is given in the
 * memory limit. Its heap holds code (about 10 MiB) and answers, not the index: 26 MiB after
 * answering 10,000 names, about 70 MiB with its answer cache full (100,000 NXDOMAIN answers).
 */
export const THREAD_HEAP_MIB = 96;

const V1_CPU_MOUNTS = ['cpu', 'cpu,cpuacct'];

/**
 * The CPU quota (in CPUs, possibly fractional) of the cgroup this process runs in, or null when
 * there is none. `root` is the cgroup mount, `procCgroup` the text of `/proc/self/cgroup` (null:
 * the process sits at the root of the mount, as in a container with its own cgroup namespace).
 */
export function cgroupCpuLimit(root = CGROUP_ROOT, procCgroup: string | null = readProcCgroup()): number | null {
  const dirs = cgroupDirs(procCgroup, 'cpu');
  let limit: number | null = null;
  const consider = (cpus: number | null) => {
    if (cpus !== null && cpus > 0 && (limit === null || cpus < limit)) limit = cpus;
  };
  const v2 = v2Files(root, dirs.v2, 'cpu.max');
  for (const text of v2) {
    const [quota, period] = text.split(/\s+/);
    if (quota === 'max' || quota === undefined) continue;
    consider(Number(quota) / Number(period ?? 100000));
  }
  if (v2.length > 0) return limit;
  for (const dir of dirs.v1) {
    const quota = v1File(root, V1_CPU_MOUNTS, dir, 'cpu.cfs_quota_us');
    if (quota === undefined) continue;
    const period = v1File(root, V1_CPU_MOUNTS, dir, 'cpu.cfs_period_us');
    const q = Number(quota);
    if (!Number.isFinite(q) || q <= 0) continue; // -1: no quota
    consider(q / Number(period ?? 100000));
  }
  return limit;
}

/** Query threads for a quota (CPUs, null = none) on a machine where `cpus` are usable: at least 1. */
export function threadsFor(limit: number | null, cpus = availableParallelism()): number {
  const n = limit === null ? cpus : Math.min(cpus, Math.ceil(limit - 1e-9));
  return Math.max(1, n);
}

/** Query threads a memory limit (bytes, null = none) leaves room for: at least 1. */
export function threadsForMemory(limitBytes: number | null): number {
  if (limitBytes === null) return Number.POSITIVE_INFINITY;
  return Math.max(1, 1 + Math.floor((limitBytes / MiB - MAIN_RESERVE_MIB) / THREAD_HEAP_MIB));
}

/**
 * The number of query threads to run: `-workers N` when given (N ≥ 1); else (absent or 0) the
 * container's CPUs, capped by its memory limit. `CLUSTERDNS_CGROUP_ROOT` points at another cgroup
 * mount (tests use a fake one).
 */
export function resolveWorkers(flag: number, env: NodeJS.ProcessEnv = process.env): number {
  if (flag > 0) return flag;
  const root = env.CLUSTERDNS_CGROUP_ROOT;
  const cpu = threadsFor(root ? cgroupCpuLimit(root, null) : cgroupCpuLimit());
  return Math.min(cpu, threadsForMemory(root ? cgroupMemoryLimit(root, null) : cgroupMemoryLimit()));
}
