/**
 * The clusterdns command: flags as CoreDNS has them, Corefile loading (docs/corefile.md §1.2), start,
 * signals (§1.4) and exit codes (docs/operations.md).
 *
 * This module stays light: the server and every plugin load from serve.ts only in the process
 * that serves, so the `-workers` primary (which only forks and relays signals) does not carry
 * them (~25 MiB of RSS).
 */
import cluster, { type Worker } from 'node:cluster';
import { writeFileSync } from 'node:fs';
import { FlagError, HelpRequested, parseFlags, usage, type Flags } from './cli/flags.js';
import { checkLogFormat, coreLog, goStdLogLine, setLogFormat, startupFailure } from './log.js';
import { relayScrapes } from './server/cluster-metrics.js';
import { resolveWorkers, threadMode } from './util/cpus.js';
import { PLATFORM_LINE, VERSION_LINE } from './version.js';

export async function main(argv: readonly string[]): Promise<void> {
  let flags: Flags;
  try {
    flags = parseFlags(argv);
  } catch (e) {
    // As Go's flag package: -h/-help print the usage on stderr and exit 0; a bad flag prints the
    // reason and the usage and exits 2.
    if (e instanceof HelpRequested) {
      process.stderr.write(`${usage()}\n`);
      process.exit(0);
    }
    if (e instanceof FlagError && e.exitCode === 1) {
      applyLogFormat(e.flags?.logFormat ?? 'text');
      // As CoreDNS: Go's standard logger still has its date prefix in text mode.
      startupFailure(isJson(e.flags) ? e.message : goStdLogLine(e.message));
    }
    process.stderr.write(`${(e as Error).message}\n${usage()}\n`);
    process.exit(2);
  }
  applyLogFormat(flags.logFormat);
  if (flags.version) {
    process.stdout.write(`${VERSION_LINE}\n${PLATFORM_LINE}\n`);
    return;
  }
  if (flags.plugins) {
    const { pluginList } = await import('./cli/plugins.js');
    process.stdout.write(pluginList());
    return;
  }
  if (flags.validate) {
    const { runValidate } = await import('./cli/validate.js');
    process.exit(await runValidate(flags));
  }
  // Query threads where the runtime can bind one port several times; else worker processes
  // (docs/multicore.md). CLUSTERDNS_WORKER_MODE=process keeps the processes on any runtime.
  const workers = resolveWorkers(flags.workers);
  const threads = threadMode();
  if (workers > 1 && !threads && cluster.isPrimary) {
    runPrimary(flags, workers);
    return;
  }
  const { serve } = await import('./serve.js');
  await serve(flags, threads && cluster.isPrimary ? workers : 1);
}

function isJson(flags: Flags | undefined): boolean {
  return flags?.logFormat === 'json';
}

/**
 * `-log-format`, checked right after the flags as CoreDNS does: a value other than text or json
 * is a start-up failure (exit 1) written by Go's standard logger, with its date prefix.
 */
function applyLogFormat(format: string): void {
  try {
    setLogFormat(checkLogFormat(format));
  } catch (e) {
    startupFailure(goStdLogLine((e as Error).message));
  }
}

/**
 * `-workers N` on a runtime without `reusePort` (Node 20): the primary forks N worker processes
 * that each run the whole server; the DNS sockets are shared through the cluster module and the kernel spreads packets among the workers
 * (SCHED_NONE: workers accept TCP themselves, the primary stays out of the data path). Each
 * worker keeps its own plugin state (caches, Kubernetes watch index, metrics registry); a scrape
 * gathers every worker's metrics through the primary. The primary forwards SIGTERM/SIGINT/SIGUSR1
 * and replaces a worker that dies unexpectedly.
 */
function runPrimary(flags: Flags, workers: number): void {
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  let stopping = false;
  const codes: number[] = [];
  const fork = () => cluster.fork();
  for (let i = 0; i < workers; i++) fork();
  // A scrape reaching one worker serves every worker's totals (docs/multicore.md).
  relayScrapes(
    () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined),
    (fn) => cluster.on('message', fn),
  );
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      codes.push(code ?? 0);
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(Math.max(0, ...codes));
      return;
    }
    if (code === 1 && !signal) {
      // A start-up failure (bad Corefile, port in use) would fail again: stop everything.
      stopping = true;
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
      process.exit(1);
    }
    coreLog.error(`worker ${worker.process.pid} exited (${signal ?? code}); starting a new one`);
    fork();
  });
  const relay = (sig: NodeJS.Signals) => {
    if (sig !== 'SIGUSR1') stopping = true;
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill(sig);
  };
  process.on('SIGTERM', () => relay('SIGTERM'));
  process.on('SIGINT', () => relay('SIGINT'));
  process.on('SIGUSR1', () => relay('SIGUSR1'));
  process.on('SIGHUP', () => {});
  if (flags.pidfile) writeFileSync(flags.pidfile, `${process.pid}\n`);
}
