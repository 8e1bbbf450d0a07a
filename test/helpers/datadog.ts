/**
 * A stand-in Datadog agent for the trace tests: `.bin/datadog-agent` (tools/datadog-agent, built
 * by scripts/install-datadog-agent.sh) on an ephemeral port of 127.0.0.1. It decodes what it is
 * sent with the agent's own msgpack code and shows it as JSON.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { resolve } from 'node:path';
import { httpRequest } from './http.js';
import { watchLines } from './spawn.js';
import { waitFor } from './wait.js';

export const DATADOG_AGENT = resolve(import.meta.dirname, '../../.bin/datadog-agent');

/** A span as the agent decoded it (its pb.Span; ids as decimal strings). */
export interface DatadogSpan {
  service: string;
  name: string;
  resource: string;
  trace_id: string;
  span_id: string;
  parent_id: string;
  start: number;
  duration: number;
  error: number;
  meta: Record<string, string>;
  metrics: Record<string, number>;
  type: string;
}

/** One trace request: its method, path and headers, and how many traces and spans it held. */
export interface DatadogRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  traces: number;
  spans: number;
}

export interface DatadogAgent {
  readonly port: number;
  /** `host:port` for a Corefile's `trace datadog` line. */
  readonly addr: string;
  /** Every trace received, in the order received. */
  traces(): Promise<DatadogSpan[][]>;
  /** The traces once there are at least `n`. */
  waitTraces(n: number): Promise<DatadogSpan[][]>;
  /** The trace requests, and the other paths asked for (`METHOD /path`). */
  requests(): Promise<{ traces: DatadogRequest[]; other: string[] }>;
  stop(): Promise<void>;
}

export async function startDatadogAgent(): Promise<DatadogAgent> {
  try {
    accessSync(DATADOG_AGENT, constants.X_OK);
  } catch {
    throw new Error(
      `${DATADOG_AGENT} is missing: run \`bash scripts/install-datadog-agent.sh\` (builds it through the Go module proxy)`,
    );
  }
  const proc = spawn(DATADOG_AGENT, ['-listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = watchLines(proc, { label: 'datadog-agent', timeoutMs: 20_000 });
  const line = await lines.waitFor(/listening on /);
  const port = Number(/:(\d+)$/.exec(line)![1]);
  const get = async <T>(path: string): Promise<T> => {
    const r = await httpRequest(port, path);
    if (r.status !== 200) throw new Error(`datadog-agent GET ${path}: ${r.status} ${r.body}`);
    return JSON.parse(r.body) as T;
  };
  const traces = (): Promise<DatadogSpan[][]> => get<DatadogSpan[][]>('/test/traces');
  return {
    port,
    addr: `127.0.0.1:${port}`,
    traces,
    async waitTraces(n) {
      let last: DatadogSpan[][] = [];
      return waitFor(
        () => `${n} traces at the Datadog agent (have ${last.length}: ${JSON.stringify(last)})`,
        async () => {
          last = await traces();
          return last.length >= n ? last : null;
        },
      );
    },
    requests: () => get<{ traces: DatadogRequest[]; other: string[] }>('/test/requests'),
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await lines.exited;
    },
  };
}
