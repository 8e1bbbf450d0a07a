/**
 * The clusterdns command: flags as CoreDNS has them, Corefile loading (docs/corefile.md §1.2), start,
 * signals (§1.4) and exit codes (docs/operations.md).
 *
 * This module stays light: the server and every plugin load from serve.ts only when a server
 * runs, so `-version`, `-plugins` and `-validate` do not load them.
 */
import { FlagError, HelpRequested, parseFlags, usage, type Flags } from './cli/flags.js';
import { checkLogFormat, goStdLogLine, setLogFormat, startupFailure } from './log.js';
import { resolveWorkers } from './util/cpus.js';
import { PLATFORM_LINE, VERSION_LINE } from './version.js';

export async function main(argv: readonly string[]): Promise<void> {
  // `clusterdns node-cache …`: NodeLocal DNSCache with upstream node-cache's flags (docs/node-cache.md).
  if (argv[0] === 'node-cache') {
    const { nodeCacheMain } = await import('./nodecache/main.js');
    return nodeCacheMain(argv.slice(1));
  }
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
  // `-workers N`: N query threads in this process (docs/multicore.md).
  const { serve } = await import('./serve.js');
  await serve(flags, resolveWorkers(flags.workers));
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
