/**
 * Query threads (docs/multicore.md), end to end: `bin/clusterdns -workers N` against the sandbox
 * API server: one set of watches whatever N, one scrape with the totals of every thread, a
 * Kubernetes change and a reload reaching every thread, and a clean SIGTERM.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { udpQuery } from '../helpers/dns.js';
import { freePort } from '../helpers/net.js';
import { BIN, watchLines, type LineWatch } from '../helpers/spawn.js';
import { anyError, waitFor } from '../helpers/wait.js';

const ROOT = resolve(import.meta.dirname, '../..');

function httpGet(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolvePromise, reject) => {
    const req = request({ host: '127.0.0.1', port, path, timeout: 10000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Sum of every sample of `name` (any labels) in a Prometheus text scrape. */
function total(scrape: string, name: string): number {
  let sum = 0;
  for (const line of scrape.split('\n')) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

interface Running extends LineWatch {
  dns: number;
  metrics: number;
  ready: number;
  corefile: string;
  /** The server's pid (the launcher execs node in place). */
  pid: number;
  stop(): Promise<number | null>;
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function corefileText(dns: number, ready: number, metrics: number, sb: Sandbox, hostIP: string, extra = ''): string {
  return `.:${dns} {${extra}
    ready 127.0.0.1:${ready}
    prometheus 127.0.0.1:${metrics}
    hosts {
        ${hostIP} probe.example.
        fallthrough
    }
    kubernetes cluster.local {
        endpoint ${sb.url}
    }
}
`;
}

async function start(sb: Sandbox, workers: number, extra = ''): Promise<Running> {
  const [dns, ready, metrics] = [await freePort(), await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-threads-'));
  const corefile = join(dir, 'Corefile');
  writeFileSync(corefile, corefileText(dns, ready, metrics, sb, '10.0.0.1', extra));
  const proc = spawn(process.execPath, [BIN, '-conf', corefile, '-workers', String(workers)], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines = watchLines(proc, { label: 'clusterdns', timeoutMs: 20000 });
  const stop = async (): Promise<number | null> => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    return lines.exited;
  };
  cleanups.push(stop);
  await waitFor('ready', async () => (await httpGet(ready, '/ready')).status === 200, { retry: anyError });
  // Every thread is serving once the main thread counts them all.
  if (workers > 1)
    await waitFor(
      `${workers} query threads`,
      async () => total((await httpGet(metrics, '/metrics')).body, 'clusterdns_query_threads') === workers,
      { retry: anyError },
    );
  return { ...lines, dns, metrics, ready, corefile, pid: proc.pid!, stop };
}

/** `n` queries, each from its own socket (own source port: the kernel spreads them over the threads). */
async function spread(port: number, n: number, name: string): Promise<string[]> {
  const answers: string[] = [];
  for (let i = 0; i < n; i += 20) {
    const batch = await Promise.all(Array.from({ length: Math.min(20, n - i) }, () => udpQuery(port, name, 'A')));
    for (const m of batch) answers.push(m.answers?.map((a) => String((a as { data?: unknown }).data)).join(',') ?? '');
  }
  return answers;
}

describe('query threads share one Kubernetes index and report one set of metrics', () => {
  it('opens one set of API watches whatever the number of threads', async () => {
    const sb = await startSandbox({ files: [join(ROOT, 'examples/cluster.yaml')], log: () => undefined });
    cleanups.push(() => sb.close());
    const one = await start(sb, 1);
    const watchesOfOne = sb.watchCount();
    // services, namespaces, endpointslices
    expect(watchesOfOne).toBe(3);
    expect(await one.stop()).toBe(0);
    await waitFor('the watches of the first server to close', async () => sb.watchCount() === 0, { retry: anyError });
    const three = await start(sb, 3);
    expect(sb.watchCount()).toBe(watchesOfOne);
    // Every thread answers from the copy of the index: 60 queries from 60 source ports.
    const answers = await spread(three.dns, 60, 'kubernetes.default.svc.cluster.local');
    expect(new Set(answers)).toEqual(new Set(['10.96.0.1']));
    // A change on the API server reaches every thread's copy.
    sb.apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'late', namespace: 'default' },
      spec: { clusterIP: '10.96.0.77', ports: [{ name: 'http', port: 80 }] },
    });
    await waitFor(
      'the new service in every thread',
      async () => (await spread(three.dns, 60, 'late.default.svc.cluster.local')).every((a) => a === '10.96.0.77'),
      { retry: anyError },
    );
    expect(sb.watchCount()).toBe(watchesOfOne);
    expect(await three.stop()).toBe(0);
  });

  it("a scrape returns the totals of every thread, and a reload swaps every thread's chain", async () => {
    const sb = await startSandbox({ files: [join(ROOT, 'examples/cluster.yaml')], log: () => undefined });
    cleanups.push(() => sb.close());
    const s = await start(sb, 3);
    const names = [
      'coredns_dns_requests_total',
      'coredns_dns_responses_total',
      'coredns_dns_request_duration_seconds_count',
    ];
    const first = (await httpGet(s.metrics, '/metrics')).body;
    const before = names.map((n) => total(first, n));
    const N = 300;
    const answers = await spread(s.dns, N, 'probe.example');
    expect(answers.every((a) => a === '10.0.0.1')).toBe(true);
    const scrape = (await httpGet(s.metrics, '/metrics')).body;
    expect(names.map((n, i) => total(scrape, n) - before[i]!)).toEqual([N, N, N]);
    // Same names and labels as one process: one line per label set, no thread label. The one
    // per-thread family is each thread's heap bound (docs/multicore.md §3), a line per thread.
    expect(scrape).toMatch(
      /^coredns_dns_requests_total\{server="dns:\/\/:\d+",zone="\.",view="",proto="udp",family="1",type="A"\} \d+$/m,
    );
    expect(scrape.split('\n').filter((l) => l.includes('thread='))).toEqual([
      expect.stringMatching(/^clusterdns_thread_heap_size_limit_bytes\{thread="0"\} \d+$/),
      expect.stringMatching(/^clusterdns_thread_heap_size_limit_bytes\{thread="1"\} \d+$/),
      expect.stringMatching(/^clusterdns_thread_heap_size_limit_bytes\{thread="2"\} \d+$/),
    ]);
    expect(scrape.match(/^coredns_build_info\{/gm)).toHaveLength(1);
    expect(total(scrape, 'coredns_build_info')).toBe(1);

    writeFileSync(s.corefile, corefileText(s.dns, s.ready, s.metrics, sb, '10.0.0.2'));
    s.output.length = 0;
    process.kill(s.pid, 'SIGUSR1');
    await s.waitFor(/Reloading complete/);
    // `Reloading complete` comes once every thread runs the new chain.
    const after = await spread(s.dns, 90, 'probe.example');
    expect(new Set(after)).toEqual(new Set(['10.0.0.2']));
    expect(s.output.filter((l) => /Reloading complete/.test(l))).toHaveLength(1);
    expect(sb.watchCount()).toBe(3);
    expect(await s.stop()).toBe(0);
  });

  it('SIGTERM: every thread keeps answering through the lameduck, then all stop with status 0', async () => {
    const sb = await startSandbox({ files: [join(ROOT, 'examples/cluster.yaml')], log: () => undefined });
    cleanups.push(() => sb.close());
    const health = await freePort();
    // A long lameduck: the queries below go out well inside it (a bound, not a timing).
    const s = await start(sb, 3, `\n    health 127.0.0.1:${health} {\n        lameduck 10s\n    }`);
    process.kill(s.pid, 'SIGTERM');
    await s.waitFor(/SIGTERM: Shutting down servers then terminating/);
    const answers = await spread(s.dns, 60, 'probe.example');
    expect(new Set(answers)).toEqual(new Set(['10.0.0.1']));
    expect(await s.exited).toBe(0);
  }, 60_000);
});
