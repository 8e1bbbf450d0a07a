/**
 * A Zipkin collector for the trace tests: `.bin/zipkin-collector` (tools/zipkin-collector, built by
 * scripts/install-zipkin-collector.sh) on an ephemeral port of 127.0.0.1, and its query API.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { resolve } from 'node:path';
import { httpRequest } from './http.js';
import { watchLines } from './spawn.js';
import { waitFor } from './wait.js';

export const ZIPKIN_COLLECTOR = resolve(import.meta.dirname, '../../.bin/zipkin-collector');

/** A span as the collector's API returns it (Zipkin v2 JSON). */
export interface ZipkinSpan {
  traceId: string;
  id: string;
  parentId?: string;
  name: string;
  kind?: string;
  timestamp?: number;
  duration?: number;
  shared?: boolean;
  debug?: boolean;
  localEndpoint?: { serviceName?: string; ipv4?: string; ipv6?: string; port?: number };
  annotations?: { timestamp: number; value: string }[];
  tags?: Record<string, string>;
}

export interface Collector {
  readonly port: number;
  /** The spans endpoint for a Corefile's `trace` line. */
  readonly url: string;
  /** Every trace holding a span of `serviceName`, oldest first. */
  traces(serviceName: string): Promise<ZipkinSpan[][]>;
  /** The traces of `serviceName` once there are `n` of them, each complete (`spansEach` spans). */
  waitTraces(serviceName: string, n: number, spansEach?: (t: ZipkinSpan[]) => boolean): Promise<ZipkinSpan[][]>;
  /** The number of POSTs and spans received so far. */
  health(): Promise<{ posts: number; spans: number }>;
  stop(): Promise<void>;
}

export async function startCollector(): Promise<Collector> {
  try {
    accessSync(ZIPKIN_COLLECTOR, constants.X_OK);
  } catch {
    throw new Error(
      `${ZIPKIN_COLLECTOR} is missing: run \`bash scripts/install-zipkin-collector.sh\` (builds it through the Go module proxy)`,
    );
  }
  const proc = spawn(ZIPKIN_COLLECTOR, ['-listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = watchLines(proc, { label: 'zipkin-collector', timeoutMs: 20_000 });
  const line = await lines.waitFor(/listening on /);
  const port = Number(/:(\d+)$/.exec(line)![1]);
  const get = async <T>(path: string): Promise<T> => {
    const r = await httpRequest(port, path);
    if (r.status !== 200) throw new Error(`zipkin-collector GET ${path}: ${r.status} ${r.body}`);
    return JSON.parse(r.body) as T;
  };
  const traces = (svc: string): Promise<ZipkinSpan[][]> =>
    get<ZipkinSpan[][]>(`/api/v2/traces?serviceName=${encodeURIComponent(svc)}`);
  return {
    port,
    url: `http://127.0.0.1:${port}/api/v2/spans`,
    traces,
    async waitTraces(svc, n, spansEach = () => true) {
      let last: ZipkinSpan[][] = [];
      return waitFor(
        () => `${n} traces of ${svc} at the collector (have ${last.length}: ${JSON.stringify(last)})`,
        async () => {
          last = await traces(svc);
          return last.length >= n && last.every(spansEach) ? last : null;
        },
      );
    },
    health: () => get<{ posts: number; spans: number }>('/health'),
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await lines.exited;
    },
  };
}

/** The spans of one trace as a tree of names: `servedns(cache(forward(connect)))`. */
export function spanTree(spans: readonly ZipkinSpan[]): string {
  const byParent = new Map<string, ZipkinSpan[]>();
  const ids = new Set(spans.map((s) => s.id));
  const roots: ZipkinSpan[] = [];
  for (const s of spans) {
    if (s.parentId === undefined || !ids.has(s.parentId)) roots.push(s);
    else byParent.set(s.parentId, [...(byParent.get(s.parentId) ?? []), s]);
  }
  const render = (s: ZipkinSpan): string => {
    const kids = (byParent.get(s.id) ?? []).sort((a, b) => (a.timestamp ?? 0) - (b.timestamp ?? 0));
    return kids.length === 0 ? s.name : `${s.name}(${kids.map(render).join(',')})`;
  };
  return roots.map(render).join(' ');
}
