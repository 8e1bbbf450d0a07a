/**
 * V8 options the launcher (bin/clusterdns) adds for `clusterdns node-cache`: NodeLocal DNSCache runs
 * on every node, so its memory counts once per node (issue 26's target; docs/node-cache.md,
 * "Memory"). Without Maglev, V8's mid-tier optimizing compiler, its settled RSS with a
 * 10,000-entry cache was 81.0 and 81.6 MiB against 86.3–91.5 with it, at 8,547–8,969 cache-hit
 * answers per CPU-second against 7,326–8,403 (scripts/measure-node-cache-memory.sh, interleaved
 * runs): node-cache's handful of hot functions are left to TurboFan, and the code and feedback
 * Maglev keeps for the rest are not kept. The server keeps V8's defaults.
 */

const MAGLEV_FLAG = /^--(no-)?maglev$/;

/** The options to add for these arguments, unless node already runs with a Maglev option. */
export function nodeCacheV8Flags(execArgv: readonly string[], argv: readonly string[]): string[] {
  if (argv[0] !== 'node-cache') return [];
  if (execArgv.some((a) => MAGLEV_FLAG.test(a))) return [];
  return ['--no-maglev'];
}
