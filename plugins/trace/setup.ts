/**
 * The `trace` directive's options (README.md), read as CoreDNS 1.15.0's `traceParse` reads them:
 * every occurrence in the block sets the same configuration (a later value wins), values that Go's
 * strconv or time rejects fail with Go's message and no location, argument counts with Caddy's.
 */
import { directive, option, parseOccurrences, str } from '../../src/corefile/options.js';
import type { Dispenser } from '../../src/corefile/dispenser.js';
import { BareSetupError, type ConfigError } from '../../src/corefile/types.js';
import { DurationError, parseGoDuration } from '../../src/util/duration.js';

export const TRACE_OPTIONS = directive('trace', {
  args: { rest: str('ENDPOINT'), min: 0, max: 2 },
  options: [
    option('every', { args: [str('AMOUNT')] }),
    option('service', { args: [str('NAME')] }),
    option('client_server', { rest: str('BOOL'), min: 0, max: 1 }),
    option('datadog_analytics_rate', { rest: str('RATE'), min: 0, max: 1 }),
    option('zipkin_max_backlog_size', { args: [str('SIZE')] }),
    option('zipkin_max_batch_size', { args: [str('SIZE')] }),
    option('zipkin_max_batch_interval', { args: [str('DURATION')] }),
  ],
});

export type EndpointType = 'zipkin' | 'datadog';

export interface TraceConfig {
  endpointType: EndpointType;
  /** Zipkin: the collector's URL; datadog: the agent's `host:port`. */
  endpoint: string;
  serviceName: string;
  clientServer: boolean;
  /** Trace one query in `every`; 0 traces none. */
  every: number;
  datadogAnalyticsRate: number;
  /** 0: zipkin-go's default. */
  zipkinMaxBacklogSize: number;
  zipkinMaxBatchSize: number;
  /** Milliseconds; 0: zipkin-go's default. */
  zipkinMaxBatchIntervalMs: number;
}

const DEFAULT_ENDPOINTS: Record<EndpointType, string> = { zipkin: 'localhost:9411', datadog: 'localhost:8126' };

/** CoreDNS's normalizeEndpoint: the type checked, the default endpoint, Zipkin's URL. */
function normalizeEndpoint(epType: string, ep: string, fail: (m: string) => ConfigError): [EndpointType, string] {
  if (epType !== 'zipkin' && epType !== 'datadog') throw fail(`tracing endpoint type '${epType}' is not supported`);
  let endpoint = ep === '' ? DEFAULT_ENDPOINTS[epType] : ep;
  if (epType === 'zipkin') {
    const lower = endpoint.toLowerCase();
    if (!lower.startsWith('http://') && !lower.startsWith('https://')) endpoint = `http://${endpoint}/api/v2/spans`;
  }
  return [epType, endpoint];
}

/** Go's strconv.ParseUint(s, 10, 64). */
function parseUint(s: string, fail: (m: string) => ConfigError): number {
  if (!/^\d+$/.test(s)) throw fail(`strconv.ParseUint: parsing ${JSON.stringify(s)}: invalid syntax`);
  if (BigInt(s) > 0xffffffffffffffffn)
    throw fail(`strconv.ParseUint: parsing ${JSON.stringify(s)}: value out of range`);
  return Number(s);
}

/** Go's strconv.Atoi. */
function atoi(s: string, fail: (m: string) => ConfigError): number {
  if (!/^[+-]?\d+$/.test(s)) throw fail(`strconv.Atoi: parsing ${JSON.stringify(s)}: invalid syntax`);
  const n = BigInt(s);
  if (n > 0x7fffffffffffffffn || n < -0x8000000000000000n)
    throw fail(`strconv.Atoi: parsing ${JSON.stringify(s)}: value out of range`);
  return Number(n);
}

/** Go's strconv.ParseBool. */
function parseBool(s: string, fail: (m: string) => ConfigError): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(s)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(s)) return false;
  throw fail(`strconv.ParseBool: parsing ${JSON.stringify(s)}: invalid syntax`);
}

/** Go's strconv.ParseFloat(s, 64) for decimal text (and inf/nan, which Go accepts too). */
function parseFloat64(s: string, fail: (m: string) => ConfigError): number {
  const t = s.replace(/^[+-]/, '');
  if (/^(inf|infinity)$/i.test(t)) return s.startsWith('-') ? -Infinity : Infinity;
  if (/^nan$/i.test(s)) return Number.NaN;
  if (!/^(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t))
    throw fail(`strconv.ParseFloat: parsing ${JSON.stringify(s)}: invalid syntax`);
  const v = Number(s);
  if (!Number.isFinite(v)) throw fail(`strconv.ParseFloat: parsing ${JSON.stringify(s)}: value out of range`);
  return v;
}

/** Parse every `trace` occurrence of the block (the Dispenser before the first). */
export function parseTrace(d: Dispenser): TraceConfig {
  const cfg: TraceConfig = {
    endpointType: 'zipkin',
    endpoint: '',
    serviceName: 'coredns',
    clientServer: false,
    every: 1,
    datadogAnalyticsRate: 0,
    zipkinMaxBacklogSize: 0,
    zipkinMaxBatchSize: 0,
    zipkinMaxBatchIntervalMs: 0,
  };
  parseOccurrences(d, TRACE_OPTIONS, (occ) => {
    const at = occ.directive.token;
    const fail = (m: string): ConfigError => new BareSetupError(m, at.file, at.line, 'trace');
    const args = occ.directive.raw;
    if (args.length === 2) [cfg.endpointType, cfg.endpoint] = normalizeEndpoint(args[0]!.toLowerCase(), args[1]!, fail);
    else [cfg.endpointType, cfg.endpoint] = normalizeEndpoint('zipkin', args[0] ?? '', fail);
    // Options apply in file order, as CoreDNS's loop sets them.
    for (const o of occ.options) {
      const v = o.raw[0];
      switch (o.name) {
        case 'every':
          cfg.every = parseUint(v!, fail);
          break;
        case 'service':
          cfg.serviceName = v!;
          break;
        case 'client_server':
          cfg.clientServer = v === undefined ? true : parseBool(v, fail);
          break;
        case 'datadog_analytics_rate': {
          const rate = v === undefined ? 0 : parseFloat64(v, fail);
          if (rate > 1 || rate < 0)
            throw fail(`datadog analytics rate must be between 0 and 1, '${goFloatF(rate)}' is not supported`);
          cfg.datadogAnalyticsRate = rate;
          break;
        }
        case 'zipkin_max_backlog_size':
          cfg.zipkinMaxBacklogSize = atoi(v!, fail);
          break;
        case 'zipkin_max_batch_size':
          cfg.zipkinMaxBatchSize = atoi(v!, fail);
          break;
        case 'zipkin_max_batch_interval':
          try {
            cfg.zipkinMaxBatchIntervalMs = parseGoDuration(v!);
          } catch (e) {
            if (e instanceof DurationError) throw fail(e.message);
            throw e;
          }
          break;
      }
    }
  });
  return cfg;
}

/** Go's `%f`. */
function goFloatF(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return v.toFixed(6);
}
