/**
 * Which thread this code runs in (docs/multicore.md): a query thread serves DNS only; the main
 * thread alone holds the HTTP side listeners (health, ready, metrics) and the watches.
 */
import { isMainThread, workerData } from 'node:worker_threads';

/** True in a query thread started by the main thread (src/server/thread-entry.ts). */
export function isQueryThread(): boolean {
  return !isMainThread && (workerData as { clusterdnsQueryThread?: boolean } | null)?.clusterdnsQueryThread === true;
}
