/**
 * `npm run bench -- --vs-coredns`: clusterdns beside the real CoreDNS 1.15.0 (.bin/coredns, from
 * scripts/install-coredns.sh) on the same sandbox cluster (10,000 Services, 30,000 pods by
 * default) with kubeadm's Corefile, both pinned to one core and then to two (taskset), in three
 * alternating rounds each: QPS at saturation, p50/p99 at half of each one's own saturation, RSS,
 * and the ratios clusterdns / CoreDNS. All traffic stays on 127.0.0.1 (kubeadm's `forward .
 * /etc/resolv.conf` points at the local bench upstream instead). See bench/README.md.
 *
 * Usage: npm run bench -- --vs-coredns [--duration 5] [--services 10000] [--clients 16]
 *          [--node PATH]   (the runtime clusterdns runs on; default: this one, which npm scripts
 *                           take from node_modules/.bin/node)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  cpuSeconds,
  ensureDnsperf,
  httpText,
  kubeadmCorefile,
  machineDescription,
  median,
  percentile,
  port,
  rssMiB,
  runLoad,
  sandboxWatches,
  serviceQueries,
  SERVER_NODE_ARGS,
  startNode,
  startSyntheticSandbox,
  startPinned,
  until,
  writeResults,
  type Proc,
} from './lib.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const DIST = join(root, 'dist');

interface Args {
  duration: number;
  services: number;
  clients: number;
  node: string;
  rounds: number;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { duration: 5, services: 10_000, clients: 16, node: process.execPath, rounds: 3 };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i + 1];
    if (v === undefined) continue;
    const k = argv[i];
    if (k === '--duration') a.duration = Number(v);
    else if (k === '--services') a.services = Number(v);
    else if (k === '--clients') a.clients = Number(v);
    else if (k === '--node') a.node = resolve(v);
    else if (k === '--rounds') a.rounds = Number(v);
    else continue;
    i++;
  }
  return a;
}

interface Server {
  name: string;
  port: number;
  proc: Proc;
}

interface Row {
  server: string;
  cores: number;
  qps: number;
  runs: number[];
  p50ms: number;
  p99ms: number;
  rssMiB: number;
  peakRssMiB: number;
  watches: number | null;
  /**
   * Answers per second of the server's own CPU time during the saturation runs (median). On a
   * machine whose cores are shared with the load generator this, not QPS, says how a server
   * would scale with cores of its own.
   */
  answersPerCpuSecond: number;
}

export async function runVsCoreDNS(argv: string[]): Promise<void> {
  const args = parseArgs(argv);
  const coredns = join(root, '.bin/coredns');
  if (!existsSync(coredns)) throw new Error('.bin/coredns is missing: run scripts/install-coredns.sh');
  if (!existsSync(args.node)) throw new Error(`${args.node} is missing: pass another --node`);
  if (spawnSync('sh', ['-c', 'command -v taskset']).status !== 0 || cpus().length < 2)
    throw new Error('--vs-coredns needs taskset and two cores');
  if (!ensureDnsperf()) throw new Error('--vs-coredns needs dnsperf');
  const nodeVersion = spawnSync(args.node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const load0 = loadavg();

  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-vs-coredns-'));
  const kubeconfig = join(dir, 'kubeconfig');
  const { proc: sandbox, url } = await startSyntheticSandbox(args.services, args.services * 3, null, kubeconfig);
  const upPort = await port();
  const upstream = await startNode(join(DIST, 'bench/upstream.js'), [String(upPort)], /upstream listening/, 1);
  const queries = await serviceQueries(url);

  const rows: Row[] = [];
  for (const cores of [1, 2]) {
    const cpuList = cores === 1 ? '0' : '0,1';
    const servers: Server[] = [];
    // CoreDNS first, alone on the API server, so that its watches can be counted apart.
    const cp = {
      dns: await port(),
      health: await port(),
      ready: await port(),
      metrics: await port(),
      upstream: upPort,
    };
    const cfile = join(dir, `Corefile.coredns.${cores}`);
    writeFileSync(cfile, kubeadmCorefile(cp, `kubeconfig ${kubeconfig} sandbox`));
    const cproc = await startPinned('coredns', [coredns, '-conf', cfile], /CoreDNS-1\./, cpuList);
    await until(async () => (await httpText(cp.ready, '/ready')).status === 200, 'CoreDNS ready');
    const corednsWatches = await sandboxWatches(url);
    servers.push({ name: 'CoreDNS 1.15.0', port: cp.dns, proc: cproc });
    const op = {
      dns: await port(),
      health: await port(),
      ready: await port(),
      metrics: await port(),
      upstream: upPort,
    };
    const ofile = join(dir, `Corefile.clusterdns.${cores}`);
    writeFileSync(ofile, kubeadmCorefile(op, `endpoint ${url}`));
    const oproc = await startPinned(
      'clusterdns',
      [args.node, ...SERVER_NODE_ARGS, join(root, 'bin/clusterdns'), '-conf', ofile, '-workers', String(cores)],
      /^clusterdns-\d/,
      cpuList,
    );
    await until(async () => (await httpText(op.ready, '/ready')).status === 200, 'clusterdns ready');
    if (cores > 1)
      await until(
        async () =>
          new RegExp(`^clusterdns_query_threads ${cores}$`, 'm').test((await httpText(op.metrics, '/metrics')).body),
        'every query thread',
      );
    const bothWatches = await sandboxWatches(url);
    servers.push({ name: 'clusterdns', port: op.dns, proc: oproc });

    const load = (s: Server, maxQps?: number, latencies = false) =>
      runLoad({
        port: s.port,
        queries,
        proto: 'udp',
        durationS: maxQps ? Math.max(2, Math.ceil(args.duration / 2)) : args.duration,
        maxQps,
        latencies,
        clients: args.clients,
        cpu: 1,
      });
    for (const s of servers)
      await runLoad({ port: s.port, queries, proto: 'udp', durationS: 1, clients: args.clients, cpu: 1 });
    const sat = new Map<Server, number[]>(servers.map((s) => [s, []]));
    const perCpu = new Map<Server, number[]>(servers.map((s) => [s, []]));
    for (let r = 0; r < args.rounds; r++) {
      for (const s of servers) {
        const cpu0 = cpuSeconds(s.proc.pid);
        const res = await load(s);
        const cpu = cpuSeconds(s.proc.pid) - cpu0;
        sat.get(s)!.push(res.qps);
        if (cpu > 0) perCpu.get(s)!.push(res.completed / cpu);
      }
    }
    const half = new Map<Server, { p50: number[]; p99: number[] }>(servers.map((s) => [s, { p50: [], p99: [] }]));
    for (let r = 0; r < args.rounds; r++) {
      for (const s of servers) {
        const res = await load(s, median(sat.get(s)!) / 2, true);
        half.get(s)!.p50.push(percentile(res.latencies, 50) * 1000);
        half.get(s)!.p99.push(percentile(res.latencies, 99) * 1000);
      }
    }
    for (const s of servers) {
      const m = rssMiB(s.proc.pid);
      const w =
        s.name === 'clusterdns'
          ? bothWatches !== null && corednsWatches !== null
            ? bothWatches - corednsWatches
            : null
          : corednsWatches;
      rows.push({
        server: s.name,
        cores,
        qps: Math.round(median(sat.get(s)!)),
        runs: sat.get(s)!.map(Math.round),
        p50ms: median(half.get(s)!.p50),
        p99ms: median(half.get(s)!.p99),
        rssMiB: Number(m.current.toFixed(1)),
        peakRssMiB: Number(m.peak.toFixed(1)),
        watches: w,
        answersPerCpuSecond: Math.round(median(perCpu.get(s)!)),
      });
    }
    for (const s of servers) await s.proc.stop();
    for (const r of rows.slice(-2))
      process.stdout.write(
        `${r.cores} core(s)  ${r.server.padEnd(15)} ${String(r.qps).padStart(7)} qps (${r.runs.join(', ')})  p99@half ${r.p99ms.toFixed(3)} ms  RSS ${r.rssMiB} MiB (peak ${r.peakRssMiB})  ${r.answersPerCpuSecond}/cpu-s  watches ${r.watches ?? '?'}\n`,
      );
  }
  await upstream.stop();
  await sandbox.stop();

  const get = (server: string, cores: number) => rows.find((r) => r.server === server && r.cores === cores)!;
  const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : '–');
  const machine = machineDescription();
  const lines = [
    `# clusterdns vs CoreDNS 1.15.0, ${new Date().toISOString()}`,
    '',
    `Machine: ${machine.cpu}, ${machine.cores} cores; load average before the run ${load0.map((x) => x.toFixed(2)).join(' ')}, after ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}. clusterdns on Node ${nodeVersion} (\`${SERVER_NODE_ARGS.join(' ')}\`), \`-workers\` = cores.`,
    `Cluster: sandbox, ${args.services} Services, ${args.services * 3} pods; kubeadm's Corefile (forward to a local upstream). Load: dnsperf, ${args.clients} clients, 200 outstanding, UDP, ${args.duration} s per saturation run, pinned to CPU 1; queries: service A/AAAA (80/20) + 10 % NXDOMAIN.`,
    `${args.rounds} alternating rounds per server at saturation (median), then ${args.rounds} alternating rounds at half of each one's own saturation (median p50/p99). RSS: VmRSS after the runs (peak: VmHWM).`,
    '',
    '| cores | server | QPS | runs | answers per CPU-second | p50 ms @½ | p99 ms @½ | RSS MiB | peak RSS MiB | API watches |',
    '|---:|---|---:|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.cores} | ${r.server} | ${r.qps} | ${r.runs.join(', ')} | ${r.answersPerCpuSecond} | ${r.p50ms.toFixed(3)} | ${r.p99ms.toFixed(3)} | ${r.rssMiB} | ${r.peakRssMiB} | ${r.watches ?? '?'} |`,
    ),
    '',
    '| ratio | one core | two cores |',
    '|---|---:|---:|',
    `| QPS clusterdns / CoreDNS | ${ratio(get('clusterdns', 1).qps, get('CoreDNS 1.15.0', 1).qps)} | ${ratio(get('clusterdns', 2).qps, get('CoreDNS 1.15.0', 2).qps)} |`,
    `| p99 @½ clusterdns / CoreDNS | ${ratio(get('clusterdns', 1).p99ms, get('CoreDNS 1.15.0', 1).p99ms)} | ${ratio(get('clusterdns', 2).p99ms, get('CoreDNS 1.15.0', 2).p99ms)} |`,
    `| RSS clusterdns / CoreDNS | ${ratio(get('clusterdns', 1).rssMiB, get('CoreDNS 1.15.0', 1).rssMiB)} | ${ratio(get('clusterdns', 2).rssMiB, get('CoreDNS 1.15.0', 2).rssMiB)} |`,
    `| clusterdns two cores / one core: QPS, RSS | | ${ratio(get('clusterdns', 2).qps, get('clusterdns', 1).qps)}, ${ratio(get('clusterdns', 2).rssMiB, get('clusterdns', 1).rssMiB)} |`,
    `| CoreDNS two cores / one core: QPS | | ${ratio(get('CoreDNS 1.15.0', 2).qps, get('CoreDNS 1.15.0', 1).qps)} |`,
    `| answers per CPU-second clusterdns / CoreDNS | ${ratio(get('clusterdns', 1).answersPerCpuSecond, get('CoreDNS 1.15.0', 1).answersPerCpuSecond)} | ${ratio(get('clusterdns', 2).answersPerCpuSecond, get('CoreDNS 1.15.0', 2).answersPerCpuSecond)} |`,
    `| answers per CPU-second, two cores / one core: clusterdns, CoreDNS | | ${ratio(get('clusterdns', 2).answersPerCpuSecond, get('clusterdns', 1).answersPerCpuSecond)}, ${ratio(get('CoreDNS 1.15.0', 2).answersPerCpuSecond, get('CoreDNS 1.15.0', 1).answersPerCpuSecond)} |`,
    '',
    'dnsperf runs on CPU 1, which the two-core servers share with it: with two cores a server competes with its own load generator, so its two-core QPS cannot reach twice its one-core QPS here. Answers per CPU-second of the server (its CPU time over the saturation runs) is the machine-independent figure: at the same efficiency, a server given two cores of its own answers twice its one-core rate.',
    '',
  ];
  const md = lines.join('\n');
  process.stdout.write(`\n${md}`);
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  writeResults({
    [`vs-coredns-${stamp}.md`]: md,
    [`vs-coredns-${stamp}.json`]: `${JSON.stringify({ machine, loadavgBefore: load0, node: nodeVersion, args, rows }, null, 2)}\n`,
  });
}
