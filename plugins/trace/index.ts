/**
 * trace: Zipkin spans per query (README.md; docs/plugins.md, trace). Setup reads the options and
 * starts the block's reporter; the HandlerFactory builds the tracer (its local endpoint comes from
 * `bind`, known only then) and offers the chain its per-plugin spans (src/tracing/chain.ts).
 */
import { isIP } from 'node:net';
import { METADATA_COLLECTOR } from '../../src/metadata.js';
import type { PluginDef } from '../../src/plugin.js';
import { CHAIN_SPANS } from '../../src/tracing/chain.js';
import type { Endpoint, TracerState } from '../../src/tracing/span.js';
import { TRACE_ID_LABEL, TRACE_ID_PENDING, TraceHandler } from './handler.js';
import { REPORTER_DEFAULTS, ZipkinReporter } from './reporter.js';
import { parseTrace, TRACE_OPTIONS, type TraceConfig } from './setup.js';

/**
 * Why the datadog endpoint type does not start (README.md, "Datadog"): it is parsed and checked
 * like CoreDNS's, so `-validate` accepts the Corefile, but the server refuses to run without
 * the tracing the Corefile asks for.
 */
export const DATADOG_UNSUPPORTED =
  'endpoint type datadog is not supported by clusterdns: the Datadog agent API (msgpack traces ' +
  'on /v0.4/traces) is not implemented; use the zipkin endpoint type (a Datadog agent with ' +
  'APM can take Zipkin spans through an OpenTelemetry collector)';

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
    if (cfg.endpointType === 'datadog') {
      ctx.onStartup(() => {
        throw new Error(`plugin/trace: ${DATADOG_UNSUPPORTED}`);
      });
    }
    const reporter = new ZipkinReporter({
      url: cfg.endpointType === 'zipkin' ? cfg.endpoint : 'http://localhost:8126/',
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
