/**
 * One configuration instance: the Corefile parsed, every server block's plugins set up, chains
 * built, and the listener addresses each block is served on. Building an instance does no network
 * I/O; its hooks (startup, serving, shutdown) are run by the Server that owns it.
 */
import { isIPv6 } from 'node:net';
import { PLUGINS, isForeignDirective } from '../../plugins/index.js';
import { Dispenser } from '../corefile/dispenser.js';
import { parseServerKey, type KeyScheme, type ServerKey } from '../corefile/keys.js';
import { defaultCorefile, parseCorefileWithFiles, sortConfigErrors } from '../corefile/parser.js';
import { ConfigError, ConfigErrorList, type Token } from '../corefile/types.js';
import { CapabilitySet } from '../capabilities.js';
import {
  GRPC_SERVER_LIMITS,
  HTTPS_OPTIONS,
  LISTENER_PROXYPROTO,
  LISTENER_SHED,
  LISTENER_TSIG_KEYS,
  BLOCK_UPDATE,
  LISTENER_SOCKETS,
  LISTENER_TIMEOUTS,
  SERVER_DEBUG,
  type GrpcServerLimits,
  type HttpsOptions,
  type ListenerTimeouts,
} from './listenopts.js';
import type { ProxyProtoSettings } from '../proxyproto/policy.js';
import type { TsigSecret } from '../dns/tsig.js';
import { TLS_CONFIG, tlsConfigConflict, type TlsServerConfig } from './tlsconfig.js';
import { logger } from '../log.js';
import type {
  BlockInfo,
  Lifecycle,
  ProcessState,
  ReadinessReport,
  Handler,
  HandlerFactory,
  PluginDef,
  ProcessInfo,
  ReadinessProbe,
  SelfLookup,
  SetupContext,
} from '../plugin.js';
import { RouteTable } from './routes.js';
import { VIEW } from '../view.js';
import { CHAIN_SPANS, SpanningHandler } from '../tracing/chain.js';
import { NO_SELF_LOOKUP } from './selflookup.js';
import { resolveAgainstRoot } from '../rootpath.js';
import type { SharedResources } from './shared.js';

export interface ConfigSource {
  /** `Corefile` path, `stdin`, or `<default>` for the built-in configuration. */
  readonly path: string;
  readonly text: string;
}

type Hook = () => void | Promise<void>;

export interface BlockRuntime {
  readonly keys: ServerKey[];
  readonly info: MutableBlockInfo;
  /** Handler factories in registry order. */
  readonly factories: { name: string; factory: HandlerFactory }[];
  chain: Handler | null;
  /** Block has a plugin answering any class. */
  anyClass: boolean;
  /** Capabilities offered by the block's plugins (sealed once every setup ran). */
  readonly capabilities: CapabilitySet;
  /** The `root` plugin's folder ('' = none: relative paths stay relative to the working directory). */
  root: string;
}

export interface MutableBlockInfo extends BlockInfo {
  zones: string[];
  servers: string[];
  port: number;
  bindAddresses: string[];
  handlerPlugins: string[];
  view?: string;
}

/** A listen address with the routes of every block key served on it. */
export interface ListenSpec {
  readonly name: string;
  /** The transport: `dns` (UDP and TCP), `tls` (DoT), `https` (DoH), `grpc`, `quic`, `https3` (§7.5). */
  readonly scheme: KeyScheme;
  readonly host: string;
  readonly port: number;
  readonly table: RouteTable;
  /** `zone:port` banner lines for the start-up output. */
  readonly banner: string[];
  /** A block on the listener has `debug`: no panic recovery (src/server/listenopts.ts). */
  debug: boolean;
  /** The `timeouts` of the listener's blocks, merged (src/server/listenopts.ts). */
  timeouts: ListenerTimeouts;
  /** grpc:// only: the `grpc_server` limits of the listener's blocks, merged as the timeouts are. */
  grpcLimits: GrpcServerLimits;
  /** The `tls` material of the listener's blocks (they must agree); null = none (served in clear). */
  tls: TlsServerConfig | null;
  /** The `https` limits of the listener's first block (CoreDNS reads group[0]). */
  https: HttpsOptions;
  /** The `proxyproto` settings of the listener's last block that has them, or null. */
  proxyProto: ProxyProtoSettings | null;
  /** `shed` on any block of the listener. */
  shed: boolean;
  /** `multisocket`: sockets per thread (0 = not set: one); null until the first block is seen. */
  sockets: number | null;
  /** The `tsig` keys of the listener's blocks, merged (a later block's key of the same name wins). */
  readonly tsigKeys: Map<string, TsigSecret>;
  /** A block of the listener takes UPDATE messages (dynupdate). */
  update: boolean;
}

let nextInstanceId = 1;

export class Instance {
  readonly id = nextInstanceId++;
  readonly blocks: BlockRuntime[] = [];
  readonly listens = new Map<string, ListenSpec>();
  readonly startup: Hook[] = [];
  readonly serving: Hook[] = [];
  readonly shutdown: Hook[] = [];
  readonly finalShutdown: Hook[] = [];
  readonly readiness = new Map<string, ReadinessProbe[]>();

  constructor(readonly source: ConfigSource) {}

  /** Run hooks in order, stopping at the first error. */
  static async run(hooks: readonly Hook[]): Promise<void> {
    for (const h of hooks) await h();
  }

  /** Run every hook even if some fail; returns the errors. */
  static async runAll(hooks: readonly Hook[]): Promise<Error[]> {
    const errors: Error[] = [];
    for (const h of hooks) {
      try {
        await h();
      } catch (e) {
        errors.push(e as Error);
      }
    }
    return errors;
  }
}

/** What the running server offers plugins, by concern: each reaches the SetupContext on its own. */
export interface ServerServices {
  readonly lifecycle: Lifecycle;
  readonly readinessReport: ReadinessReport;
  readonly processState: ProcessState;
}

export interface BuildOptions {
  readonly dnsPort: number;
  readonly process: ProcessInfo;
  readonly shared: SharedResources;
  readonly services: ServerServices;
  /** Lookups through the running server (none for `-validate`). */
  readonly selfLookup?: SelfLookup;
  readonly env?: Record<string, string | undefined>;
  /** Collect all setup errors instead of stopping at the first (for -validate). */
  readonly collectErrors?: boolean;
}

const DIRECTIVES = new Set(PLUGINS.map((p) => p.name));

/** A directive's occurrences in a block: its concatenated tokens cut where the parser saw each start. */
function occurrences(tokens: readonly Token[], starts: readonly number[]): Token[][] {
  return starts.map((s, i) => tokens.slice(s, starts[i + 1] ?? tokens.length));
}

/**
 * The ConfigErrors a failed setup threw: one, or several when the generic option parser
 * (src/corefile/options.ts) collected every bad option of the directive into a ConfigErrorList.
 */
function asConfigErrors(e: unknown, def: PluginDef, tokens: readonly Token[]): ConfigError[] {
  if (e instanceof ConfigErrorList) return e.errors.map((x) => asConfigError(x, def, tokens));
  return [asConfigError(e, def, tokens)];
}

function asConfigError(e: unknown, def: PluginDef, tokens: readonly Token[]): ConfigError {
  if (e instanceof ConfigError) {
    return e.plugin ? e : new ConfigError(e.message, e.file, e.line, def.name);
  }
  const first = tokens[0];
  return new ConfigError((e as Error)?.message ?? String(e), first?.file, first?.line, def.name);
}

function listenerName(scheme: KeyScheme, host: string, port: number): string {
  return `${scheme}://${host === '' ? '' : isIPv6(host) ? `[${host}]` : host}:${port}`;
}

/** Parse and set up a configuration. Throws ConfigError (or an AggregateError of them with collectErrors). */
export async function buildInstance(source: ConfigSource, opts: BuildOptions): Promise<Instance> {
  let text = source.text;
  const parseOpts = {
    isDirective: (n: string) => DIRECTIVES.has(n),
    isForeignDirective,
    env: opts.env ?? process.env,
    warn: (m: string) => logger().warning(m),
    // -validate: collect every parse error and still set up the blocks that parsed.
    recover: opts.collectErrors === true,
  };
  let parsed = parseCorefileWithFiles(text, source.path, parseOpts);
  let effectiveSource = source;
  if (parsed.blocks.length === 0 && parsed.errors.length === 0) {
    text = defaultCorefile(opts.dnsPort); // the built-in default (docs/corefile.md §1.2)
    effectiveSource = { path: source.path, text };
    parsed = parseCorefileWithFiles(text, '<default>', parseOpts);
  }
  const inst = new Instance(effectiveSource);
  const errors: ConfigError[] = [...parsed.errors];

  for (const block of parsed.blocks) {
    let keys: ServerKey[];
    try {
      keys = block.keys.map((k) => parseServerKey(k, opts.dnsPort));
    } catch (e) {
      if (!opts.collectErrors || !(e instanceof ConfigError)) throw e;
      errors.push(e);
      continue;
    }
    const zones: string[] = [];
    for (const k of keys) for (const z of k.zones) if (!zones.includes(z)) zones.push(z);
    const rt = addBlock(inst, keys, {
      zones,
      servers: [],
      port: keys[0]?.port ?? opts.dnsPort,
      keys: keys.map((k) => ({ text: k.text, scheme: k.scheme })),
      bindAddresses: [],
      handlerPlugins: [],
      view: '',
    });
    for (const entry of PLUGINS) {
      const tokens = block.directives.get(entry.name);
      if (!tokens || tokens.length === 0) continue;
      // The plugin's code loads here, when a Corefile first names it (plugins/index.ts).
      const def = await entry.load();
      const occ = occurrences(tokens, block.starts.get(def.name) ?? [0]);
      if (def.repeat === 'error' && occ.length > 1) {
        const second = occ[1]![0]!;
        const err = new ConfigError(
          'this plugin can only be used once per Server Block',
          second.file,
          second.line,
          def.name,
        );
        if (!opts.collectErrors) throw err;
        errors.push(err);
        continue;
      }
      const use = def.repeat === 'first' ? occ[0]! : tokens;
      const ctx = blockContext(inst, rt, def.name, opts);
      try {
        const factory = await def.setup(new Dispenser(use, def.name), ctx);
        if (factory) {
          rt.factories.push({ name: def.name, factory });
          rt.info.handlerPlugins.push(def.name);
          if (def.handlesAllClasses) rt.anyClass = true;
        }
      } catch (e) {
        const errs = asConfigErrors(e, def, use);
        if (!opts.collectErrors) throw errs[0]!;
        errors.push(...errs);
      }
    }
    rt.capabilities.seal();
  }
  if (errors.length) {
    sortConfigErrors(errors, parsed.files);
    throw new AggregateError(errors, errors.map((e) => e.describe()).join('\n'));
  }

  for (const b of inst.blocks) b.info.view = b.capabilities.lookup(VIEW)?.name ?? '';
  groupListeners(inst);
  // Chains are built after grouping so factories read the final BlockInfo (servers, bind
  // addresses, handler plugins), frozen so that nothing changes it from here on.
  for (const b of inst.blocks) freezeBlockInfo(b.info);
  for (const b of inst.blocks) {
    let next: Handler | null = null;
    // With trace in the block, each plugin from trace down reaches its next through a span
    // (src/tracing/chain.ts), as CoreDNS's plugin.NextOrFailure starts one.
    const spansFrom = b.capabilities.lookup(CHAIN_SPANS);
    const first = spansFrom === undefined ? -1 : b.factories.findIndex((f) => f.name === spansFrom);
    for (let i = b.factories.length - 1; i >= 0; i--) {
      const traced = first >= 0 && i >= first && next !== null;
      next = b.factories[i]!.factory(traced ? new SpanningHandler(next!) : next, b.info);
    }
    b.chain = next;
  }
  // Now that chains exist, fill each listener's routes (grouping created the empty tables).
  for (const [name, spec] of inst.listens) {
    let first: BlockRuntime | null = null;
    for (const b of inst.blocks) {
      if (!b.info.servers.includes(name)) continue;
      if (b.anyClass) spec.table.anyClass = true;
      if (b.capabilities.lookup(SERVER_DEBUG)) spec.debug = true;
      const t = b.capabilities.lookup(LISTENER_TIMEOUTS);
      if (t) spec.timeouts = { ...spec.timeouts, ...t };
      const g = b.capabilities.lookup(GRPC_SERVER_LIMITS);
      if (g) spec.grpcLimits = { ...spec.grpcLimits, ...g };
      spec.proxyProto = b.capabilities.lookup(LISTENER_PROXYPROTO) ?? spec.proxyProto;
      if (b.capabilities.lookup(LISTENER_SHED)) spec.shed = true;
      // Filled as the blocks are seen: every route of the listener reads the one merged map.
      for (const [key, secret] of b.capabilities.lookup(LISTENER_TSIG_KEYS) ?? []) spec.tsigKeys.set(key, secret);
      const update = b.capabilities.lookup(BLOCK_UPDATE) === true;
      if (update) spec.update = true;
      // The first block of the address decides, set or not (CoreDNS's firstConfigInBlock).
      spec.sockets ??= b.capabilities.lookup(LISTENER_SOCKETS) ?? 0;
      if (spec.scheme !== 'dns') sharedTls(spec, b, first);
      first ??= b;
      for (const k of b.keys) {
        if (k.port !== spec.port || k.scheme !== spec.scheme) continue;
        const view = b.capabilities.lookup(VIEW) ?? null;
        for (const z of k.zones) spec.table.add({ zone: z, chain: b.chain, view, tsigKeys: spec.tsigKeys, update });
      }
    }
  }
  return inst;
}

/**
 * The TLS and DoH settings of an encrypted listener: from its first block, and every other block
 * on it must have the same TLS (CoreDNS's sharedTLSConfig: the handshake precedes the zone).
 */
function sharedTls(spec: ListenSpec, b: BlockRuntime, first: BlockRuntime | null): void {
  const cfg = b.capabilities.lookup(TLS_CONFIG) ?? null;
  if (first === null) {
    spec.tls = cfg;
    spec.https = b.capabilities.lookup(HTTPS_OPTIONS) ?? {};
    return;
  }
  const why = tlsConfigConflict(spec.tls, cfg);
  if (why === null) return;
  const key = b.keys.find((k) => k.scheme === spec.scheme && k.port === spec.port) ?? b.keys[0]!;
  throw new ConfigError(
    `conflicting TLS configuration for shared listener ${spec.name} between zones ${JSON.stringify(first.info.zones[0])} and ${JSON.stringify(b.info.zones[0])}: ${why}`,
    key.token.file,
    key.token.line,
  );
}

function groupListeners(inst: Instance): void {
  // (host, port, zone) → defined?  and (port, zone) → hosts, for the §6.4 conflict rules.
  const defined = new Map<string, string>();
  for (const b of inst.blocks) {
    const hosts = b.info.bindAddresses.length ? b.info.bindAddresses : [''];
    for (const k of b.keys) {
      for (const host of hosts) {
        const name = listenerName(k.scheme, host, k.port);
        for (const z of k.zones) {
          const id = `${k.scheme}|${host}|${k.port}|${z}`;
          // A block with a view may share its zone and port with others: it is checked for
          // overlap but not registered (CoreDNS's validateZonesAndListeningAddresses).
          if (defined.has(id) && !b.info.view) {
            throw new ConfigError(
              `cannot serve ${k.scheme}://${z}:${k.port}${host ? ` on ${host}` : ''} - it is already defined`,
              k.token.file,
              k.token.line,
            );
          }
          const otherHost = [...defined.keys()].find(
            (d) =>
              d.startsWith(`${k.scheme}|`) &&
              d.endsWith(`|${k.port}|${z}`) &&
              (d.split('|')[1] === '') !== (host === ''),
          );
          if (otherHost !== undefined) {
            const specific = host || otherHost.split('|')[1];
            throw new ConfigError(
              `cannot serve ${k.scheme}://${z}:${k.port} on ${specific} - zone overlap listener capacity with ${k.scheme}://${z}:${k.port}`,
              k.token.file,
              k.token.line,
            );
          }
          if (!b.info.view) defined.set(id, name);
        }
        if (!b.info.servers.includes(name)) b.info.servers.push(name);
        let spec = inst.listens.get(name);
        if (!spec) {
          spec = {
            name,
            scheme: k.scheme,
            host,
            port: k.port,
            table: new RouteTable(),
            banner: [],
            debug: false,
            timeouts: {},
            grpcLimits: {},
            tls: null,
            https: {},
            proxyProto: null,
            shed: false,
            sockets: null,
            tsigKeys: new Map(),
            update: false,
          };
          inst.listens.set(name, spec);
        }
        for (const z of k.zones) {
          // Blocks told apart by their views share a line, as CoreDNS prints each address once.
          // CoreDNS prints plain DNS zones bare and the others with their transport.
          const line = `${k.scheme === 'dns' ? '' : `${k.scheme}://`}${z}:${k.port}${host ? ` on ${host}` : ''}`;
          if (!spec.banner.includes(line)) spec.banner.push(line);
        }
      }
    }
  }
}

/** Freeze a block's info once it is complete (after every setup of the block and listener grouping). */
function freezeBlockInfo(info: MutableBlockInfo): void {
  Object.freeze(info.zones);
  Object.freeze(info.servers);
  Object.freeze(info.bindAddresses);
  Object.freeze(info.handlerPlugins);
  Object.freeze(info);
}

/** A new server block of `inst` (its plugins are set up with `blockContext`). */
export function addBlock(inst: Instance, keys: ServerKey[], info: MutableBlockInfo): BlockRuntime {
  const rt: BlockRuntime = {
    keys,
    info,
    factories: [],
    chain: null,
    anyClass: false,
    capabilities: new CapabilitySet(),
    root: '',
  };
  inst.blocks.push(rt);
  return rt;
}

/**
 * The SetupContext of plugin `name` in block `rt` of `inst` (exported for test/helpers/setup.ts,
 * the tests' setup context). Seal `rt.capabilities` once every setup of the block ran.
 */
export function blockContext(
  inst: Instance,
  rt: BlockRuntime,
  name: string,
  opts: Pick<BuildOptions, 'process' | 'shared' | 'services' | 'selfLookup'>,
): SetupContext {
  return {
    block: rt.info,
    process: opts.process,
    log: logger(name),
    lifecycle: opts.services.lifecycle,
    readinessReport: opts.services.readinessReport,
    processState: opts.services.processState,
    selfLookup: opts.selfLookup ?? NO_SELF_LOOKUP,
    // Hooks run once the instance is built, when rt.info is complete and frozen.
    onStartup: (fn) => void inst.startup.push(() => fn(rt.info)),
    onServing: (fn) => void inst.serving.push(() => fn(rt.info)),
    onShutdown: (fn) => void inst.shutdown.push(fn),
    onFinalShutdown: (fn) => void inst.finalShutdown.push(fn),
    registerReady: (name, probe) => {
      const list = inst.readiness.get(name) ?? [];
      list.push(probe);
      inst.readiness.set(name, list);
    },
    shared: (key, create, dispose) => opts.shared.get(inst.id, key, create, dispose),
    listenOn: (addresses) => {
      for (const a of addresses) if (!rt.info.bindAddresses.includes(a)) rt.info.bindAddresses.push(a);
    },
    setRoot: (dir) => {
      rt.root = dir;
    },
    resolvePath: (path) => resolveAgainstRoot(rt.root, path),
    provide: (cap, value) => rt.capabilities.provide(cap, value),
    lookup: (cap) => rt.capabilities.lookup(cap),
  };
}
