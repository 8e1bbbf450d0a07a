/**
 * trace: Zipkin or Datadog spans per query (README.md; docs/plugins.md, trace). Setup reads the
 * options and starts the block's reporter. For Zipkin the HandlerFactory builds the tracer (its
 * local endpoint comes from `bind`, known only then) and offers the chain its per-plugin spans
 * (src/tracing/chain.ts); for Datadog it is one root span per traced query (datadog-handler.ts).
 */
import { isIP } from 'node:net';
import { METADATA_COLLECTOR } from '../../src/metadata.js';
import type { HandlerFactory, PluginDef, SetupContext } from '../../src/plugin.js';
import { CHAIN_SPANS } from '../../src/tracing/chain.js';
import type { Endpoint, TracerState } from '../../src/tracing/span.js';
import { DatadogReporter, startTracer, stopTracer } from './datadog.js';
import { DatadogTraceHandler } from './datadog-handler.js';
import { TRACE_ID_LABEL, TRACE_ID_PENDING, TraceHandler } from './handler.js';
import { REPORTER_DEFAULTS, ZipkinReporter } from './reporter.js';
import { parseTrace, TRACE_OPTIONS, type TraceConfig } from './setup.js';

/**
 * The server's Zipkin endpoint: the service name, plus the first `bind` address and the block's
 * port when the block binds (CoreDNS's `serviceEndpoint` from `ListenHosts[0]`).
 */
export function localEndpoint(serviceName: string, bindAddresses: readonly string[], port: number): Endpoint {
  const host = bindAddresses[0] ?? '';
  if (host === '') return { serviceName: serviceName.toLowerCase() };
  const family = isIP(host);
  const e: { -readonly [K in keyof Endpoint]: Endpoint[K] } = { serviceName: serviceName.toLowerCase() };
  if (family === 4) e.ipv4 = host;
  else if (family === 6) e.ipv6 = host;
  if (port > 0) e.port = port;
  return e;
}

export const trace: PluginDef = {
  name: 'trace',
  repeat: 'all',
  options: TRACE_OPTIONS,
  setup(d, ctx) {
    const cfg: TraceConfig = parseTrace(d);
    if (cfg.endpointType === 'datadog') return setupDatadog(cfg, ctx);
    const reporter = new ZipkinReporter({
      url: cfg.endpoint,
      batchSize: cfg.zipkinMaxBatchSize !== 0 ? cfg.zipkinMaxBatchSize : REPORTER_DEFAULTS.batchSize,
      batchIntervalMs:
        cfg.zipkinMaxBatchIntervalMs !== 0 ? cfg.zipkinMaxBatchIntervalMs : REPORTER_DEFAULTS.batchIntervalMs,
      maxBacklog: Math.max(0, cfg.zipkinMaxBacklogSize !== 0 ? cfg.zipkinMaxBacklogSize : REPORTER_DEFAULTS.maxBacklog),
      timeoutMs: REPORTER_DEFAULTS.timeoutMs,
      warn: (m) => ctx.log.warning(m),
    });
    ctx.onShutdown(() => reporter.close());
    ctx.provide(CHAIN_SPANS, 'trace');
    // A query in the metadata plugin's zones may publish its trace id (handler.ts).
    ctx.onStartup(() => {
      ctx.lookup(METADATA_COLLECTOR)?.addProvider((_q, meta) => void meta.set(TRACE_ID_LABEL, TRACE_ID_PENDING));
    });
    return (next, block) => {
      const tracer: TracerState = {
        recorder: reporter,
        localEndpoint: localEndpoint(cfg.serviceName, block.bindAddresses, block.port),
      };
      return new TraceHandler(
        {
          every: cfg.every,
          clientServer: cfg.clientServer,
          tracer,
          metadata: ctx.lookup(METADATA_COLLECTOR) !== undefined,
        },
        next,
      );
    };
  },
};

/**
 * `trace datadog`: one `servedns` span per traced query to the Datadog agent (datadog.ts). The
 * chain gets no per-plugin spans (CHAIN_SPANS is not provided), as in CoreDNS.
 */
function setupDatadog(cfg: TraceConfig, ctx: SetupContext): HandlerFactory {
  const tracer = {
    reporter: new DatadogReporter({ agent: cfg.endpoint, warn: (m) => ctx.log.warning(m) }),
    service: cfg.serviceName,
  };
  ctx.onStartup(() => startTracer(tracer));
  ctx.onShutdown(() => stopTracer(tracer));
  ctx.onStartup(() => {
    ctx.lookup(METADATA_COLLECTOR)?.addProvider((_q, meta) => void meta.set(TRACE_ID_LABEL, TRACE_ID_PENDING));
  });
  return (next) =>
    new DatadogTraceHandler({ every: cfg.every, metadata: ctx.lookup(METADATA_COLLECTOR) !== undefined }, next);
}
