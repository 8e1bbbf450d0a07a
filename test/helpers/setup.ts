/**
 * The one setup context for tests: the server core's own Instance, SharedResources, capability set
 * and SetupContext (src/server/instance.ts `blockContext`), without a Corefile to parse and without
 * listeners. Hooks land in the real Instance's lists, shared values in a real SharedResources
 * (released per instance as on a reload), capabilities in the block's real CapabilitySet (sealed
 * with `seal()` once every setup of the block ran, as buildInstance does). Also: the ConfigError a
 * setup throws, the factory a setup returns.
 */
import { Dispenser } from '../../src/corefile/dispenser.js';
import { lex } from '../../src/corefile/lexer.js';
import { ConfigError } from '../../src/corefile/types.js';
import type {
  BlockInfo,
  Handler,
  HandlerFactory,
  Lifecycle,
  PluginDef,
  ProcessInfo,
  ProcessState,
  ReadinessProbe,
  ReadinessReport,
  SetupContext,
} from '../../src/plugin.js';
import { addBlock, blockContext, Instance, type BlockRuntime, type ServerServices } from '../../src/server/instance.js';
import { SharedResources } from '../../src/server/shared.js';

/** A Dispenser over Corefile text (file `Corefile`); `plugin` defaults to the first token. */
export function dispenserFor(text: string, plugin?: string): Dispenser {
  const tokens = lex(text, 'Corefile');
  return new Dispenser(tokens, plugin ?? tokens[0]?.text ?? '');
}

/**
 * The server's services, scripted: reload results, shutdown start, reload outcomes, probes. One
 * object plays every concern (`lifecycle`, `readinessReport` are itself).
 */
export class FakeCore implements ServerServices, Lifecycle, ReadinessReport {
  get lifecycle(): Lifecycle {
    return this;
  }

  get readinessReport(): ReadinessReport {
    return this;
  }

  readonly probes = new Map<string, ReadinessProbe[]>();
  shuttingDown = false;
  private readonly subscribers: (() => void)[] = [];
  /** Results `reload` returns, in order (default true). */
  reloadResults: boolean[] = [];
  readonly reloadReasons: string[] = [];
  onReload: (() => void | Promise<void>) | null = null;
  private readonly outcomeListeners: ((ok: boolean, error: Error | null) => void)[] = [];
  /** Notify outcome listeners (as the real core does for every attempt). */
  notifyOutcomes = true;

  async reload(reason: string): Promise<boolean> {
    this.reloadReasons.push(reason);
    const ok = this.reloadResults.shift() ?? true;
    await this.onReload?.();
    if (this.notifyOutcomes)
      this.emitOutcome(ok, ok ? null : new Error('plugin/whoami: Corefile:3 - Error during parsing: broken'));
    return ok;
  }

  /** An outcome from elsewhere (SIGUSR1). */
  emitOutcome(ok: boolean, error: Error | null): void {
    for (const l of [...this.outcomeListeners]) l(ok, error);
  }

  onReloadResult(fn: (ok: boolean, error: Error | null) => void): () => void {
    this.outcomeListeners.push(fn);
    return () => {
      const i = this.outcomeListeners.indexOf(fn);
      if (i >= 0) this.outcomeListeners.splice(i, 1);
    };
  }

  private readonly perProcess = new Map<string, unknown>();

  readonly processState: ProcessState = {
    keep: <T>(key: string, create: () => T): T => {
      if (!this.perProcess.has(key)) this.perProcess.set(key, create());
      return this.perProcess.get(key) as T;
    },
  };

  readiness(): Map<string, ReadinessProbe[]> {
    return this.probes;
  }

  onShutdownStart(fn: () => void): void {
    this.subscribers.push(fn);
  }

  startShutdown(): void {
    this.shuttingDown = true;
    for (const fn of this.subscribers) fn();
  }
}

/** The server block a context belongs to. */
export interface BlockOptions {
  /** Normalised zones (default `.`). */
  readonly zones?: readonly string[];
  /** Port of the first key (default 53). */
  readonly port?: number;
  /** Addresses from `bind`. */
  readonly bind?: readonly string[];
  /** The block's listener name (default `dns://:PORT`). */
  readonly server?: string;
  readonly servers?: readonly string[];
  /** As `bind` (same as `bind`; BlockInfo's name). */
  readonly bindAddresses?: readonly string[];
  /** Names of the block's handler plugins (`coredns_plugin_enabled`, autopath's `@PLUGIN` check). */
  readonly handlerPlugins?: readonly string[];
}

export interface InstanceOptions {
  readonly core?: FakeCore;
  /** Shared with other instances to test what survives a reload (default: a new one). */
  readonly shared?: SharedResources;
  readonly corefilePath?: string;
  /** Set up as in a query thread (ProcessInfo.queryThread, docs/multicore.md); default the main thread. */
  readonly queryThread?: boolean;
}

type HookList = 'startup' | 'serving' | 'shutdown' | 'finalShutdown';

/** One configuration instance of the real core, for plugin setups. */
export class TestInstance {
  readonly instance = new Instance({ path: 'Corefile', text: '' });
  readonly core: FakeCore;
  readonly shared: SharedResources;
  private readonly process: ProcessInfo;

  constructor(o: InstanceOptions = {}) {
    this.core = o.core ?? new FakeCore();
    this.shared = o.shared ?? new SharedResources();
    this.process = {
      corefilePath: o.corefilePath ?? 'Corefile',
      dnsPort: 53,
      version: 'test',
      queryThread: o.queryThread ?? false,
    };
  }

  get id(): number {
    return this.instance.id;
  }

  /** A new server block of this instance. */
  block(o: BlockOptions = {}): TestBlock {
    const port = o.port ?? 53;
    const info: BlockInfo = {
      zones: o.zones ?? ['.'],
      servers: o.servers ?? [o.server ?? `dns://:${port}`],
      port,
      bindAddresses: o.bind ?? o.bindAddresses ?? [],
      handlerPlugins: o.handlerPlugins ?? [],
    };
    const rt = addBlock(this.instance, [], {
      ...info,
      zones: [...info.zones],
      servers: [...info.servers],
      bindAddresses: [...info.bindAddresses],
      handlerPlugins: [...info.handlerPlugins],
    });
    return new TestBlock(this, rt, (name) =>
      blockContext(this.instance, rt, name, { process: this.process, shared: this.shared, services: this.core }),
    );
  }

  /** A context for `plugin` in a block of its own. */
  context(plugin: string, o: BlockOptions = {}): TestContext {
    return this.block(o).context(plugin);
  }

  /** Run one list of the instance's hooks, as the server does (in order, stopping at an error). */
  run(which: HookList): Promise<void> {
    return Instance.run(this.instance[which]);
  }

  /** Startup hooks, then serving hooks. */
  async start(): Promise<void> {
    await this.run('startup');
    await this.run('serving');
  }

  /** Shutdown hooks, then release the shared values only this instance used (as after a reload). */
  async stop(): Promise<void> {
    await this.run('shutdown');
    await this.release();
  }

  /** Release this instance's shared values (disposes those no other instance uses). */
  release(): Promise<void> {
    return this.shared.release(this.id);
  }
}

/** A SetupContext of the real core, with the instance it belongs to. */
export interface TestContext extends SetupContext {
  readonly instance: TestInstance;
  readonly block: BlockInfo;
  /** End the setup phase of the block: `lookup` works from now on. */
  seal(): void;
  /** Run the instance's startup and serving hooks. */
  start(): Promise<void>;
  /** Run the instance's shutdown hooks and release its shared values. */
  stop(): Promise<void>;
}

export class TestBlock {
  constructor(
    readonly instance: TestInstance,
    readonly runtime: BlockRuntime,
    private readonly make: (name: string) => SetupContext,
  ) {}

  context(plugin: string): TestContext {
    const ctx = this.make(plugin);
    const inst = this.instance;
    const rt = this.runtime;
    return Object.assign(ctx, {
      // The test block's info, complete from the start: what the tests hand the factory.
      block: this.runtime.info,
      instance: inst,
      seal: () => rt.capabilities.seal(),
      start: () => inst.start(),
      stop: () => inst.stop(),
    });
  }

  /** End the setup phase of the block (capability lookups are valid from now on). */
  seal(): void {
    this.runtime.capabilities.seal();
  }

  /**
   * Set up `def` from `text` in this block, as buildInstance does (the plugin is recorded as a
   * handler plugin of the block when it returns a factory). Seal the block after the last one.
   */
  async setup(def: PluginDef, text: string): Promise<HandlerFactory | null> {
    const factory = await def.setup(dispenserFor(text, def.name), this.make(def.name));
    if (factory) (this.runtime.info.handlerPlugins as string[]).push(def.name);
    return factory;
  }
}

/** A context for `plugin` (default `test`) in a block of its own, in an instance of its own. */
export function setupContext(o: BlockOptions & InstanceOptions & { plugin?: string } = {}): TestContext {
  return new TestInstance(o).context(o.plugin ?? 'test', o);
}

/** The ConfigError `run` throws (other errors propagate; no error fails the test). */
export function configError(run: () => unknown, what: string): ConfigError {
  try {
    const r = run();
    if (r instanceof Promise) throw new Error('unexpected async setup');
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error(`no error for ${what}`);
}

/** The handler factory a synchronous setup returned (fails the test otherwise). */
export function factoryOf(r: ReturnType<PluginDef['setup']>): HandlerFactory {
  if (typeof r !== 'function') throw new Error('setup did not return a handler factory synchronously');
  return r;
}

/**
 * The handler `def` builds from Corefile `text` (its directive's occurrences) in front of `next`,
 * for plugins whose setup is synchronous; `ctx` defaults to a block of its own.
 */
export function handlerOf(
  def: PluginDef,
  text: string,
  next: Handler | null,
  ctx: TestContext = setupContext(),
): Handler {
  return factoryOf(def.setup(dispenserFor(text, def.name), ctx))(next, ctx.block);
}
