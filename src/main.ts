/**
 * The clusterdns command: flags as CoreDNS has them, Corefile loading (corefile.md §1.2), start,
 * signals (§1.4) and exit codes (operations-contract.md §d).
 */
import cluster from 'node:cluster';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { PLUGINS } from '../plugins/index.js';
import { FlagError, parseFlags, usage, type Flags } from './cli/flags.js';
import { coreLog, writeLine } from './log.js';
import { buildInfo } from './metrics/dns.js';
import type { ConfigSource } from './server/instance.js';
import { describeErrors, Server } from './server/server.js';
import { PLATFORM_LINE, REVISION, VERSION, VERSION_LINE } from './version.js';

function fatal(msg: string): never {
  writeLine('FATAL', msg);
  process.exit(1);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The Corefile loader: -conf FILE, -conf stdin, ./Corefile, or the built-in default. */
export function makeLoader(flags: Pick<Flags, 'conf'>, cwd = process.cwd()): () => Promise<ConfigSource> {
  let stdinText: string | null = null;
  return async () => {
    if (flags.conf === 'stdin') {
      stdinText ??= await readStdin();
      return { path: 'stdin', text: stdinText };
    }
    if (flags.conf !== '') return { path: flags.conf, text: readFileSync(flags.conf, 'utf8') };
    const local = `${cwd}/Corefile`;
    if (existsSync(local)) return { path: 'Corefile', text: readFileSync(local, 'utf8') };
    return { path: '<default>', text: '' };
  };
}

export async function main(argv: readonly string[]): Promise<void> {
  let flags: Flags;
  try {
    flags = parseFlags(argv);
  } catch (e) {
    if (e instanceof FlagError && e.exitCode === 1) fatal(e.message);
    process.stderr.write(`${(e as Error).message}\n${usage()}\n`);
    process.exit(2);
  }
  if (flags.version) {
    process.stdout.write(`${VERSION_LINE}\n${PLATFORM_LINE}\n`);
    return;
  }
  if (flags.plugins) {
    process.stdout.write(`${PLUGINS.map((p) => p.name).sort().join('\n')}\n`);
    return;
  }
  if (flags.workers > 1 && cluster.isPrimary) {
    runPrimary(flags);
    return;
  }
  const loadSource = makeLoader(flags);
  try {
    await loadSource();
  } catch (e) {
    fatal((e as Error).message);
  }
  // In worker mode only the first worker prints the banner.
  const quiet = flags.quiet || (cluster.isWorker && cluster.worker?.id !== 1);
  const server = new Server({ dnsPort: flags.dnsPort, loadSource, quiet });
  if (flags.validate) {
    const errors = await server.validate();
    for (const e of errors) process.stderr.write(`${e}\n`);
    if (errors.length === 0) process.stdout.write('Configuration OK\n');
    process.exit(errors.length ? 1 : 0);
  }
  buildInfo.labels(VERSION, REVISION, process.version).set(1);
  try {
    await server.start();
  } catch (e) {
    fatal(describeErrors(e).join('; '));
  }
  if (flags.pidfile) {
    try {
      writeFileSync(flags.pidfile, `${process.pid}\n`);
    } catch (e) {
      fatal(`Could not write pidfile: ${(e as Error).message}`);
    }
  }
  installSignals(server);
}

/**
 * `-workers N`: the primary forks N worker processes that each run the whole server; the DNS
 * sockets are shared through the cluster module and the kernel spreads packets among the workers
 * (SCHED_NONE: workers accept TCP themselves, the primary stays out of the data path). Each
 * worker keeps its own plugin state (caches, Kubernetes watch index, metrics registry). The
 * primary forwards SIGTERM/SIGINT/SIGUSR1 and replaces a worker that dies unexpectedly.
 */
function runPrimary(flags: Flags): void {
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  let stopping = false;
  const codes: number[] = [];
  const fork = () => cluster.fork();
  for (let i = 0; i < flags.workers; i++) fork();
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

function installSignals(server: Server): void {
  let stopping = false;
  const stop = (signal: 'SIGTERM' | 'SIGINT') => {
    if (stopping) {
      if (signal === 'SIGINT') {
        coreLog.info('SIGINT: Force quit');
        process.exit(2);
      }
      return;
    }
    stopping = true;
    coreLog.info(signal === 'SIGTERM' ? 'SIGTERM: Shutting down servers then terminating' : 'SIGINT: Shutting down');
    server.shutdown().then(
      (code) => process.exit(code),
      () => process.exit(3),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGQUIT', () => process.exit(0));
  const reload = (sig: string) => {
    server.reload(sig).then(
      (ok) => {
        if (!ok) coreLog.error(`${sig}: reload failed, keeping the running configuration`);
      },
      (e: unknown) => coreLog.error(`${sig}: ${(e as Error).message}`),
    );
  };
  process.on('SIGUSR1', () => reload('SIGUSR1'));
  process.on('SIGUSR2', () => reload('SIGUSR2'));
  // SIGHUP is ignored, as in CoreDNS's Caddy fork.
  process.on('SIGHUP', () => {});
}
