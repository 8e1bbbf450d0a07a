/**
 * How many query threads the server runs by default: the CPUs the container is given, as the Go
 * runtime of CoreDNS sizes GOMAXPROCS (docs/multicore.md). The cgroup CPU quota (v2 `cpu.max`,
 * v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`, the smallest along the process's cgroup and its
 * ancestors) rounded up, at most the CPUs the process may run on (affinity).
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** Directories from `path` up to the root (`/a/b` -> `/a/b`, `/a`, `/`). */
function upwards(path: string): string[] {
  const parts = path.split('/').filter(Boolean);
  const out: string[] = [];
  for (let i = parts.length; i >= 0; i--) out.push(`/${parts.slice(0, i).join('/')}`);
  return out;
}

function readProcCgroup(): string | null {
  try {
    return readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return null;
  }
}

/**
 * The CPU quota (in CPUs, possibly fractional) of the cgroup this process runs in, or null when
 * there is none. `root` is the cgroup mount, `procCgroup` the text of `/proc/self/cgroup` (null:
 * the process sits at the root of the mount, as in a container with its own cgroup namespace).
 */
export function cgroupCpuLimit(root = '/sys/fs/cgroup', procCgroup: string | null = readProcCgroup()): number | null {
  let v2Path = '/';
  let v1Path = '/';
  for (const line of (procCgroup ?? '').split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    if (m[1] === '0' && m[2] === '') v2Path = m[3]!;
    else if (m[2]!.split(',').includes('cpu')) v1Path = m[3]!;
  }
  let limit: number | null = null;
  let found = false;
  const consider = (cpus: number | null) => {
    if (cpus !== null && cpus > 0 && (limit === null || cpus < limit)) limit = cpus;
  };
  for (const dir of upwards(v2Path)) {
    const text = read(join(root, dir, 'cpu.max'));
    if (text === undefined) continue;
    found = true;
    const [quota, period] = text.split(/\s+/);
    if (quota === 'max' || quota === undefined) continue;
    consider(Number(quota) / Number(period ?? 100000));
  }
  if (found) return limit;
  for (const dir of upwards(v1Path)) {
    const quota = read(join(root, 'cpu', dir, 'cpu.cfs_quota_us')) ?? read(join(root, 'cpu,cpuacct', dir, 'cpu.cfs_quota_us'));
    if (quota === undefined) continue;
    const period = read(join(root, 'cpu', dir, 'cpu.cfs_period_us')) ?? read(join(root, 'cpu,cpuacct', dir, 'cpu.cfs_period_us'));
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

/**
 * Several sockets on one port (`reusePort` for dgram and net) arrived in Node 22.12 / 23.1: the
 * thread mode needs it. Older runtimes keep the process workers (`-workers N`).
 */
export function reusePortSupported(version = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 12);
}

/**
 * The number of query threads (or processes) to run: `-workers N` when given (N ≥ 1), else the
 * container's CPUs where the runtime supports the thread mode, else 1. `CLUSTERDNS_CGROUP_ROOT`
 * points at another cgroup mount (tests use a fake one).
 */
export function resolveWorkers(flag: number, env: NodeJS.ProcessEnv = process.env, version = process.versions.node): number {
  if (flag > 0) return flag;
  if (!reusePortSupported(version)) return 1;
  const root = env.CLUSTERDNS_CGROUP_ROOT;
  return threadsFor(root ? cgroupCpuLimit(root, null) : cgroupCpuLimit());
}
