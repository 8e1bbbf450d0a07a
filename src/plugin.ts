/**
 * The contract between the server core and plugins.
 *
 * A plugin is a `PluginDef`: its `setup` reads the directive's tokens from a `Dispenser` (every
 * occurrence in the server block, concatenated), may register lifecycle hooks on the
 * `SetupContext`, and returns a `HandlerFactory` when it sits in the query chain (or null for
 * setup-only plugins such as `health`, `ready`, `reload`, `bind`). The core builds each server
 * block's chain once per (re)load in the fixed global order of `plugins/index.ts`.
 *
 * Query protocol (docs/corefile.md §7.4, docs/ARCHITECTURE.md "The reply contract"): `q.reply`
 * (non-null) is the only signal that an answer exists. `serve` either writes a reply
 * (`q.write`/`q.writeWire`) and returns that reply's RCODE, or writes nothing and returns the
 * RCODE of the bare reply the server should write (SERVFAIL/REFUSED/FORMERR/NOTIMP; anything else
 * becomes SERVFAIL). The returned RCODE says what happened, never whether something was written.
 * Errors for the `errors` plugin go through `q.fail(err, rcode)`. `serve` may return
 * synchronously: a hit should not allocate a promise.
 */
import type { Capability } from './capabilities.js';
import { Rcode as RcodeValue } from './dns/constants.js';
import type { Dispenser } from './corefile/dispenser.js';
import type { DirectiveDecl } from './corefile/options.js';
import type { Message } from './dns/message.js';
import type { Logger } from './log.js';
import type { Query } from './query.js';
import type { IndexReplication } from './server/replication.js';

export type Rcode = number;

export interface Handler {
  /** Plugin name (the directive), used for the `plugin` metric label and logs. */
  readonly name: string;
  serve(q: Query): Rcode | Promise<Rcode>;
}

/**
 * Builds the plugin's handler in front of `next`, once per (re)load, after every setup of every
 * block ran: `block` is the block's complete, frozen info.
 */
export type HandlerFactory = (next: Handler | null, block: BlockInfo) => Handler;

/**
 * The server-block facts that are final while the block's plugins set up: they come from the
 * block's keys. The rest of `BlockInfo` is known only later and reaches the plugin as a parameter
 * of its HandlerFactory and of its startup and serving hooks.
 */
export interface SetupBlockInfo {
  /** Normalised zones of the block's keys (`cluster.local.`, reverse zones expanded), in key order. */
  readonly zones: readonly string[];
  /** Port of the first key. */
  readonly port: number;
  /** The block's keys as written and their transport scheme (`dns`); absent in unit tests. */
  readonly keys?: readonly { readonly text: string; readonly scheme: string }[];
}

/**
 * Server-block facts, complete and frozen: `bindAddresses` and `handlerPlugins` grow while the
 * block's plugins set up and `servers` is filled once listeners are grouped, all before the first
 * HandlerFactory runs.
 */
export interface BlockInfo extends SetupBlockInfo {
  /** The listener names (`dns://:53`) the block's keys are served on. */
  readonly servers: readonly string[];
  /** Addresses the block binds to (from `bind`), empty = all interfaces. */
  readonly bindAddresses: readonly string[];
  /** Names of the block's plugins that sit in the query chain, in chain order (`coredns_plugin_enabled`). */
  readonly handlerPlugins: readonly string[];
  /** The block's view name (the `view` label of its metrics); absent or '' without a view. */
  readonly view?: string;
}

/** Process-level facts. */
export interface ProcessInfo {
  /** Path of the Corefile (`stdin` or `<default>` for the built-in one). */
  readonly corefilePath: string;
  /** The -dns.port value. */
  readonly dnsPort: number;
  readonly version: string;
  /**
   * This configuration is set up in a query thread (docs/multicore.md), which serves DNS only:
   * the main thread alone opens the HTTP side listeners (health, ready, metrics, pprof), reports
   * the process collectors and sends loop's probe.
   */
  readonly queryThread: boolean;
}

/**
 * A lookup through the whole server (CoreDNS's `upstream.Lookup`; src/server/selflookup.ts): the
 * query is served in process as if it had arrived on its client's listener, and the reply the
 * client would have got comes back instead of being sent.
 */
export interface SelfLookup {
  /**
   * Serve `sub` (a query `derive`d from the one being answered, so it carries its lookup chain).
   * The reply; null when none came (dropped, or no server runs); LOOKUP_REFUSED when the lookup,
   * or one nested in it, was refused because it repeats a question of its chain (a CNAME or
   * ExternalName cycle) or the chain is too long — the caller answers SERVFAIL then, as
   * docs/corefile.md §11 says. `repeats: true` lets the same question recur, for a caller that
   * bounds its repetitions itself as CoreDNS does (rewrite's cname rule); the length bound holds.
   */
  lookup(sub: Query, opts?: { readonly repeats?: boolean }): Promise<Message | null | typeof LOOKUP_REFUSED>;
}

/** The result of a SelfLookup that was refused (cycle or chain too long). */
export const LOOKUP_REFUSED: unique symbol = Symbol('lookup refused');

/** A readiness probe: true when ready, or a short reason string when not. */
export type ReadinessProbe = () => true | string;

/** A startup or serving hook: it gets the block's complete, frozen info. */
export type BlockHook = (block: BlockInfo) => void | Promise<void>;

export interface SetupContext {
  /** What is known of the block during setup; the complete info comes with the factory and hooks. */
  readonly block: SetupBlockInfo;
  readonly process: ProcessInfo;
  /** Logger whose lines are prefixed `plugin/<name>: `. */
  readonly log: Logger;
  /**
   * Run when the new instance starts serving (after listeners are up on first start; before the
   * switch on reload). Errors abort the start (or the reload).
   */
  onStartup(fn: BlockHook): void;
  /**
   * Run after the listeners are opened (first start) or after the switch (reload) — e.g. the loop
   * plugin's self-query. Errors are fatal on first start.
   */
  onServing(fn: BlockHook): void;
  /** Run when this instance is replaced by a reload or the process stops. */
  onShutdown(fn: () => void | Promise<void>): void;
  /**
   * Run once at final process shutdown (SIGTERM/SIGINT), before listeners close; DNS keeps being
   * served meanwhile (health's lameduck sleeps here). Not run on reload.
   */
  onFinalShutdown(fn: () => void | Promise<void>): void;
  /** Report readiness to the `ready` plugin under `name` (e.g. `kubernetes`). */
  registerReady(name: string, probe: ReadinessProbe): void;
  /**
   * A process-wide resource kept across reloads while its key stays the same (watch indexes,
   * HTTP side servers). `create` runs on first use; when a reload no longer asks for a key,
   * `dispose` (if given) runs after the switch.
   */
  shared<T>(key: string, create: () => T, dispose?: (value: T) => void | Promise<void>): T;
  /** The server's reloads and final shutdown (reload, ready). */
  readonly lifecycle: Lifecycle;
  /** The probes the ready plugin reports. */
  readonly readinessReport: ReadinessReport;
  /** State kept for the life of the process, and index replication between query threads. */
  readonly processState: ProcessState;
  /** Lookups through the whole server, for plugins that follow a CNAME or an ExternalName. */
  readonly selfLookup: SelfLookup;
  /**
   * Restrict the block's listeners to these addresses (the `bind` plugin). Called during setup;
   * accumulates across calls. Without it the block listens on all interfaces.
   */
  listenOn(addresses: readonly string[]): void;
  /**
   * Set the block's root folder (the `root` plugin, CoreDNS's `dnsserver.Config.Root`): later
   * setups of the block resolve their relative file arguments against it (`resolvePath`). `root`
   * comes first in the plugin order, so every file-reading plugin of the block sees it.
   */
  setRoot(dir: string): void;
  /**
   * A file argument as CoreDNS's plugins resolve it: `filepath.Join(root, path)` when the block has
   * a root and `path` is relative, else `path` unchanged (relative to the working directory).
   */
  resolvePath(path: string): string;
  /**
   * Offer a capability to the other plugins of this server block (src/capabilities.ts). Call
   * during setup.
   */
  provide<T>(cap: Capability<T>, value: T): void;
  /**
   * The capability another plugin of this block offered, or undefined. Valid once every setup of
   * the block ran: in the HandlerFactory, a startup hook or later — throws during setup.
   */
  lookup<T>(cap: Capability<T>): T | undefined;
}

/**
 * The server's (re)loads and its final shutdown, for the plugins that drive or follow them (reload,
 * ready).
 */
export interface Lifecycle {
  /** Trigger a reload of the Corefile from its source (as SIGUSR1). Resolves when it finished. */
  reload(reason: string): Promise<boolean>;
  /**
   * Subscribe to the outcome of every (re)load, including the first start (ok=true) — the reload
   * plugin logs the configuration hash and counts failures here. Returns an unsubscribe function;
   * call it from `onShutdown` so a replaced instance stops listening.
   */
  onReloadResult(fn: (ok: boolean, error: Error | null) => void): () => void;
  /** True once final shutdown has started (ready reports `Shutting down`). */
  readonly shuttingDown: boolean;
  /** Subscribe to final shutdown start (before lameduck). */
  onShutdownStart(fn: () => void): void;
}

/** What the ready plugin reports: the readiness probes of the configuration serving now. */
export interface ReadinessReport {
  /** All readiness probes registered by the current instance, by name. */
  readiness(): Map<string, ReadinessProbe[]>;
}

/** The process's own state, which outlives every configuration. */
export interface ProcessState {
  /**
   * A value kept for the life of the process, created on first use and never disposed — for the
   * little state a plugin must keep even while no configuration uses it (reload's count of reload
   * outcomes and its one subscription to `onReloadResult`, health's lameduck). Anything a
   * configuration owns belongs in `SetupContext.shared` instead.
   */
  keep<T>(key: string, create: () => T): T;
  /**
   * With query threads (docs/multicore.md): where an externally fed index (the kubernetes
   * watches) lives once per process. Undefined with one thread: every index runs its own source.
   */
  readonly replication?: IndexReplication;
}

/** How a directive repeated within one server block is treated (docs/corefile.md §8.4). */
export type RepeatPolicy = 'error' | 'first' | 'all';

export interface PluginDef {
  /** The Corefile directive. */
  readonly name: string;
  /** Repeated in one block: `error` (once per block), `first` (later ones ignored), `all` (accumulate). */
  readonly repeat: RepeatPolicy;
  /**
   * The plugin answers queries of any class (forward, chaos): without such a plugin on a listener,
   * non-IN queries are REFUSED before routing (docs/corefile.md §7.2).
   */
  readonly handlesAllClasses?: boolean;
  /**
   * The directive's arguments and block options as data (src/corefile/options.ts): parsed by the
   * generic parser and checked against the README's Syntax block by test/docs/readme-options.test.ts.
   */
  readonly options?: DirectiveDecl;
  /** Parse the directive (all occurrences) and prepare the plugin; throw `ConfigError` on bad input. */
  setup(d: Dispenser, ctx: SetupContext): HandlerFactory | null | Promise<HandlerFactory | null>;
}

/** Pass to `next`, or SERVFAIL with `plugin/<name>: no next plugin found` when there is none. */
export function nextOrFailure(name: string, next: Handler | null, q: Query): Rcode | Promise<Rcode> {
  if (next) return next.serve(q);
  return q.fail(new Error(`plugin/${name}: no next plugin found`), RcodeValue.SERVFAIL);
}
