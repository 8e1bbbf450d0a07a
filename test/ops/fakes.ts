/**
 * Test doubles for the operational plugins: a Dispenser from Corefile text, a fake CoreServices
 * and a SetupContext that records hooks and shares values like the server core does.
 */
import { CapabilitySet } from '../../src/capabilities.js';
import * as http from 'node:http';
import { Dispenser } from '../../src/corefile/dispenser.js';
import { lex } from '../../src/corefile/lexer.js';
import { logger, setLogSink } from '../../src/log.js';
import type { BlockInfo, CoreServices, ReadinessProbe, SetupContext } from '../../src/plugin.js';

export function dispenserFor(text: string, plugin: string): Dispenser {
  return new Dispenser(lex(text, 'Corefile'), plugin);
}

/** Capture log lines (returns the array and a restore function). */
export function captureLogs(): { lines: string[]; restore: () => void } {
  const lines: string[] = [];
  const prev = setLogSink((l) => lines.push(l));
  return { lines, restore: () => void setLogSink(prev) };
}

export class FakeCore implements CoreServices {
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
    if (this.notifyOutcomes) this.emitOutcome(ok, ok ? null : new Error('plugin/whoami: Corefile:3 - Error during parsing: broken'));
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

  servers(): readonly string[] {
    return ['dns://:53'];
  }
}

type Hook = () => void | Promise<void>;

export interface FakeInstance {
  readonly startup: Hook[];
  readonly serving: Hook[];
  readonly shutdown: Hook[];
  readonly finalShutdown: Hook[];
  readonly contexts: SetupContext[];
  run(which: 'startup' | 'serving' | 'shutdown' | 'finalShutdown'): Promise<void>;
}

/** Shared values by key, disposed by `release` when no instance asks for them any more. */
export class FakeShared {
  readonly entries = new Map<string, { value: unknown; dispose?: (v: unknown) => void | Promise<void>; owners: Set<FakeInstance> }>();

  get<T>(owner: FakeInstance, key: string, create: () => T, dispose?: (v: T) => void | Promise<void>): T {
    let e = this.entries.get(key);
    if (!e) {
      e = { value: create(), dispose: dispose as ((v: unknown) => void | Promise<void>) | undefined, owners: new Set() };
      this.entries.set(key, e);
    }
    e.owners.add(owner);
    return e.value as T;
  }

  async release(owner: FakeInstance): Promise<void> {
    for (const [key, e] of [...this.entries]) {
      if (!e.owners.delete(owner) || e.owners.size > 0) continue;
      this.entries.delete(key);
      await e.dispose?.(e.value);
    }
  }
}

export function fakeInstance(): FakeInstance {
  const inst: FakeInstance = {
    startup: [],
    serving: [],
    shutdown: [],
    finalShutdown: [],
    contexts: [],
    async run(which) {
      for (const h of inst[which]) await h();
    },
  };
  return inst;
}

export interface ContextOptions {
  readonly core: CoreServices;
  readonly shared: FakeShared;
  readonly inst: FakeInstance;
  readonly plugin: string;
  readonly block?: Partial<BlockInfo>;
  readonly corefilePath?: string;
}

export function fakeContext(o: ContextOptions): SetupContext {
  const block: BlockInfo = { zones: ['.'], servers: ['dns://:53'], port: 53, bindAddresses: [], handlerPlugins: [], ...o.block };
  const capabilities = new CapabilitySet();
  const ctx: SetupContext = {
    block,
    process: { corefilePath: o.corefilePath ?? 'Corefile', dnsPort: 53, version: '0.0.0' },
    log: logger(o.plugin),
    core: o.core,
    onStartup: (fn) => void o.inst.startup.push(fn),
    onServing: (fn) => void o.inst.serving.push(fn),
    onShutdown: (fn) => void o.inst.shutdown.push(fn),
    onFinalShutdown: (fn) => void o.inst.finalShutdown.push(fn),
    registerReady: (name, probe) => {
      const core = o.core as unknown as FakeCore;
      core.probes.set(name, [...(core.probes.get(name) ?? []), probe]);
    },
    shared: (key, create, dispose) => o.shared.get(o.inst, key, create, dispose),
    listenOn: () => {},
    provide: (cap, value) => capabilities.provide(cap, value),
    // A fake has no "all setups ran" moment: the first lookup ends the setup phase.
    lookup: (cap) => {
      capabilities.seal();
      return capabilities.lookup(cap);
    },
  };
  o.inst.contexts.push(ctx);
  return ctx;
}

export interface HttpResult {
  readonly status: number;
  readonly body: string;
  readonly headers: http.IncomingHttpHeaders;
}

/** One HTTP request to 127.0.0.1:port (no keep-alive). */
export function httpRequest(port: number, path: string, o: { method?: string; headers?: Record<string, string>; agent?: http.Agent } = {}): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: o.method ?? 'GET', headers: o.headers, agent: o.agent ?? false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The error code of a request that fails (e.g. ECONNREFUSED), or 'ok' when it got a response. */
export async function httpErrorCode(port: number, path: string): Promise<string> {
  try {
    await httpRequest(port, path);
    return 'ok';
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? String(e);
  }
}

/**
 * Value of one sample from the process registry: `sample` is the series name (`x_count`, `x_bucket`,
 * or the metric itself) and `labels` must match exactly (all labels of the series).
 */
export async function sampleValue(metric: string, sample: string, labels: Record<string, string | number> = {}): Promise<number | undefined> {
  const { registry } = await import('../../src/metrics/registry.js');
  const m = registry.getSingleMetric(metric);
  if (!m) return undefined;
  const data = await m.get();
  const want = Object.entries(labels).map(([k, v]) => [k, String(v)] as const).sort();
  for (const v of data.values) {
    const name = (v as { metricName?: string }).metricName ?? metric;
    if (name !== sample) continue;
    const got = Object.entries(v.labels).map(([k, x]) => [k, String(x)] as const).sort();
    if (JSON.stringify(got) === JSON.stringify(want)) return v.value;
  }
  return undefined;
}
