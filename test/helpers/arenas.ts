/**
 * glibc malloc arenas of a running process, counted from /proc/PID/maps (as
 * scripts/measure-thread-memory.sh counts them): every arena but the main one (which grows with
 * brk) lives in heaps of 64 MiB mapped at a 64 MiB boundary, anonymous, the used part read-write
 * and the rest PROT_NONE. The count includes the main arena.
 */
import { readFileSync } from 'node:fs';

const HEAP = 64n * 1024n * 1024n;

export function mallocArenas(pid: number): number {
  let heaps = 0;
  let start: bigint | null = null;
  let end = 0n;
  for (const line of readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 5 || !f[0]) continue;
    const [lo, hi] = f[0].split('-').map((h) => BigInt(`0x${h}`)) as [bigint, bigint];
    if (f.length > 5) {
      start = null; // a file or a named mapping ([heap], [stack]) ends a run
      continue;
    }
    if (start !== null && lo === end) end = hi;
    else if (lo % HEAP === 0n && f[1]!.startsWith('rw')) [start, end] = [lo, hi];
    else {
      start = null;
      continue;
    }
    if (end - start === HEAP) {
      heaps++;
      start = null;
    } else if (end - start > HEAP) start = null;
  }
  return heaps + 1;
}
