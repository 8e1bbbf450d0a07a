/**
 * Reading the process's cgroup limits (cgroup v2 and v1), shared by the CPU quota (`cpus.ts`,
 * query threads) and the memory limit (`heap.ts`, the launcher's heap bound). A limit is looked up
 * in the process's own cgroup and in each of its ancestors (the smallest wins); v2 files take
 * precedence, v1 is read only when no v2 file exists along the path.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The cgroup mount. */
export const CGROUP_ROOT = '/sys/fs/cgroup';

/** The trimmed text of `file`, or undefined when it cannot be read. */
export function readCgroupFile(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** The text of `/proc/self/cgroup`, or null when it cannot be read. */
export function readProcCgroup(): string | null {
  try {
    return readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return null;
  }
}

/** Directories from `path` up to the root (`/a/b` -> `/a/b`, `/a`, `/`). */
export function upwards(path: string): string[] {
  const parts = path.split('/').filter(Boolean);
  const out: string[] = [];
  for (let i = parts.length; i >= 0; i--) out.push(`/${parts.slice(0, i).join('/')}`);
  return out;
}

/**
 * The process's cgroup directories from its own up to the root: in the v2 hierarchy and in the v1
 * hierarchy of `controller` (`cpu`, `memory`). `procCgroup` is the text of `/proc/self/cgroup`
 * (null: the process sits at the root of the mount, as in a container with its own cgroup
 * namespace).
 */
export function cgroupDirs(procCgroup: string | null, controller: string): { v2: string[]; v1: string[] } {
  let v2Path = '/';
  let v1Path = '/';
  for (const line of (procCgroup ?? '').split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    if (m[1] === '0' && m[2] === '') v2Path = m[3]!;
    else if (m[2]!.split(',').includes(controller)) v1Path = m[3]!;
  }
  return { v2: upwards(v2Path), v1: upwards(v1Path) };
}

/** The texts of the v2 `file` along `dirs` (see `cgroupDirs`) under the mount `root`, missing ones left out. */
export function v2Files(root: string, dirs: readonly string[], file: string): string[] {
  const out: string[] = [];
  for (const dir of dirs) {
    const text = readCgroupFile(join(root, dir, file));
    if (text !== undefined) out.push(text);
  }
  return out;
}

/** The text of the v1 `file` in `dir`, from the first of the controller's `mounts` that has it. */
export function v1File(root: string, mounts: readonly string[], dir: string, file: string): string | undefined {
  for (const mount of mounts) {
    const text = readCgroupFile(join(root, mount, dir, file));
    if (text !== undefined) return text;
  }
  return undefined;
}

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
  if (texts.length === 0)
    texts = dirs.v1.flatMap((dir) => v1File(root, ['memory'], dir, 'memory.limit_in_bytes') ?? []);
  let limit: number | null = null;
  for (const text of texts) {
    const n = limitValue(text);
    if (n !== null && (limit === null || n < limit)) limit = n;
  }
  return limit;
}
