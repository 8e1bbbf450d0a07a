/** A fake cgroup mount for the cgroup readers' tests (src/util/cgroup.ts, cpus.ts, heap.ts). */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A temporary directory holding `files` (path below the mount → text, `suffix` appended). */
export function fakeCgroupRoot(files: Record<string, string>, suffix = ''): string {
  const root = mkdtempSync(join(tmpdir(), 'clusterdns-cgroup-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), `${text}${suffix}`);
  }
  return root;
}
