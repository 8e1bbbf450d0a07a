/**
 * `npm run bench`: load each scenario with dnsperf on 127.0.0.1 next to a plain Node UDP/TCP echo
 * server (the ceiling for any Node DNS server here), in the same run, and report QPS at
 * saturation, p50/p99 latency at half of saturation, server CPU and peak RSS, and the ratio to the
 * echo ceiling. Results are printed and written to bench/results/ (ignored by git).
 *
 * Usage: npm run bench [-- --duration 5 --only whoami,cache-hit --services 10000 --workers 1]
 *        npm run bench -- --baseline ../other-checkout   (A/B: that build is every row's ceiling)
 *        npm run bench -- --memory       (RSS beside CoreDNS 1.15.0: sync, forced relist, load; bench/memory.ts)
 *        npm run bench -- --vs-coredns   (beside CoreDNS 1.15.0 on one and two cores, bench/vscoredns.ts)
 *        npm run bench -- --grpc         (DNS over gRPC answers per CPU-second beside CoreDNS; bench/grpc.ts)
 *        npm run bench -- --axfr         (AXFR of cluster.local: RSS growth, other queries' p99; bench/axfr.ts)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  cpuSeconds,
  encodeSimpleQuery,
  ensureDnsperf,
  kubeadmCorefile,
  machineDescription,
  median as medianOf,
  pinTo,
  SERVER_NODE_ARGS,
  startProcess,
  percentile,
  rssMiB,
  runH2load,
  runLoad,
  shuffle,
  startNode,
  startSyntheticSandbox,
  writeResults,
  type Proc,
} from './lib.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const DIST = join(root, 'dist');

interface Args {
  /** Another checkout (built): its server is the ceiling of every scenario instead of the echo. */
  baseline: string | null;
  duration: number;
  only: string[] | null;
  services: number;
  workers: number;
  /** Interleaved rounds of the dnstap and trace scenarios. */
  rounds: number;
  /** `every` of the trace scenario. */
  traceEvery: number;
  /** dnsperf clients (`-c`) in the dnstap scenario. */
  clients: number;
}

function parseArgs(argv: string[]): Args {
  const a: Args = {
    baseline: null,
    duration: 5,
    only: null,
    services: 10_000,
    workers: 1,
    rounds: 3,
    clients: 1,
    traceEvery: 1,
  };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = argv[i + 1];
    if (v === undefined) continue;
    if (k === '--duration') a.duration = Number(v);
    else if (k === '--only') a.only = v.split(',');
    else if (k === '--services') a.services = Number(v);
    else if (k === '--workers') a.workers = Number(v);
    else if (k === '--rounds') a.rounds = Number(v);
    else if (k === '--trace-every') a.traceEvery = Number(v);
    else if (k === '--clients') a.clients = Number(v);
    else if (k === '--baseline') a.baseline = resolve(v);
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
  /** The ceiling measured in alternation with this scenario (see measurePair). */
  ceiling?: { name: string; qps: number; p50ms: number; p99ms: number; cpu: number; runs: number[] };
  /** qps / ceiling qps. */
  ratio?: number;
  /** p99 at half load / the ceiling's p99 at its half load. */
  p99Ratio?: number;
  /** The saturation runs (qps), in order. */
  runs: number[];
}

/** A server under test: where to send which queries. */
interface Target {
  name: string;
  port: number;
  pid: number;
  queries: string[];
  /** Run before each load of this target (e.g. move the upstream to another core). */
  prepare?: () => void;
}

async function saturate(
  t: Target,
  proto: 'udp' | 'tcp',
  duration: number,
): Promise<{ qps: number; cpu: number; lost: number; rcodes: Record<string, number> }> {
  t.prepare?.();
  const cpu0 = cpuSeconds(t.pid);
  const r = await runLoad({ port: t.port, queries: t.queries, proto, durationS: duration });
  return { qps: r.qps, cpu: (cpuSeconds(t.pid) - cpu0) / duration, lost: r.lost, rcodes: r.rcodes };
}

async function halfLoad(
  t: Target,
  proto: 'udp' | 'tcp',
  saturation: number,
  duration: number,
): Promise<{ p50ms: number; p99ms: number }> {
  t.prepare?.();
  const r = await runLoad({
    port: t.port,
    queries: t.queries,
    proto,
    durationS: Math.max(2, Math.ceil(duration / 2)),
    maxQps: saturation / 2,
    latencies: true,
  });
  return { p50ms: percentile(r.latencies, 50) * 1000, p99ms: percentile(r.latencies, 99) * 1000 };
}

const median = <T extends { qps: number }>(runs: T[]): T => [...runs].sort((a, b) => a.qps - b.qps)[runs.length >> 1]!;

/**
 * A scenario and its ceiling measured in alternation: warm-up of both, then three rounds of
 * (ceiling at saturation, scenario at saturation), medians compared, then three rounds of each at
 * half of its own saturation for latency (medians of p50 and p99). Loopback throughput on a shared VM drifts by tens of percent over a
 * minute; measuring the two side by side, seconds apart, keeps the ratio about the server and not
 * about the drift. Both processes stay up throughout, pinned to the same core; only one is loaded.
 */
async function measurePair(s: Target, c: Target, proto: 'udp' | 'tcp', duration: number): Promise<Measurement> {
  for (const t of [c, s]) {
    t.prepare?.();
    await runLoad({ port: t.port, queries: t.queries, proto, durationS: 1 });
  }
  const sRuns: Awaited<ReturnType<typeof saturate>>[] = [];
  const cRuns: Awaited<ReturnType<typeof saturate>>[] = [];
  for (let i = 0; i < 3; i++) {
    cRuns.push(await saturate(c, proto, duration));
    sRuns.push(await saturate(s, proto, duration));
  }
  const sat = median(sRuns);
  const ceil = median(cRuns);
  // Latency: three alternating runs each, medians of p50 and p99 (one run's p99 is at the mercy
  // of a single pause anywhere on the machine).
  const cHalves: { p50ms: number; p99ms: number }[] = [];
  const sHalves: { p50ms: number; p99ms: number }[] = [];
  for (let i = 0; i < 3; i++) {
    cHalves.push(await halfLoad(c, proto, ceil.qps, duration));
    sHalves.push(await halfLoad(s, proto, sat.qps, duration));
  }
  const mid = (xs: number[]): number => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;
  const cHalf = { p50ms: mid(cHalves.map((h) => h.p50ms)), p99ms: mid(cHalves.map((h) => h.p99ms)) };
  const sHalf = { p50ms: mid(sHalves.map((h) => h.p50ms)), p99ms: mid(sHalves.map((h) => h.p99ms)) };
  return {
    scenario: s.name,
    proto,
    qps: Math.round(sat.qps),
    p50ms: sHalf.p50ms,
    p99ms: sHalf.p99ms,
    cpu: Number(sat.cpu.toFixed(2)),
    peakRssMiB: Number(rssMiB(s.pid).peak.toFixed(1)),
    lost: sat.lost,
    rcodes: sat.rcodes,
    runs: sRuns.map((r) => Math.round(r.qps)),
    ceiling: {
      name: c.name,
      qps: Math.round(ceil.qps),
      p50ms: cHalf.p50ms,
      p99ms: cHalf.p99ms,
      cpu: Number(ceil.cpu.toFixed(2)),
      runs: cRuns.map((r) => Math.round(r.qps)),
    },
    ratio: sat.qps / ceil.qps,
    p99Ratio: sHalf.p99ms / cHalf.p99ms,
  };
}

async function startClusterdns(corefile: string, port: number, workers: number, checkout = root): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-bench-'));
  const path = join(dir, 'Corefile');
  writeFileSync(path, corefile);
  const args = ['-conf', path, '-dns.port', String(port)];
  // Always explicit: the default sizes threads from the machine (docs/multicore.md §4).
  args.push('-workers', String(workers));
  // Several workers may use every core (the load generator then competes with them).
  return startNode(
    join(checkout, 'bin/clusterdns'),
    args,
    /^clusterdns-\d/,
    workers > 1 ? null : 0,
    {},
    SERVER_NODE_ARGS,
  );
}

/** The real CoreDNS (`coredns`, from scripts/install-coredns.sh) on `corefile`, pinned to CPU 0. */
async function startCoreDNS(coredns: string, corefile: string): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'coredns-bench-'));
  const path = join(dir, 'Corefile');
  writeFileSync(path, corefile);
  const proc = await startProcess('coredns', coredns, ['-conf', path], /^CoreDNS-1\./);
  pinTo(proc.pid, 0);
  return proc;
}

/** The records a server said it dropped (`Dropped dnstap messages: N` lines, CoreDNS's and ours). */
function droppedRecords(p: Proc): number {
  let n = 0;
  for (const l of p.output) {
    const m = /Dropped dnstap messages: (\d+)/.exec(l);
    if (m) n += Number(m[1]);
  }
  return n;
}

/** One saturation run of the dnstap scenario, with where the CPU went. */
interface TapRun {
  qps: number;
  lost: number;
  /** Server CPU over the run, in cores. */
  cpu: number;
  perCpu: number;
  /** The collector's CPU over the run, in cores. */
  sinkCpu: number;
  /** Busy fraction of CPU 0 and CPU 1 over the run (/proc/stat): which side was the limit. */
  busy: number[];
}

/** Busy and total jiffies per CPU (/proc/stat `cpuN` lines). */
function cpuTimes(): { busy: number; total: number }[] {
  const out: { busy: number; total: number }[] = [];
  for (const l of readFileSync('/proc/stat', 'utf8').split('\n')) {
    const m = /^cpu(\d+) (.*)$/.exec(l);
    if (!m) continue;
    const f = m[2]!.trim().split(/\s+/).map(Number);
    const idle = (f[3] ?? 0) + (f[4] ?? 0);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    out[Number(m[1])] = { busy: total - idle, total };
  }
  return out;
}

const loadOf = (t: Target) => ({ port: t.port, queries: t.queries, proto: 'udp' as const, durationS: 1 });

async function tapRun(t: Target, sinkPid: number, duration: number, clients: number): Promise<TapRun> {
  const c0 = cpuSeconds(t.pid);
  const s0 = cpuSeconds(sinkPid);
  const b0 = cpuTimes();
  const r = await runLoad({ ...loadOf(t), durationS: duration, clients });
  const b1 = cpuTimes();
  const cpu = (cpuSeconds(t.pid) - c0) / duration;
  return {
    qps: r.qps,
    lost: r.lost,
    cpu,
    perCpu: r.qps / cpu,
    sinkCpu: (cpuSeconds(sinkPid) - s0) / duration,
    busy: b1.map((x, i) => (x.busy - b0[i]!.busy) / Math.max(1, x.total - b0[i]!.total)),
  };
}

let nextPort = 20000 + Math.floor(Math.random() * 20000);
const port = () => nextPort++;

async function listServices(url: string): Promise<{ name: string; ns: string; headless: boolean }[]> {
  const res = await fetch(`${url}/api/v1/services`);
  const body = (await res.json()) as {
    items: { metadata: { name: string; namespace: string }; spec: { clusterIP?: string } }[];
  };
  return body.items.map((s) => ({
    name: s.metadata.name,
    ns: s.metadata.namespace,
    headless: s.spec.clusterIP === 'None',
  }));
}

/** A server pair of an on/off scenario: whoami alone, and whoami behind the plugin measured. */
interface OnOffPair {
  name: string;
  off: Target;
  on: Target;
  onProc: Proc;
  offProc: Proc;
}

/**
 * What a plugin costs per answer: whoami behind it (`onCorefile`) against whoami alone, for this
 * build, the `--baseline` build and CoreDNS 1.15.0 (when `.bin/coredns` is there). Every server of
 * every pair is up for the whole scenario (all on CPU 0, only the one being loaded busy); the
 * `--rounds` interleave them, order flipped each round, so a drift of the machine's speed lands on
 * every server alike and each round's ratio comes from two runs seconds apart. The `sink` (the
 * plugin's collector) runs on the load core; its CPU is reported, counted for neither server. One
 * note per server: the per-round ratios of answers per CPU-second on / off, their median and spread.
 */
async function onOffRounds(
  args: Args,
  notes: string[],
  o: { label: string; on: string; sink: Proc; baseline: boolean },
  onCorefile: (port: number) => string,
  extra: (pr: OnOffPair) => string,
): Promise<void> {
  const plain = (p: number) => `.:${p} {\n  whoami\n}\n`;
  const servers: { name: string; start: (corefile: string, p: number) => Promise<Proc> }[] = [
    { name: 'clusterdns', start: (c, p) => startClusterdns(c, p, args.workers) },
  ];
  // With --baseline, the other build's pair too (when it has the plugin), between this build's
  // and CoreDNS's.
  const other = args.baseline;
  if (other !== null && o.baseline)
    servers.push({ name: 'clusterdns (baseline)', start: (c, p) => startClusterdns(c, p, args.workers, other) });
  const coredns = join(root, '.bin/coredns');
  if (existsSync(coredns)) servers.push({ name: 'CoreDNS', start: (c) => startCoreDNS(coredns, c) });
  else process.stdout.write(`${o.label}: .bin/coredns is missing (bash scripts/install-coredns.sh): no CoreDNS pair\n`);
  const pairs: OnOffPair[] = [];
  for (const srv of servers) {
    process.stdout.write(`${o.label}: starting ${srv.name} (whoami, and whoami with ${o.on})\n`);
    const pp = port();
    const offProc = await srv.start(plain(pp), pp);
    const tp = port();
    const onProc = await srv.start(onCorefile(tp), tp);
    const q = ['example.org A'];
    pairs.push({
      name: srv.name,
      off: { name: `${srv.name} whoami`, port: pp, pid: offProc.pid, queries: q },
      on: { name: `${srv.name} ${o.on}`, port: tp, pid: onProc.pid, queries: q },
      onProc,
      offProc,
    });
  }
  for (const pr of pairs) for (const t of [pr.off, pr.on]) await runLoad({ ...loadOf(t), durationS: 1 });
  const runs = new Map<string, { off: TapRun[]; on: TapRun[] }>(pairs.map((pr) => [pr.name, { off: [], on: [] }]));
  for (let r = 0; r < args.rounds; r++) {
    for (const pr of pairs) {
      // Order flipped each round: neither side always runs first after another server's turn.
      const order = r % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const);
      for (const side of order) {
        const x = await tapRun(pr[side], o.sink.pid, args.duration, args.clients);
        runs.get(pr.name)![side].push(x);
        process.stdout.write(
          `${o.label}: round ${r + 1}/${args.rounds} ${pr[side].name}: ${Math.round(x.qps)} qps, server ${x.cpu.toFixed(2)} of a core (${Math.round(x.perCpu)} answers per CPU-second), collector ${x.sinkCpu.toFixed(2)}, CPU 0 busy ${x.busy[0]!.toFixed(2)}, CPU 1 busy ${x.busy[1]!.toFixed(2)}, lost ${x.lost}\n`,
        );
      }
    }
  }
  for (const pr of pairs) {
    const x = runs.get(pr.name)!;
    const ratios = x.on.map((on, i) => on.perCpu / x.off[i]!.perCpu);
    const util = [...x.on, ...x.off].map((v) => v.cpu);
    const note = `${pr.name}: answers per CPU-second with ${o.on} / without, ${ratios.length} interleaved rounds: median ${medianOf(ratios).toFixed(3)} (rounds ${ratios.map((v) => v.toFixed(3)).join(', ')}; spread ${(Math.max(...ratios) - Math.min(...ratios)).toFixed(3)}); median ${Math.round(medianOf(x.on.map((v) => v.perCpu)))} / ${Math.round(medianOf(x.off.map((v) => v.perCpu)))}, QPS ${Math.round(medianOf(x.on.map((v) => v.qps)))} / ${Math.round(medianOf(x.off.map((v) => v.qps)))}; server busy ${Math.min(...util).toFixed(2)}–${Math.max(...util).toFixed(2)} of a core; ${extra(pr)}`;
    process.stdout.write(`${note}\n`);
    notes.push(`- ${note}`);
    await pr.onProc.stop();
    await pr.offProc.stop();
  }
}

async function main(): Promise<void> {
  if (process.argv.includes('--memory')) {
    // Resident memory beside CoreDNS 1.15.0: sync, forced relist, load (bench/memory.ts).
    const { runMemory } = await import('./memory.js');
    return runMemory(process.argv.slice(2));
  }
  if (process.argv.includes('--vs-coredns')) {
    // clusterdns beside CoreDNS 1.15.0 on one and two cores (bench/vscoredns.ts).
    const { runVsCoreDNS } = await import('./vscoredns.js');
    return runVsCoreDNS(process.argv.slice(2));
  }
  if (process.argv.includes('--grpc')) {
    // DNS over gRPC answers per CPU-second beside CoreDNS 1.15.0 (bench/grpc.ts).
    const { runGrpc } = await import('./grpc.js');
    return runGrpc(process.argv.slice(2));
  }
  if (process.argv.includes('--multisocket')) {
    // Answers per CPU-second of one thread with 1, 2, N sockets per address (bench/multisocket.ts).
    const { runMultisocket } = await import('./multisocket.js');
    return runMultisocket(process.argv.slice(2));
  }
  if (process.argv.includes('--shed')) {
    // shed under twice the saturating load: p99 of the answered queries against half load (bench/shed.ts).
    const { runShed } = await import('./shed.js');
    return runShed(process.argv.slice(2));
  }
  if (process.argv.includes('--axfr')) {
    // AXFR of cluster.local beside CoreDNS 1.15.0: RSS growth, other queries' p99 (bench/axfr.ts).
    const { runAxfr } = await import('./axfr.js');
    return runAxfr(process.argv.slice(2));
  }
  const args = parseArgs(process.argv.slice(2));
  ensureDnsperf();
  const want = (s: string) => args.only === null || args.only.includes(s);
  const results: Measurement[] = [];
  const log = (m: Measurement) => {
    results.push(m);
    const c = m.ceiling!;
    process.stdout.write(
      `${m.scenario.padEnd(22)} ${m.proto}  ${String(m.qps).padStart(7)} qps  p50 ${m.p50ms.toFixed(3)} ms  p99 ${m.p99ms.toFixed(3)} ms  cpu ${m.cpu}  rss ${m.peakRssMiB} MiB` +
        `  | ${c.name} ${c.qps} qps p99 ${c.p99ms.toFixed(3)} ms  | ratio ${m.ratio!.toFixed(2)}  p99 ratio ${m.p99Ratio!.toFixed(2)}\n`,
    );
  };

  // The ceiling: a Node echo server (UDP and TCP), up for the whole run and measured next to
  // every scenario (measurePair).
  const echoPort = port();
  const echoProc = await startNode(join(DIST, 'bench/echo.js'), [String(echoPort)], /echo listening/, 0);
  const echo = (queries: string[]): Target => ({ name: 'echo', port: echoPort, pid: echoProc.pid, queries });
  /** The same server in another checkout (--baseline), else null. */
  const baseline = async (
    corefile: (p: number) => string,
    queries: string[],
  ): Promise<{ target: Target; proc: Proc } | null> => {
    if (!args.baseline) return null;
    const p = port();
    const proc = await startClusterdns(corefile(p), p, args.workers, args.baseline);
    return { target: { name: 'baseline', port: p, pid: proc.pid, queries }, proc };
  };
  /** Measure `t` against the baseline server when there is one, else against the echo. */
  const scenario = async (
    t: Target,
    corefile: (p: number) => string,
    protos: readonly ('udp' | 'tcp')[],
  ): Promise<void> => {
    const b = await baseline(corefile, t.queries);
    for (const proto of protos) log(await measurePair(t, b?.target ?? echo(t.queries), proto, args.duration));
    await b?.proc.stop();
  };

  if (want('whoami')) {
    const corefile = (p: number) => `.:${p} {\n  whoami\n}\n`;
    const p = port();
    const s = await startClusterdns(corefile(p), p, args.workers);
    await scenario({ name: 'whoami', port: p, pid: s.pid, queries: ['example.org A'] }, corefile, ['udp', 'tcp']);
    await s.stop();
  }

  /** Lines for the report below the table (the dnstap scenario's answers per CPU-second). */
  const notes: string[] = [];
  if (want('dnstap')) {
    // What dnstap costs (issue #27: answers per CPU-second with `dnstap SOCKET full` at least 0.85×
    // of those without): whoami behind dnstap against whoami alone, measured in alternation, and
    // the same pair on CoreDNS 1.15.0 for its own ratio. The collector (bench/tapsink.ts) is a
    // process of its own on the load generator's core, so its CPU counts for neither server.
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-bench-dnstap-'));
    const sock = join(dir, 'tap.sock');
    const sink = await startNode(join(DIST, 'bench/tapsink.js'), [sock], /tapsink listening/, 1);
    await onOffRounds(
      args,
      notes,
      { label: 'dnstap', on: 'dnstap full', sink, baseline: true },
      (p) => `.:${p} {\n  dnstap unix://${sock} full\n  whoami\n}\n`,
      (pr) => `records dropped: ${droppedRecords(pr.onProc)}`,
    );
    notes.push(`- collector frames received: ${sink.output.filter((l) => l.startsWith('frames ')).at(-1) ?? 'none'}`);
    await sink.stop();
  }

  if (args.only?.includes('dnssec') === true) {
    // What on-line signing costs on the kubernetes zone (issue 29: with `dnssec` and a warm
    // signature cache, answers per CPU-second at least 0.5x of the unsigned server's), and CoreDNS
    // 1.15.0's own ratio beside. Every query has DO; the query mix is k8s-service's (a fixed list,
    // so after the warm-up every RRset and black lie is in the cache). One ECDSA P-256 key
    // (dnssec-keygen), both servers on CPU 0, interleaved rounds, order flipped each round.
    process.stdout.write('dnssec: step 1/4: key and synthetic cluster\n');
    if (!ensureDnsperf()) throw new Error('dnssec: needs dnsperf for DO queries (Debian package dnsperf)');
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-bench-dnssec-'));
    const made = spawnSync('dnssec-keygen', ['-q', '-K', dir, '-a', 'ECDSAP256SHA256', '-f', 'KSK', 'cluster.local'], {
      encoding: 'utf8',
    });
    if (made.status !== 0) throw new Error(`dnssec: dnssec-keygen failed (Debian package bind9-utils): ${made.stderr}`);
    const key = join(dir, made.stdout.trim());
    const kubeconfig = join(dir, 'kubeconfig');
    const { proc: sandbox, url } = await startSyntheticSandbox(args.services, args.services * 3, 1, kubeconfig);
    const svcs = await listServices(url);
    const q: string[] = [];
    for (const sv of shuffle([...svcs]).slice(0, 20000))
      q.push(`${sv.name}.${sv.ns}.svc.cluster.local ${Math.random() < 0.8 ? 'A' : 'AAAA'}`);
    const n = q.length;
    for (let i = 0; i < n / 9; i++) q.push(`missing-${i}.${svcs[i % svcs.length]!.ns}.svc.cluster.local A`);
    shuffle(q);
    const corefile = (p: number, source: string, signed: boolean) =>
      `cluster.local:${p} {\n${signed ? `  dnssec {\n    key file ${key}\n    cache_capacity 100000\n  }\n` : ''}  kubernetes cluster.local {\n    ${source}\n  }\n}\n`;
    const servers: { name: string; source: string; start: (c: string, p: number) => Promise<Proc> }[] = [
      { name: 'clusterdns', source: `endpoint ${url}`, start: (c, p) => startClusterdns(c, p, 1) },
    ];
    const other = args.baseline;
    if (other !== null)
      servers.push({
        name: 'clusterdns (baseline)',
        source: `endpoint ${url}`,
        start: (c, p) => startClusterdns(c, p, 1, other),
      });
    const coredns = join(root, '.bin/coredns');
    if (existsSync(coredns))
      servers.push({
        name: 'CoreDNS',
        source: `kubeconfig ${kubeconfig} sandbox`,
        start: (c) => startCoreDNS(coredns, c),
      });
    else process.stdout.write('dnssec: .bin/coredns is missing (bash scripts/install-coredns.sh): no CoreDNS pair\n');
    process.stdout.write(`dnssec: step 2/4: starting ${servers.length * 2} servers\n`);
    const pairs: { name: string; off: Target; on: Target; procs: Proc[] }[] = [];
    for (const srv of servers) {
      const pp = port();
      const offProc = await srv.start(corefile(pp, srv.source, false), pp);
      const sp = port();
      const onProc = await srv.start(corefile(sp, srv.source, true), sp);
      pairs.push({
        name: srv.name,
        off: { name: `${srv.name} unsigned`, port: pp, pid: offProc.pid, queries: q },
        on: { name: `${srv.name} dnssec`, port: sp, pid: onProc.pid, queries: q },
        procs: [offProc, onProc],
      });
    }
    // Warm-up: every name answered (and signed) at least once, the caches full.
    process.stdout.write('dnssec: step 3/4: warm-up (the whole query list once on every server)\n');
    for (const pr of pairs)
      for (const t of [pr.off, pr.on]) {
        const w = await runLoad({ ...loadOf(t), durationS: 300, passes: 1, dnssecOk: true });
        process.stdout.write(`dnssec: warm-up of ${t.name}: ${Math.round(w.qps)} qps, lost ${w.lost}\n`);
      }
    const runs = new Map<string, { off: TapRun[]; on: TapRun[] }>(pairs.map((pr) => [pr.name, { off: [], on: [] }]));
    for (let r = 0; r < args.rounds; r++) {
      for (const pr of pairs) {
        const order = r % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const);
        for (const side of order) {
          const t = pr[side];
          const c0 = cpuSeconds(t.pid);
          const res = await runLoad({ ...loadOf(t), durationS: args.duration, dnssecOk: true, clients: args.clients });
          const cpu = (cpuSeconds(t.pid) - c0) / args.duration;
          const x: TapRun = { qps: res.qps, lost: res.lost, cpu, perCpu: res.qps / cpu, sinkCpu: 0, busy: [] };
          runs.get(pr.name)![side].push(x);
          process.stdout.write(
            `dnssec: step 4/4: round ${r + 1}/${args.rounds} ${t.name}: ${Math.round(x.qps)} qps, server ${x.cpu.toFixed(2)} of a core (${Math.round(x.perCpu)} answers per CPU-second), lost ${x.lost}\n`,
          );
        }
      }
    }
    for (const pr of pairs) {
      const x = runs.get(pr.name)!;
      const ratios = x.on.map((on, i) => on.perCpu / x.off[i]!.perCpu);
      const note = `${pr.name}: answers per CPU-second with dnssec / unsigned (DO set, warm signature cache), ${ratios.length} interleaved rounds: median ${medianOf(ratios).toFixed(3)} (rounds ${ratios.map((v) => v.toFixed(3)).join(', ')}); median ${Math.round(medianOf(x.on.map((v) => v.perCpu)))} / ${Math.round(medianOf(x.off.map((v) => v.perCpu)))}`;
      process.stdout.write(`${note}\n`);
      notes.push(`- ${note}`);
      for (const p of pr.procs) await p.stop();
    }
    await sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  if (want('trace') && !existsSync(join(root, '.bin/zipkin-collector')))
    process.stdout.write(
      'trace: .bin/zipkin-collector is missing (bash scripts/install-zipkin-collector.sh): scenario skipped\n',
    );
  else if (want('trace')) {
    // What trace costs (issue #29): whoami behind `trace` (every query traced, spans batched to a
    // Zipkin collector) against whoami alone, in alternation, and CoreDNS's pair beside. The
    // collector (.bin/zipkin-collector) runs on the load generator's core.
    const collectorBin = join(root, '.bin/zipkin-collector');
    const sink = await startProcess('zipkin-collector', collectorBin, ['-listen', '127.0.0.1:0'], /listening on /);
    pinTo(sink.pid, 1);
    const url = `http://${/listening on (\S+)/.exec(sink.output.join('\n'))![1]}/api/v2/spans`;
    const every = args.traceEvery;
    await onOffRounds(
      args,
      notes,
      { label: 'trace', on: `trace every ${every}`, sink, baseline: false },
      (p) => `.:${p} {\n  trace ${url} {\n    every ${every}\n  }\n  whoami\n}\n`,
      (pr) => {
        const warned = pr.onProc.output.filter((l) => l.includes('plugin/trace'));
        return `reporter warnings in its first ${pr.onProc.output.length} output lines: ${warned.length}${warned.length > 0 ? ` (first: ${warned[0]})` : ''}`;
      },
    );
    const health = await fetch(url.replace('/api/v2/spans', '/health')).then((r) => r.text());
    notes.push(`- collector: ${health.trim()}`);
    await sink.stop();
  }

  if (want('trace-datadog') && !existsSync(join(root, '.bin/datadog-agent')))
    process.stdout.write(
      'trace-datadog: .bin/datadog-agent is missing (bash scripts/install-datadog-agent.sh): scenario skipped\n',
    );
  else if (want('trace-datadog')) {
    // What `trace datadog` costs: as `trace`, with the spans sent as msgpack to the stand-in
    // Datadog agent (.bin/datadog-agent, which decodes them with the agent's code) on the load core.
    const agentBin = join(root, '.bin/datadog-agent');
    const sink = await startProcess('datadog-agent', agentBin, ['-listen', '127.0.0.1:0'], /listening on /);
    pinTo(sink.pid, 1);
    const addr = /listening on (\S+)/.exec(sink.output.join('\n'))![1]!;
    const every = args.traceEvery;
    await onOffRounds(
      args,
      notes,
      { label: 'trace-datadog', on: `trace datadog every ${every}`, sink, baseline: false },
      (p) => `.:${p} {\n  trace datadog ${addr} {\n    every ${every}\n  }\n  whoami\n}\n`,
      (pr) => {
        const warned = pr.onProc.output.filter((l) => l.includes('plugin/trace') && !l.includes('CONFIGURATION'));
        return `exporter warnings in its first ${pr.onProc.output.length} output lines: ${warned.length}${warned.length > 0 ? ` (first: ${warned[0]})` : ''}`;
      },
    );
    const got = (await fetch(`http://${addr}/test/requests`).then((r) => r.json())) as {
      traces: { traces: number }[];
    };
    notes.push(
      `- datadog agent: ${got.traces.length} requests, ${got.traces.reduce((n, r) => n + r.traces, 0)} traces`,
    );
    await sink.stop();
  }

  if (want('encrypted')) {
    // DoT and DoH beside plain TCP (issue 28: DoT answers per CPU-second ≥ 0.6× TCP's, DoH ≥
    // 0.5×), whoami on one server with three listeners, and CoreDNS 1.15.0's ratios beside. The
    // rounds interleave the transports; CPU is the server's own (/proc/PID/stat). DoT and TCP load
    // is dnsperf's; DoH load is nghttp2's h2load (bench/lib.ts runH2load) on the load core, since
    // dnsperf's DoH mode loses its replies here (CoreDNS's too).
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-bench-tls-'));
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    process.stdout.write('encrypted: making a self-signed certificate with openssl\n');
    const made = spawnSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    if (made.status !== 0) throw new Error(`encrypted: openssl failed (is it installed?): ${made.stderr.toString()}`);
    const corefile = (p: number, t: number, h: number) =>
      `.:${p} {\n  whoami\n}\ntls://.:${t} {\n  tls ${cert} ${key}\n  whoami\n}\nhttps://.:${h} {\n  tls ${cert} ${key}\n  whoami\n}\n`;
    const servers: { name: string; start: (c: string, p: number) => Promise<Proc> }[] = [
      { name: 'clusterdns', start: (c, p) => startClusterdns(c, p, args.workers) },
    ];
    const coredns = join(root, '.bin/coredns');
    if (existsSync(coredns)) servers.push({ name: 'CoreDNS', start: (c) => startCoreDNS(coredns, c) });
    else
      process.stdout.write('encrypted: .bin/coredns is missing (bash scripts/install-coredns.sh): no CoreDNS ratios\n');
    const q = ['example.org A'];
    const queryFile = join(dir, 'query.bin');
    writeFileSync(queryFile, encodeSimpleQuery('example.org', 1, 0));
    const dohRun = (pid: number, h: number): { qps: number; perCpu: number; cpu: number } => {
      const c0 = cpuSeconds(pid);
      const load = runH2load(`https://127.0.0.1:${h}/dns-query`, queryFile, args.duration);
      const cpu = (cpuSeconds(pid) - c0) / args.duration;
      const done = load.completed / args.duration;
      return { qps: done, perCpu: done / cpu, cpu };
    };
    for (const srv of servers) {
      const [p, t, h] = [port(), port(), port()];
      const proc = await srv.start(corefile(p, t, h), p);
      const per: Record<'tcp' | 'dot' | 'doh', number[]> = { tcp: [], dot: [], doh: [] };
      for (let r = 0; r < args.rounds; r++) {
        const order: ('tcp' | 'dot' | 'doh')[] = r % 2 === 0 ? ['tcp', 'dot', 'doh'] : ['doh', 'dot', 'tcp'];
        for (const side of order) {
          let x: { qps: number; perCpu: number; cpu: number };
          if (side === 'doh') x = dohRun(proc.pid, h);
          else {
            const c0 = cpuSeconds(proc.pid);
            const l = await runLoad({
              port: side === 'dot' ? t : p,
              queries: q,
              proto: side,
              durationS: args.duration,
              clients: 4,
            });
            const cpu = (cpuSeconds(proc.pid) - c0) / args.duration;
            x = { qps: l.qps, perCpu: l.qps / cpu, cpu };
          }
          per[side].push(x.perCpu);
          process.stdout.write(
            `encrypted: round ${r + 1}/${args.rounds} ${srv.name} ${side}: ${Math.round(x.qps)} qps, server ${x.cpu.toFixed(2)} of a core, ${Math.round(x.perCpu)} answers per CPU-second\n`,
          );
        }
      }
      const ratio = (side: 'dot' | 'doh') => per[side].map((v, i) => v / per.tcp[i]!);
      const note = `${srv.name}: answers per CPU-second, ${args.rounds} interleaved rounds: TCP ${Math.round(medianOf(per.tcp))}, DoT ${Math.round(medianOf(per.dot))} (DoT/TCP median ${medianOf(ratio('dot')).toFixed(2)}; rounds ${ratio(
        'dot',
      )
        .map((v) => v.toFixed(2))
        .join(
          ', ',
        )}), DoH ${Math.round(medianOf(per.doh))} (DoH/TCP median ${medianOf(ratio('doh')).toFixed(2)}; rounds ${ratio(
        'doh',
      )
        .map((v) => v.toFixed(2))
        .join(', ')})`;
      process.stdout.write(`${note}\n`);
      notes.push(`- ${note}`);
      await proc.stop();
    }
  }

  if (want('cache-hit') || want('cache-miss')) {
    const up = port();
    const upstream = await startNode(join(DIST, 'bench/upstream.js'), [String(up)], /upstream listening/, 1);
    const names = Array.from({ length: 1000 }, (_, i) => `host${i}.example.com A`);
    if (want('cache-miss')) {
      // Measured alone, the upstream has the server's core; behind the forwarder it moves to the
      // load generator's core (the forwarder has core 0).
      const corefile = (p: number) => `.:${p} {\n  forward . 127.0.0.1:${up}\n}\n`;
      const p = port();
      const s = await startClusterdns(corefile(p), p, args.workers);
      const t: Target = {
        name: 'cache-miss (forward)',
        port: p,
        pid: s.pid,
        queries: names,
        prepare: () => pinTo(upstream.pid, 1),
      };
      const b = await baseline(corefile, names);
      if (b) b.target.prepare = t.prepare;
      log(
        await measurePair(
          t,
          b?.target ?? {
            name: 'upstream',
            port: up,
            pid: upstream.pid,
            queries: names,
            prepare: () => pinTo(upstream.pid, 0),
          },
          'udp',
          args.duration,
        ),
      );
      await b?.proc.stop();
      await s.stop();
    }
    if (want('cache-hit')) {
      const corefile = (p: number) => `.:${p} {\n  cache 3600\n  forward . 127.0.0.1:${up}\n}\n`;
      const p = port();
      const s = await startClusterdns(corefile(p), p, args.workers);
      await scenario({ name: 'cache-hit', port: p, pid: s.pid, queries: names }, corefile, ['udp', 'tcp']);
      await s.stop();
    }
    await upstream.stop();
  }

  if (want('k8s-service') || want('k8s-srv') || want('k8s-customised')) {
    const { proc: sandbox, url } = await startSyntheticSandbox(args.services, args.services * 3, 1);
    const svcs = await listServices(url);
    const corefile = (p: number) => `cluster.local:${p} {\n  kubernetes cluster.local {\n    endpoint ${url}\n  }\n}\n`;
    const p = port();
    const s = await startClusterdns(corefile(p), p, args.workers);
    const q: string[] = [];
    for (const sv of shuffle([...svcs]).slice(0, 20000))
      q.push(`${sv.name}.${sv.ns}.svc.cluster.local ${Math.random() < 0.8 ? 'A' : 'AAAA'}`);
    const n = q.length;
    for (let i = 0; i < n / 9; i++) q.push(`missing-${i}.${svcs[i % svcs.length]!.ns}.svc.cluster.local A`); // 10 % NXDOMAIN
    shuffle(q);
    if (want('k8s-service')) {
      await scenario({ name: 'k8s-service A/AAAA', port: p, pid: s.pid, queries: q }, corefile, ['udp', 'tcp']);
    }
    if (want('k8s-customised')) {
      // kubeadm's Corefile, and the same plus a rewrite and a template rule no cluster name
      // matches (issue: a plugin that does not match costs the kubernetes path nothing). The plain
      // kubeadm server is this row's ceiling, so the ratio is customised / plain in one run.
      const kubeadm = (dp: number, extra: readonly string[]): string =>
        kubeadmCorefile(
          { dns: dp, health: port(), ready: port(), metrics: port(), upstream: 9 },
          `endpoint ${url}`,
          extra,
        );
      const extra = [
        'rewrite name regex (.*)\\.corp\\.example\\.com {1}.default.svc.cluster.local answer auto',
        'template IN A corp.example.net {\n      answer "{{ .Name }} 60 IN A 192.0.2.1"\n    }',
      ];
      const pp = port();
      const plain = await startClusterdns(kubeadm(pp, []), pp, args.workers);
      const cp = port();
      const custom = await startClusterdns(kubeadm(cp, extra), cp, args.workers);
      for (const proto of ['udp', 'tcp'] as const) {
        log(
          await measurePair(
            { name: 'kubeadm+rewrite+template', port: cp, pid: custom.pid, queries: q },
            { name: 'kubeadm', port: pp, pid: plain.pid, queries: q },
            proto,
            args.duration,
          ),
        );
      }
      await custom.stop();
      await plain.stop();
    }
    if (want('k8s-srv')) {
      const hl = svcs.filter((x) => x.headless);
      const q = hl.map((x) => `${x.name}.${x.ns}.svc.cluster.local SRV`);
      if (q.length) await scenario({ name: 'k8s-srv headless', port: p, pid: s.pid, queries: q }, corefile, ['udp']);
    }
    await s.stop();
    await sandbox.stop();
  }
  await echoProc.stop();

  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const machine = machineDescription();
  const echoRuns = results
    .filter((m) => m.ceiling?.name === 'echo' && m.proto === 'udp')
    .flatMap((m) => m.ceiling!.runs);
  const md = [
    `# clusterdns benchmark ${new Date().toISOString()}`,
    '',
    `Machine: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}. Load: dnsperf on 127.0.0.1, ${args.duration}s per run; server and load generator pinned to different cores. Workers: ${args.workers}. Server node flags: \`${SERVER_NODE_ARGS.join(' ')}\`.`,
    'Each row: three saturation runs of the scenario alternating with three of its ceiling (the Node echo server, or for cache misses the upstream), medians compared; then three runs of each at half of its own saturation, median p50/p99.',
    args.baseline ? `A/B run: every row's ceiling is the same scenario served by the build in ${args.baseline}.` : '',
    echoRuns.length
      ? `Echo UDP saturation runs over the whole bench: ${Math.min(...echoRuns)}–${Math.max(...echoRuns)} qps (the drift the alternation cancels).`
      : '',
    '',
    '| scenario | proto | QPS (saturation) | p50 ms (half load) | p99 ms (half load) | server CPU | peak RSS MiB | ceiling | ceiling QPS | ceiling p99 ms | QPS ratio | p99 ratio |',
    '|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|',
    ...results.map((m) => {
      const c = m.ceiling!;
      return `| ${m.scenario} | ${m.proto} | ${m.qps} | ${m.p50ms.toFixed(3)} | ${m.p99ms.toFixed(3)} | ${m.cpu} | ${m.peakRssMiB} | ${c.name}/${m.proto} | ${c.qps} | ${c.p99ms.toFixed(3)} | ${m.ratio!.toFixed(2)} | ${m.p99Ratio!.toFixed(2)} |`;
    }),
    '',
    ...(notes.length ? [...notes, ''] : []),
  ].join('\n');
  process.stdout.write(`\n${md}`);
  writeResults({
    [`bench-${stamp}.json`]: `${JSON.stringify({ machine, duration: args.duration, workers: args.workers, serverNodeArgs: SERVER_NODE_ARGS, results }, null, 2)}\n`,
    [`bench-${stamp}.md`]: md,
    'latest.md': md,
  });
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
