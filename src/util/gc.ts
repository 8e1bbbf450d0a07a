/**
 * A full garbage collection on demand. Start-up (and a reload) parses the configuration and lists
 * whole clusters, leaving tens of MiB of garbage that V8 would keep committed for a long time on
 * an otherwise idle heap; one compacting collection before serving returns it to the system
 * (RSS after syncing 150k pods: see bench/README.md). The hook is taken once from V8 at run time,
 * so the process needs no `--expose-gc` flag.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | null | undefined;

export function collectGarbage(): void {
  if (gc === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      gc = runInNewContext('gc') as () => void;
    } catch {
      gc = null;
    }
  }
  gc?.();
}
