/**
 * A full garbage collection on demand, optionally compacting. Start-up parses the configuration
 * and lists whole clusters, leaving tens of MiB of garbage spread thinly over the heap's pages. A
 * plain full collection frees the garbage but keeps most of those pages (V8 compacts only the
 * emptiest few), and V8's own memory reducer compacts them only 8 s or more later, if at all;
 * compacting every page once, before serving, returns them to the system at once (RSS after
 * syncing 150k pods: 145 → 115 MiB at the time; bench/README.md has today's figures). The hook is
 * taken once from V8 at run time, so the process needs no `--expose-gc` flag.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | null | undefined;

/**
 * `compact`: every page, for start-up, when the initial lists have just been parsed; a stop of
 * ~70 ms at 150k pods, so not for a reload, whose garbage is small (the watch index is kept) and
 * during which the old configuration is still answering.
 */
export function collectGarbage(compact = false): void {
  if (gc === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      gc = runInNewContext('gc') as () => void;
    } catch {
      gc = null;
    }
  }
  if (!gc) return;
  if (!compact) return gc();
  // Compaction of every page for this one collection only: in general it costs more than it saves.
  setFlagsFromString('--compact-on-every-full-gc');
  try {
    gc();
  } finally {
    setFlagsFromString('--no-compact-on-every-full-gc');
  }
}
