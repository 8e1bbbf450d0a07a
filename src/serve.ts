/**
 * The serving process: load the Corefile, start the server, write the pidfile, handle signals
 * (docs/corefile.md §1.2, §1.4; docs/operations.md). Loaded by main.ts only where a server runs.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Flags } from './cli/flags.js';
import { bannerLine, startupFailure, stdLog, writeStdout } from './log.js';
import { buildInfo } from './metrics/dns.js';
import { gauge, registry } from './metrics/registry.js';
import type { ConfigSource, Instance } from './server/instance.js';
import { DEFAULT_TCP_LIMITS } from './server/listener.js';
import { describeErrors, Server } from './server/server.js';
import { registerHeapLimit } from './server/thread-heap.js';
import { QueryThreads } from './server/threads.js';
import { REVISION, VERSION } from './version.js';

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

/** Listener name → bound port (what the query threads bind). */
function portsOf(server: Server): Record<string, number> {
  return Object.fromEntries(server.allListeners().map((l) => [l.name, l.port]));
}

/** What a command built on the server (node-cache) adds to its life cycle. */
export interface ServeHooks {
  /** Bind with SO_REUSEPORT even with one thread, so that another process can share the ports. */
  readonly reusePort?: boolean;
  /**
   * Asked on SIGTERM/SIGINT: true when another process serves the same ports, so this one hands
   * them over (`Listener.handOff`) before it shuts down (docs/node-cache.md).
   */
  readonly handOff?: () => boolean;
  /** Runs after the shutdown, before the process exits with `code` (node-cache's teardown). */
  readonly beforeExit?: (code: number) => Promise<void>;
}

/** How long a hand-over may wait for queries in flight before the shutdown goes on. */
const HAND_OFF_BOUND_MS = 5000;

/**
 * Serve with `threads` query threads in all (docs/multicore.md): this thread and `threads - 1`
 * more on the same ports (SO_REUSEPORT), the Kubernetes index kept here once and copied to them.
 * Resolves once the listeners are open and the pidfile is written.
 */
export async function serve(flags: Flags, threads = 1, hooks: ServeHooks = {}): Promise<Server> {
  const loadSource = makeLoader(flags);
  try {
    await loadSource();
  } catch (e) {
    startupFailure((e as Error).message);
  }
  const tcpLimits = {
    ...DEFAULT_TCP_LIMITS,
    maxConnections: flags.tcpMaxConns,
    maxConnectionsPerSource: flags.tcpMaxConnsPerSource,
  };
  const print = (line: string) => writeStdout(`${bannerLine(line)}\n`);
  const pool = threads > 1 ? new QueryThreads(threads - 1, flags) : null;
  // A reload completes once every thread runs the new configuration (SIGUSR1 or the reload plugin).
  const afterReload = pool
    ? async (inst: Instance) => void (await pool.reload(inst.source, portsOf(server)))
    : undefined;
  const server = new Server({
    dnsPort: flags.dnsPort,
    loadSource,
    quiet: flags.quiet,
    tcpLimits,
    print,
    reusePort: pool !== null || hooks.reusePort === true,
    replication: pool?.hub,
    afterReload,
  });
  buildInfo.labels(VERSION, REVISION, process.version).set(1);
  registerHeapLimit(0);
  // Trapped before the start, as CoreDNS traps its signals: a SIGUSR1 meanwhile would otherwise
  // open Node's inspector, a SIGHUP or SIGUSR2 would end the process.
  installReloadSignals(server);
  try {
    await server.start();
  } catch (e) {
    startupFailure(describeErrors(e).join('; '));
  }
  if (flags.pidfile) {
    try {
      writeFileSync(flags.pidfile, `${process.pid}\n`);
    } catch (e) {
      // As CoreDNS: logged, and the server keeps serving.
      stdLog.error(`Could not write pidfile: ${(e as Error).message}`);
    }
  }
  // This thread serves from here on; the other threads join it (a signal meanwhile stops them too).
  installSignals(server, pool, hooks);
  if (pool) {
    registry.setGather(() => pool.collect());
    gauge({
      name: 'clusterdns_query_threads',
      help: 'Threads serving DNS queries: the main thread and the query threads it started.',
      collect() {
        this.set(pool.serving + 1);
      },
    });
    try {
      await pool.start(server.current!.source, portsOf(server));
    } catch (e) {
      if (!pool.stopping) startupFailure(`query threads: ${(e as Error).message}`);
    }
  }
  return server;
}

async function handOff(server: Server): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, HAND_OFF_BOUND_MS)));
  await Promise.race([Promise.all(server.allListeners().map((l) => l.handOff())), bound]);
  clearTimeout(timer);
}

function installSignals(server: Server, pool: QueryThreads | null, hooks: ServeHooks): void {
  let stopping = false;
  const stop = (signal: 'SIGTERM' | 'SIGINT') => {
    if (stopping) {
      if (signal === 'SIGINT') {
        stdLog.info('SIGINT: Force quit');
        process.exit(2);
      }
      return;
    }
    stopping = true;
    stdLog.info(signal === 'SIGTERM' ? 'SIGTERM: Shutting down servers then terminating' : 'SIGINT: Shutting down');
    // The threads run their own final shutdown (lameduck, drain) at the same time.
    const handingOff = hooks.handOff?.() === true;
    (handingOff ? handOff(server) : Promise.resolve())
      .then(() => Promise.all([server.shutdown(), pool ? pool.shutdown() : 0]))
      .then(async ([code, threadsCode]) => {
        await hooks.beforeExit?.(code || threadsCode);
        process.exit(code || threadsCode);
      })
      .catch(() => process.exit(3));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGQUIT', () => process.exit(0));
}

/** SIGUSR1/SIGUSR2 reload (before the first start completes: `server is not running`), SIGHUP is ignored. */
function installReloadSignals(server: Server): void {
  // As Caddy's signal handler: `[INFO] SIGUSR1: Reloading`, the core's `Reloading` lines, and on
  // failure `[ERROR] SIGUSR1: starting with listener file descriptors: <error>`.
  const reload = (sig: string) => {
    stdLog.info(`${sig}: Reloading`);
    server.reloadWithError(sig).then(
      (e) => {
        if (e) stdLog.error(`${sig}: starting with listener file descriptors: ${describeErrors(e).join('; ')}`);
      },
      (e: unknown) => stdLog.error(`${sig}: ${(e as Error).message}`),
    );
  };
  process.on('SIGUSR1', () => reload('SIGUSR1'));
  process.on('SIGUSR2', () => reload('SIGUSR2'));
  // SIGHUP is ignored, as in CoreDNS's Caddy fork.
  process.on('SIGHUP', () => {});
}
