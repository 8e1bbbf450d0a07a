/**
 * `npm run bench`: load each scenario with dnsperf on 127.0.0.1 next to a plain Node UDP/TCP echo
 * server (the ceiling for any Node DNS server here), in the same run, and report QPS at
 * saturation, p50/p99 latency at half of saturation, server CPU and peak RSS, and the ratio to the
 * echo ceiling. Results go to bench/results/ as JSON and Markdown.
 *
 * Usage: npm run bench [-- --duration 5 --only whoami,cache-hit --services 10000]
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, ensureDnsperf, machineDescription, SERVER_NODE_ARGS, percentile, rssMiB, runLoad, startNode, type Proc } from './lib.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const DIST = join(root, 'dist');

interface Args {
  duration: number;
  only: string[] | null;
  services: number;
  workers: number;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { duration: 5, only: null, services: 10_000, workers: 1 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = argv[i + 1];
    if (v === undefined) continue;
    if (k === '--duration') a.duration = Number(v);
    else if (k === '--only') a.only = v.split(',');
    else if (k === '--services') a.services = Number(v);
    else if (k === '--workers') a.workers = Number(v);
    else continue;
    i++;
  }
  return a;
}

export interface Measurement {
  scenario: string;
  proto: 'udp' | 'tcp';
  qps: number;
  p50ms: number;
  p99ms: number;
  cpu: number;
  peakRssMiB: number;
  lost: number;
  rcodes: Record<string, number>;
  ratio?: number;
  ceiling?: string;
}

async function measure(scenario: string, port: number, pid: number, queries: string[], proto: 'udp' | 'tcp', duration: number): Promise<Measurement> {
  // Warm-up (JIT, caches), then saturation, then half load for latency.
  await runLoad({ port, queries, proto, durationS: 1 });
  // Saturation three times; the median run counts (loopback figures vary from run to run).
  const runs: { qps: number; cpu: number; lost: number; rcodes: Record<string, number> }[] = [];
  for (let i = 0; i < 3; i++) {
    const cpu0 = cpuSeconds(pid);
    const r = await runLoad({ port, queries, proto, durationS: duration });
    runs.push({ qps: r.qps, cpu: (cpuSeconds(pid) - cpu0) / duration, lost: r.lost, rcodes: r.rcodes });
  }
  runs.sort((a, b) => a.qps - b.qps);
  const sat = runs[1]!;
  const cpu = sat.cpu;
  const half = await runLoad({ port, queries, proto, durationS: Math.max(2, Math.ceil(duration / 2)), maxQps: sat.qps / 2, latencies: true });
  return {
    scenario,
    proto,
    qps: Math.round(sat.qps),
    p50ms: percentile(half.latencies, 50) * 1000,
    p99ms: percentile(half.latencies, 99) * 1000,
    cpu: Number(cpu.toFixed(2)),
    peakRssMiB: Number(rssMiB(pid).peak.toFixed(1)),
    lost: sat.lost,
    rcodes: sat.rcodes,
  };
}

async function startClusterdns(corefile: string, port: number, workers: number): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-bench-'));
  const path = join(dir, 'Corefile');
  writeFileSync(path, corefile);
  const args = ['-conf', path, '-dns.port', String(port)];
  if (workers > 1) args.push('-workers', String(workers));
  // Several workers may use every core (the load generator then competes with them).
  return startNode(join(root, 'bin/clusterdns'), args, /^clusterdns-\d/, workers > 1 ? null : 0, {}, SERVER_NODE_ARGS);
}

let nextPort = 20000 + Math.floor(Math.random() * 20000);
const port = () => nextPort++;

async function listServices(url: string): Promise<{ name: string; ns: string; headless: boolean }[]> {
  const res = await fetch(`${url}/api/v1/services`);
  const body = (await res.json()) as { items: { metadata: { name: string; namespace: string }; spec: { clusterIP?: string } }[] };
  return body.items.map((s) => ({ name: s.metadata.name, ns: s.metadata.namespace, headless: s.spec.clusterIP === 'None' }));
}

function shuffle<T>(a: T[]): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  ensureDnsperf();
  const want = (s: string) => args.only === null || args.only.includes(s);
  const results: Measurement[] = [];
  const log = (m: Measurement) => {
    results.push(m);
    process.stdout.write(`${m.scenario.padEnd(22)} ${m.proto}  ${String(m.qps).padStart(7)} qps  p50 ${m.p50ms.toFixed(3)} ms  p99 ${m.p99ms.toFixed(3)} ms  cpu ${m.cpu}  rss ${m.peakRssMiB} MiB${m.ratio !== undefined ? `  ratio ${m.ratio.toFixed(2)} of ${m.ceiling}` : ''}\n`);
  };

  // The ceiling: a Node echo server, UDP and TCP, measured before and again after the scenarios;
  // ratios use the higher of the two (loopback throughput drifts during a run).
  const ceiling: Record<string, number> = {};
  const measureEcho = async (label: string): Promise<void> => {
    const echoPort = port();
    const echo = await startNode(join(DIST, 'bench/echo.js'), [String(echoPort)], /echo listening/, 0);
    for (const proto of ['udp', 'tcp'] as const) {
      const m = await measure(label, echoPort, echo.pid, ['example.org A'], proto, args.duration);
      ceiling[proto] = Math.max(ceiling[proto] ?? 0, m.qps);
      log(m);
    }
    await echo.stop();
  };
  await measureEcho('echo (ceiling)');
  const rel = (m: Measurement, base = 'echo') => {
    m.ceiling = base === 'echo' ? `echo/${m.proto}` : base;
    m.ratio = m.qps / (base === 'echo' ? ceiling[m.proto]! : ceiling[base]!);
    return m;
  };

  if (want('whoami')) {
    const p = port();
    const s = await startClusterdns(`.:${p} {\n  whoami\n}\n`, p, args.workers);
    for (const proto of ['udp', 'tcp'] as const) log(rel(await measure('whoami', p, s.pid, ['example.org A'], proto, args.duration)));
    await s.stop();
  }

  if (want('cache-hit') || want('cache-miss')) {
    const up = port();
    const upstream = await startNode(join(DIST, 'bench/upstream.js'), [String(up)], /upstream listening/, 1);
    const names = Array.from({ length: 1000 }, (_, i) => `host${i}.example.com A`);
    if (want('cache-miss')) {
      const upM = await measure('upstream (ceiling)', up, upstream.pid, names, 'udp', args.duration);
      ceiling.upstream = upM.qps;
      log(upM);
      const p = port();
      const s = await startClusterdns(`.:${p} {\n  forward . 127.0.0.1:${up}\n}\n`, p, args.workers);
      log(rel(await measure('cache-miss (forward)', p, s.pid, names, 'udp', args.duration), 'upstream'));
      await s.stop();
    }
    if (want('cache-hit')) {
      const p = port();
      const s = await startClusterdns(`.:${p} {\n  cache 3600\n  forward . 127.0.0.1:${up}\n}\n`, p, args.workers);
      for (const proto of ['udp', 'tcp'] as const) log(rel(await measure('cache-hit', p, s.pid, names, proto, args.duration)));
      await s.stop();
    }
    await upstream.stop();
  }

  if (want('k8s-service') || want('k8s-srv')) {
    const sandbox = await startNode(join(DIST, 'sandbox/main.js'), ['--port', '0', '--synthetic-services', String(args.services), '--synthetic-pods', String(args.services * 3)], /listening on (http:\/\/\S+)/, 1);
    const url = /listening on (http:\/\/\S+)/.exec(sandbox.output.join('\n'))![1]!;
    const svcs = await listServices(url);
    const p = port();
    const s = await startClusterdns(`cluster.local:${p} {\n  kubernetes cluster.local {\n    endpoint ${url}\n  }\n}\n`, p, args.workers);
    if (want('k8s-service')) {
      const q: string[] = [];
      for (const sv of shuffle([...svcs]).slice(0, 20000)) q.push(`${sv.name}.${sv.ns}.svc.cluster.local ${Math.random() < 0.8 ? 'A' : 'AAAA'}`);
      const n = q.length;
      for (let i = 0; i < n / 9; i++) q.push(`missing-${i}.${svcs[i % svcs.length]!.ns}.svc.cluster.local A`); // 10 % NXDOMAIN
      shuffle(q);
      for (const proto of ['udp', 'tcp'] as const) log(rel(await measure('k8s-service A/AAAA', p, s.pid, q, proto, args.duration)));
    }
    if (want('k8s-srv')) {
      const hl = svcs.filter((x) => x.headless);
      const q = hl.map((x) => `${x.name}.${x.ns}.svc.cluster.local SRV`);
      if (q.length) log(rel(await measure('k8s-srv headless', p, s.pid, q, 'udp', args.duration)));
    }
    await s.stop();
    await sandbox.stop();
  }

  await measureEcho('echo (ceiling, again)');
  for (const m of results) if (m.ceiling?.startsWith('echo/')) m.ratio = m.qps / ceiling[m.proto]!;

  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const outDir = join(root, 'bench/results');
  mkdirSync(outDir, { recursive: true });
  const machine = machineDescription();
  writeFileSync(join(outDir, `bench-${stamp}.json`), `${JSON.stringify({ machine, duration: args.duration, workers: args.workers, results }, null, 2)}\n`);
  const md = [
    `# clusterdns benchmark ${new Date().toISOString()}`,
    '',
    `Machine: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}. Load: dnsperf on 127.0.0.1, ${args.duration}s per run, median of three saturation runs; server and load generator pinned to different cores. Workers: ${args.workers}.`,
    '',
    '| scenario | proto | QPS (saturation) | p50 ms (half load) | p99 ms (half load) | server CPU | peak RSS MiB | ratio to ceiling |',
    '|---|---|---:|---:|---:|---:|---:|---|',
    ...results.map((m) => `| ${m.scenario} | ${m.proto} | ${m.qps} | ${m.p50ms.toFixed(3)} | ${m.p99ms.toFixed(3)} | ${m.cpu} | ${m.peakRssMiB} | ${m.ratio !== undefined ? `${m.ratio.toFixed(2)} (${m.ceiling})` : '—'} |`),
    '',
  ].join('\n');
  writeFileSync(join(outDir, `bench-${stamp}.md`), md);
  writeFileSync(join(outDir, 'latest.md'), md);
  process.stdout.write(`\nwrote bench/results/bench-${stamp}.{json,md}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
