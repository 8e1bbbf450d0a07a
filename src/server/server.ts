/**
 * The running server: listeners that survive reloads, the current configuration instance, and
 * the lifecycle around them (start, reload with atomic switch, graceful shutdown). Offers the
 * plugins its Lifecycle, ReadinessReport and ProcessState (src/plugin.ts).
 */
import { ConfigError } from '../corefile/types.js';
import { coreLog, enableDebug, isJsonLog, stdLog, writeStdout } from '../log.js';
import type { Lifecycle, ProcessState, ReadinessProbe, ReadinessReport } from '../plugin.js';
import { buildInstance, Instance, type ConfigSource, type ListenSpec } from './instance.js';
import { listenerDispatchOptions, makeDispatch, type DispatchOptions } from './dispatch.js';
import { DEFAULT_TCP_LIMITS, Listener, type ListenTransport, type TcpLimits } from './listener.js';
import { GrpcListener } from './grpc.js';
import { SharedResources } from './shared.js';
import { PLATFORM_LINE, VERSION, VERSION_LINE } from '../version.js';
import { collectGarbage } from '../util/gc.js';
import type { IndexReplication } from './replication.js';
import { InProcessLookup } from './selflookup.js';

export interface ServerOptions {
  readonly dnsPort: number;
  /** Reads the configuration (again, on reload). */
  readonly loadSource: () => Promise<ConfigSource>;
  readonly quiet?: boolean;
  readonly maxUdpSize?: number;
  readonly tcpLimits?: TcpLimits;
  readonly env?: Record<string, string | undefined>;
  /** Where the start-up banner goes (stdout by default). */
  readonly print?: (line: string) => void;
  /** Open the DNS sockets with SO_REUSEPORT (query threads, docs/multicore.md). */
  readonly reusePort?: boolean;
  /** The port to bind for a listener (a query thread binds the port the main thread got for port 0). */
  readonly listenPort?: (name: string) => number | undefined;
  /** Index replication between threads (ProcessState.replication). */
  readonly replication?: IndexReplication;
  /**
   * A query thread (ProcessInfo.queryThread): reloads come from the main thread (`reloadWithError`), so a plugin's
   * `reload()` is left to the main thread's own plugin, and reload outcomes are not reported to
   * the plugins here (the main thread logs and counts them once).
   */
  readonly follower?: boolean;
  /**
   * Run after a successful reload switched this server, before `Reloading complete` (the main
   * thread's query threads load the same configuration here).
   */
  readonly afterReload?: (inst: Instance) => Promise<void>;
}

export type ReloadListener = (ok: boolean, error: Error | null, instance: Instance | null) => void;

export class Server implements Lifecycle, ReadinessReport {
  /** The dns:// listeners (UDP and TCP), by name. */
  readonly listeners = new Map<string, Listener>();
  /** The grpc:// listeners (src/server/grpc.ts), by name. */
  readonly grpcListeners = new Map<string, GrpcListener>();
  current: Instance | null = null;
  readonly shared = new SharedResources();
  private shutdownStarted = false;
  private readonly shutdownSubscribers: (() => void)[] = [];
  private readonly reloadListeners: ReloadListener[] = [];
  private reloadChain: Promise<void> = Promise.resolve();

  /** The process's state (kept across reloads) and its index replication, for the plugins. */
  private readonly processState: ProcessState;

  constructor(private readonly opts: ServerOptions) {
    const perProcess = new Map<string, unknown>();
    this.processState = {
      keep: <T>(key: string, create: () => T): T => {
        if (!perProcess.has(key)) perProcess.set(key, create());
        return perProcess.get(key) as T;
      },
      replication: opts.replication,
    };
  }

  get shuttingDown(): boolean {
    return this.shutdownStarted;
  }

  onShutdownStart(fn: () => void): void {
    this.shutdownSubscribers.push(fn);
  }

  /** Subscribe to reload outcomes (the reload plugin counts failures here). */
  onReloadResult(fn: ReloadListener): () => void {
    if (this.opts.follower) return () => undefined;
    this.reloadListeners.push(fn);
    return () => {
      const i = this.reloadListeners.indexOf(fn);
      if (i >= 0) this.reloadListeners.splice(i, 1);
    };
  }

  readiness(): Map<string, ReadinessProbe[]> {
    // During the first start, report the starting instance's probes (e.g. `kubernetes` while its
    // watches sync) rather than nothing.
    return (this.current ?? this.starting)?.readiness ?? new Map();
  }

  /** The instance being started for the first time (before it becomes current). */
  private starting: Instance | null = null;

  servers(): readonly string[] {
    return [...this.listeners.keys(), ...this.grpcListeners.keys()];
  }

  /** Every listener, whatever it speaks. */
  allListeners(): (Listener | GrpcListener)[] {
    return [...this.listeners.values(), ...this.grpcListeners.values()];
  }

  /**
   * Lookups through this server (SetupContext.selfLookup): routed on the listener the client's
   * query came in on, in the configuration serving now (the one starting, during the first start).
   */
  private readonly selfLookup = new InProcessLookup((name) => {
    const spec = (this.current ?? this.starting)?.listens.get(name);
    return spec && { table: spec.table, opts: this.dispatchOptions(spec) };
  });

  /** How a listener of `spec` serves packets (also the options of lookups through it). */
  private dispatchOptions(spec: ListenSpec): DispatchOptions {
    return listenerDispatchOptions(spec, this.opts.maxUdpSize);
  }

  /** Actual port of a listener (useful when port 0 was configured). */
  portOf(name: string): number | undefined {
    return (this.listeners.get(name) ?? this.grpcListeners.get(name))?.port;
  }

  private build(source: ConfigSource, collectErrors = false): Promise<Instance> {
    return buildInstance(source, {
      dnsPort: this.opts.dnsPort,
      process: {
        corefilePath: source.path,
        dnsPort: this.opts.dnsPort,
        version: VERSION,
        queryThread: this.opts.follower === true,
      },
      shared: this.shared,
      services: { lifecycle: this, readinessReport: this, processState: this.processState },
      selfLookup: this.selfLookup,
      env: this.opts.env,
      collectErrors,
    });
  }

  /** Parse and set up without serving (the -validate flag). Returns error descriptions. */
  async validate(): Promise<string[]> {
    let inst: Instance | null = null;
    try {
      inst = await this.build(await this.opts.loadSource(), true);
      return [];
    } catch (e) {
      return describeErrors(e);
    } finally {
      if (inst) await this.shared.release(inst.id);
    }
  }

  /** First start: build, run startup hooks, open listeners, print the banner, run serving hooks. */
  async start(): Promise<void> {
    const inst = await this.build(await this.opts.loadSource());
    this.starting = inst;
    enableDebug(hasDebug(inst));
    try {
      await Instance.run(inst.startup);
      collectGarbage(true); // start-up garbage (config, initial Kubernetes lists) before serving
      await this.switchListeners(inst);
    } catch (e) {
      await Instance.runAll(inst.shutdown);
      await this.shared.release(inst.id);
      this.starting = null;
      throw e;
    }
    this.current = inst;
    this.starting = null;
    // CoreDNS's order: the served zones, then what runs once the instance is up (the reload
    // plugin's `Running configuration SHA512 = …`), then the version lines.
    this.printZones(inst);
    await Instance.run(inst.serving);
    this.printVersion();
    for (const l of [...this.reloadListeners]) l(true, null, inst);
  }

  private get print(): (line: string) => void {
    return this.opts.print ?? ((l: string) => writeStdout(`${l}\n`));
  }

  private printZones(inst: Instance): void {
    if (this.opts.quiet) return;
    const print = this.print;
    const lines: string[] = [];
    const groups: string[][] = [];
    for (const spec of inst.listens.values()) {
      const port = this.portOf(spec.name) ?? spec.port;
      const group = spec.banner.map((b) => (spec.port === 0 ? b.replace(':0', `:${port}`) : b));
      lines.push(...group);
      groups.push(group.sort());
    }
    lines.sort();
    const withWarning = (l: string): string[] => {
      const bare = l.includes('://') ? l.slice(l.indexOf('://') + 3) : l;
      const zone = bare.slice(0, bare.lastIndexOf(':'));
      if (zone !== '.' && !zone.endsWith('.arpa.') && !/^[a-z0-9.-]+$/.test(zone)) {
        return [`Warning: Domain "${zone}" does not follow RFC1035 preferred syntax`, l];
      }
      return [l];
    };
    // -log-format json: one line per server, its zones joined by newlines (CoreDNS's printStartup).
    if (isJsonLog()) {
      for (const g of groups.filter((x) => x.length).sort((a, b) => (a[0]! < b[0]! ? -1 : 1)))
        print(g.flatMap(withWarning).join('\n'));
      return;
    }
    for (const l of lines) for (const out of withWarning(l)) print(out);
  }

  private printVersion(): void {
    if (this.opts.quiet) return;
    // One print: one line object in -log-format json, as CoreDNS logs it.
    this.print(`${VERSION_LINE}\n${PLATFORM_LINE}`);
  }

  /**
   * Point every listener of `inst` at its new routes: reuse sockets whose address stays, open new
   * ones, close those no longer configured. New sockets are opened before anything is switched so
   * that a bind failure leaves the old configuration serving untouched.
   */
  private async switchListeners(inst: Instance): Promise<void> {
    const opened: Listener[] = [];
    const openedGrpc: GrpcListener[] = [];
    const dispatchOpts = (spec: ListenSpec): DispatchOptions => this.dispatchOptions(spec);
    try {
      for (const spec of inst.listens.values()) {
        if (this.listeners.has(spec.name) || this.grpcListeners.has(spec.name)) continue;
        const port = this.opts.listenPort?.(spec.name) ?? spec.port;
        if (spec.scheme === 'grpc') {
          const g = new GrpcListener(
            spec.name,
            spec.host,
            port,
            makeDispatch(spec.table, dispatchOpts(spec)),
            this.opts.reusePort === true,
          );
          g.configure(spec.grpcLimits, spec.tls);
          await g.open();
          openedGrpc.push(g);
          continue;
        }
        const l = new Listener(
          spec.name,
          spec.host,
          port,
          makeDispatch(spec.table, dispatchOpts(spec)),
          this.opts.tcpLimits ?? DEFAULT_TCP_LIMITS,
          this.opts.reusePort === true,
          Math.max(1, spec.sockets ?? 1),
          listenTransport(spec),
        );
        await l.open();
        opened.push(l);
      }
    } catch (e) {
      await Promise.all([...opened, ...openedGrpc].map((l) => l.close(0)));
      const err = e as NodeJS.ErrnoException;
      throw new Error(err.message);
    }
    for (const l of opened) this.listeners.set(l.name, l);
    for (const g of openedGrpc) this.grpcListeners.set(g.name, g);
    for (const spec of inst.listens.values()) {
      const g = this.grpcListeners.get(spec.name);
      if (g) {
        g.setDispatch(makeDispatch(spec.table, dispatchOpts(spec)));
        g.configure(spec.grpcLimits, spec.tls);
        continue;
      }
      const l = this.listeners.get(spec.name)!;
      l.setDispatch(makeDispatch(spec.table, dispatchOpts(spec)));
      l.setTimeouts(spec.timeouts);
      l.setProxyProto(spec.proxyProto);
      l.setShed(spec.shed);
      l.setTransport(listenTransport(spec));
    }
    const stale = [...this.listeners.entries()].filter(([name]) => !inst.listens.has(name));
    for (const [name] of stale) this.listeners.delete(name);
    const staleGrpc = [...this.grpcListeners.entries()].filter(([name]) => !inst.listens.has(name));
    for (const [name] of staleGrpc) this.grpcListeners.delete(name);
    await Promise.all([...stale, ...staleGrpc].map(([, l]) => l.close()));
  }

  /**
   * Reload the configuration from its source (reload plugin, SIGUSR1). The new instance is built
   * and started while the old one serves; on any failure the old one keeps serving untouched.
   * Reloads are serialised.
   */
  reload(reason: string): Promise<boolean> {
    if (this.opts.follower) return Promise.resolve(true);
    return this.reloadWithError(reason).then((e) => e === null);
  }

  /**
   * `reload`, resolving to null on success or to the error that failed it. Logs as Caddy's
   * `Restart` does: `[INFO] Reloading`, then `[ERROR] Restart failed: <error>` or, once the new
   * configuration serves, `[INFO] Reloading complete`.
   */
  reloadWithError(reason: string): Promise<Error | null> {
    const run = async (): Promise<Error | null> => {
      if (this.shutdownStarted || !this.current) return new Error('server is not running');
      stdLog.info('Reloading');
      let inst: Instance | null = null;
      try {
        inst = await this.build(await this.opts.loadSource());
        enableDebug(hasDebug(inst));
        await Instance.run(inst.startup);
        collectGarbage();
        await this.switchListeners(inst);
      } catch (e) {
        if (this.current) enableDebug(hasDebug(this.current));
        const text = describeErrors(e).join('; ');
        stdLog.error(`Restart failed: ${text}`);
        if (inst) {
          await Instance.runAll(inst.shutdown);
          await this.shared.release(inst.id);
        }
        for (const l of [...this.reloadListeners]) l(false, e as Error, null);
        return e instanceof Error ? e : new Error(text);
      }
      const old = this.current;
      this.current = inst;
      coreLog.debug(`reloaded configuration (${reason})`);
      const errs = await Instance.runAll(old.shutdown);
      for (const e of errs) coreLog.error(`shutdown of previous configuration: ${e.message}`);
      await this.shared.release(old.id);
      await Instance.runAll(inst.serving);
      if (this.opts.afterReload) await this.opts.afterReload(inst);
      stdLog.info('Reloading complete');
      for (const l of [...this.reloadListeners]) l(true, null, inst);
      return null;
    };
    const next = this.reloadChain.then(run, run);
    // The caller handles `next`; the chain only orders the next reload after this one, so its
    // own copy swallows the outcome (a rejection here would be unhandled until the next reload).
    this.reloadChain = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  }

  /**
   * Final shutdown: tell subscribers (ready stops), run final-shutdown hooks (health's lameduck;
   * DNS still served), close listeners after in-flight queries finish, run shutdown hooks.
   * Returns the exit code (0, 4 if a callback failed, 3 if stopping failed).
   */
  async shutdown(): Promise<number> {
    if (this.shutdownStarted) return 0;
    this.shutdownStarted = true;
    for (const fn of this.shutdownSubscribers) {
      try {
        fn();
      } catch {
        /* a subscriber must not stop the shutdown */
      }
    }
    let code = 0;
    const inst = this.current;
    if (inst) {
      const errs = await Instance.runAll(inst.finalShutdown);
      if (errs.length) {
        for (const e of errs) coreLog.error(`shutdown callback: ${e.message}`);
        code = 4;
      }
    }
    try {
      await Promise.all(this.allListeners().map((l) => l.close(5000)));
    } catch {
      code = 3;
    }
    this.listeners.clear();
    this.grpcListeners.clear();
    if (inst) {
      const errs = await Instance.runAll(inst.shutdown);
      if (errs.length && code === 0) code = 4;
      await this.shared.release(inst.id);
    }
    return code;
  }
}

/** One description per configuration error (AggregateError from -validate, or a single one). */
export function describeErrors(e: unknown): string[] {
  if (e instanceof AggregateError) return e.errors.map((x) => describeOne(x));
  return [describeOne(e)];
}

function describeOne(e: unknown): string {
  if (e instanceof ConfigError) return e.describe();
  return (e as Error)?.message ?? String(e);
}

/** A block of the instance has `debug` (debug logging is process-wide, as in CoreDNS). */
function hasDebug(inst: Instance): boolean {
  for (const spec of inst.listens.values()) if (spec.debug) return true;
  return false;
}

/**
 * How a listener of `spec` serves (docs/corefile.md §7.5). QUIC needs `node:quic`, which the Node 24
 * runtime does not have: such a listener fails the start with what is missing and how to see it,
 * instead of serving nothing.
 */
function listenTransport(spec: ListenSpec): ListenTransport {
  switch (spec.scheme) {
    case 'dns':
      return { kind: 'dns' };
    case 'tls':
      return { kind: 'tls', tls: spec.tls };
    case 'https':
      return { kind: 'https', tls: spec.tls, https: spec.https };
    case 'grpc':
      // grpc:// is served by a GrpcListener (src/server/grpc.ts), never by a Listener.
      throw new Error(`${spec.name} is not a UDP/TCP listener`);
    case 'quic':
    case 'https3':
      throw new Error(
        `cannot serve ${spec.name}: ${spec.scheme === 'quic' ? 'DNS over QUIC' : 'DNS over HTTPS/3'} needs QUIC, and this runtime (Node ${process.versions.node}) has no node:quic module ` +
          `(node --experimental-quic -e "import('node:quic')" fails with "No such built-in module"); serve tls:// or https:// instead`,
      );
  }
}
