/**
 * `npm run bench -- --memory`: the resident memory of clusterdns beside the real CoreDNS 1.15.0
 * (.bin/coredns) on the same sandbox cluster with kubeadm's Corefile (`pods insecure`, and the
 * same with `pods verified`), one and two cores (clusterdns `-workers` = cores), at each cluster
 * size asked for. Per server and configuration, one server at a time on the cluster:
 *   - RSS after sync (ready, then idle for 3 s) and the peak during the initial sync (VmHWM then);
 *   - RSS after load: dnsperf on the service query mix for `--load-seconds`, then idle, and
 *     where it goes (smaps_rollup, the runtime's own metrics);
 *   - a forced relist: the sandbox restarts as an API server over a compacted etcd (SIGUSR2,
 *     sandbox/README.md), every watch gets 410 Expired and the server lists everything again; the
 *     peak from just before until its watches are back (VmHWM reset through clear_refs), and RSS
 *     after it. Last, so that it changes none of the figures before it.
 * Ratios clusterdns / CoreDNS are printed per row, and the sync and relist peaks over the RSS
 * before them (and the relist's over the RSS after sync). Memory, not throughput: the figures
 * hold on a loaded machine (they are what the servers keep, not how fast they go), but the load
 * average is in the report.
 *
 * Usage: npm run bench -- --memory [--sizes 1000:3000,10000:30000,10000:150000] [--cores 1,2]
 *          [--pods insecure,verified] [--load-seconds 10] [--no-relist] [--node PATH]
 *          [--servers CoreDNS,clusterdns]
 * A size is SERVICES:PODS.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  cpuSeconds,
  ensureDnsperf,
  httpText,
  kubeadmCorefile,
  machineDescription,
  port,
  processTree,
  resetPeakRss,
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

type PodsMode = 'insecure' | 'verified';

interface Args {
  sizes: { services: number; pods: number }[];
  cores: number[];
  pods: PodsMode[];
  loadSeconds: number;
  relist: boolean;
  node: string;
  servers: Row['server'][];
}

function parseArgs(argv: string[]): Args {
  const a: Args = {
    sizes: [
      { services: 1000, pods: 3000 },
      { services: 10_000, pods: 30_000 },
      { services: 10_000, pods: 150_000 },
    ],
    cores: [1, 2],
    pods: ['insecure', 'verified'],
    loadSeconds: 10,
    relist: true,
    node: process.execPath,
    servers: ['CoreDNS', 'clusterdns'],
  };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--no-relist') {
      a.relist = false;
      continue;
    }
    const v = argv[i + 1];
    if (v === undefined) continue;
    if (k === '--sizes')
      a.sizes = v.split(',').map((s) => {
        const [svc, pods] = s.split(':').map(Number);
        if (!svc || !pods) throw new Error(`--sizes: SERVICES:PODS expected, got ${s}`);
        return { services: svc, pods };
      });
    else if (k === '--cores') a.cores = v.split(',').map(Number);
    else if (k === '--pods') a.pods = v.split(',') as PodsMode[];
    else if (k === '--load-seconds') a.loadSeconds = Number(v);
    else if (k === '--node') a.node = resolve(v);
    else if (k === '--servers') a.servers = v.split(',') as Row['server'][];
    else continue;
    i++;
  }
  for (const m of a.pods) if (m !== 'insecure' && m !== 'verified') throw new Error(`--pods: ${m}?`);
  for (const x of a.servers) if (x !== 'CoreDNS' && x !== 'clusterdns') throw new Error(`--servers: ${x}?`);
  return a;
}

interface Row {
  server: 'clusterdns' | 'CoreDNS';
  services: number;
  pods: number;
  podsMode: PodsMode;
  cores: number;
  syncSeconds: number;
  rssAfterSyncMiB: number;
  peakSyncMiB: number;
  /** null with --no-relist */
  peakRelistMiB: number | null;
  rssAfterRelistMiB: number | null;
  relistSeconds: number | null;
  rssAfterLoadMiB: number;
  qps: number;
  /** Where the RSS after load goes (all processes of the server summed). */
  parts: Parts;
}

/**
 * The parts of a server's RSS: file-backed pages (the binary's code and data, shared with any
 * other process running it) and anonymous ones (heaps, malloc, stacks), from smaps_rollup; and
 * what the runtime says it holds, from the server's own /metrics: V8's heap committed and used by
 * space and its external memory (clusterdns, summed over its threads), Go's heap and stacks in use
 * (CoreDNS).
 */
interface Parts {
  fileMiB: number;
  anonMiB: number;
  runtime: Record<string, number>;
}

function smapsRollup(pid: number): { rss: number; anon: number } {
  let rss = 0;
  let anon = 0;
  try {
    const t = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    rss = Number(/^Rss:\s+(\d+)/m.exec(t)?.[1] ?? 0) / 1024;
    anon = Number(/^Anonymous:\s+(\d+)/m.exec(t)?.[1] ?? 0) / 1024;
  } catch {
    /* gone */
  }
  return { rss, anon };
}

async function parts(pid: number, metricsPort: number): Promise<Parts> {
  let rss = 0;
  let anon = 0;
  for (const p of processTree(pid)) {
    const r = smapsRollup(p);
    rss += r.rss;
    anon += r.anon;
  }
  const runtime: Record<string, number> = {};
  const text = (await httpText(metricsPort, '/metrics').catch(() => ({ body: '' }))).body;
  const pick: [RegExp, string][] = [
    [/^nodejs_heap_size_total_bytes (\S+)$/m, 'v8 heap committed'],
    [/^nodejs_heap_size_used_bytes (\S+)$/m, 'v8 heap used'],
    [/^nodejs_external_memory_bytes (\S+)$/m, 'v8 external'],
    [/^go_memstats_heap_inuse_bytes (\S+)$/m, 'go heap in use'],
    [/^go_memstats_stack_inuse_bytes (\S+)$/m, 'go stacks'],
  ];
  for (const [re, name] of pick) {
    const m = re.exec(text);
    if (m) runtime[name] = mib(Number(m[1]) / 2 ** 20);
  }
  for (const m of text.matchAll(/^nodejs_heap_space_size_used_bytes\{space="(\w+)"\} (\S+)$/gm))
    runtime[`v8 used: ${m[1]}`] = mib(Number(m[2]) / 2 ** 20);
  return { fileMiB: mib(rss - anon), anonMiB: mib(anon), runtime };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (x: number) => Number(x.toFixed(1));

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

interface Cluster {
  proc: Proc;
  url: string;
  kubeconfig: string;
  queries: string[];
}

async function startCluster(dir: string, services: number, pods: number): Promise<Cluster> {
  const kubeconfig = join(dir, `kubeconfig-${services}-${pods}`);
  const { proc, url } = await startSyntheticSandbox(services, pods, null, kubeconfig);
  return { proc, url, kubeconfig, queries: await serviceQueries(url) };
}

/**
 * Force every client of the sandbox to relist (SIGUSR2: restart over a compacted history) and
 * wait until `watches` watches are open again and the server `pid` has gone idle. The watch count
 * alone is not the end: client-go's streaming list (`sendInitialEvents`, what CoreDNS 1.15.0
 * uses) is itself a watch, open from the relist's first moment.
 */
async function forceRelist(c: Cluster, watches: number, pid: number): Promise<void> {
  const before = c.proc.output.filter((l) => l.startsWith('sandbox restarted')).length;
  c.proc.proc.kill('SIGUSR2');
  await until(
    async () => c.proc.output.filter((l) => l.startsWith('sandbox restarted')).length > before,
    'the sandbox restart',
  );
  // The cut watches are closed at once: wait for the count to come back, then a little longer
  // for the last list's garbage to be what the server keeps.
  await until(async () => (await sandboxWatches(c.url)) === watches, 'every watch back after the relist', 600_000);
  await idle(pid, 'the server idle after the relist');
}

/** Wait until `pid` used under 2 % of a core over each of three consecutive seconds. */
async function idle(pid: number, what: string): Promise<void> {
  let quiet = 0;
  let last = cpuSeconds(pid);
  const end = Date.now() + 600_000;
  while (quiet < 3) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await sleep(1000);
    const now = cpuSeconds(pid);
    quiet = now - last < 0.02 ? quiet + 1 : 0;
    last = now;
  }
}

async function measure(
  args: Args,
  dir: string,
  c: Cluster,
  size: { services: number; pods: number },
  podsMode: PodsMode,
  cores: number,
  server: Row['server'],
  upstream: number,
): Promise<Row> {
  const step = `${server}, ${size.services} services / ${size.pods} pods, pods ${podsMode}, ${cores} core(s)`;
  say(`${step}: starting`);
  const cpuList = cores === 1 ? '0' : '0,1';
  const p = { dns: await port(), health: await port(), ready: await port(), metrics: await port(), upstream };
  const file = join(dir, `Corefile.${server}.${size.pods}.${podsMode}.${cores}`);
  const source = server === 'CoreDNS' ? `kubeconfig ${c.kubeconfig} sandbox` : `endpoint ${c.url}`;
  writeFileSync(file, kubeadmCorefile(p, source, [], podsMode));
  const t0 = performance.now();
  const proc =
    server === 'CoreDNS'
      ? await startPinned('coredns', [join(root, '.bin/coredns'), '-conf', file], /CoreDNS-1\./, cpuList)
      : await startPinned(
          'clusterdns',
          [args.node, ...SERVER_NODE_ARGS, join(root, 'bin/clusterdns'), '-conf', file, '-workers', String(cores)],
          /^clusterdns-\d/,
          cpuList,
        );
  try {
    await until(async () => (await httpText(p.ready, '/ready')).status === 200, `${step}: ready`, 600_000);
    if (server === 'clusterdns' && cores > 1)
      await until(
        async () =>
          new RegExp(`^clusterdns_query_threads ${cores}$`, 'm').test((await httpText(p.metrics, '/metrics')).body),
        `${step}: every query thread`,
      );
    const syncSeconds = (performance.now() - t0) / 1000;
    await idle(proc.pid, `${step}: the server idle after sync`);
    const synced = rssMiB(proc.pid);
    say(`${step}: synced after ${syncSeconds.toFixed(1)} s, RSS ${mib(synced.current)} MiB (peak ${mib(synced.peak)})`);
    say(`${step}: ${args.loadSeconds} s of load`);
    const load = await runLoad({
      port: p.dns,
      queries: c.queries,
      proto: 'udp',
      durationS: args.loadSeconds,
      clients: 16,
      cpu: 1,
    });
    await idle(proc.pid, `${step}: the server idle after load`);
    const loaded = rssMiB(proc.pid);
    const where = await parts(proc.pid, p.metrics);
    say(`${step}: RSS after load ${mib(loaded.current)} MiB (${Math.round(load.qps)} qps)`);
    let peakRelist: number | null = null;
    let afterRelist: number | null = null;
    let relistSeconds: number | null = null;
    if (args.relist) {
      const watches = await sandboxWatches(c.url);
      if (watches === null) throw new Error(`${step}: the sandbox does not count its watches (GET /debug/watches)`);
      if (!resetPeakRss(proc.pid))
        throw new Error(`${step}: /proc/PID/clear_refs refused: the relist peak cannot be told apart`);
      say(`${step}: forcing a relist (sandbox restart, ${watches} watches)`);
      const r0 = performance.now();
      await forceRelist(c, watches, proc.pid);
      relistSeconds = (performance.now() - r0) / 1000;
      const m = rssMiB(proc.pid);
      peakRelist = m.peak;
      afterRelist = m.current;
      say(
        `${step}: relisted in ${relistSeconds.toFixed(1)} s, peak ${mib(m.peak)} MiB (${(m.peak / loaded.current).toFixed(2)}× before it, ${(m.peak / synced.current).toFixed(2)}× after sync), RSS ${mib(m.current)} MiB`,
      );
    }
    return {
      server,
      services: size.services,
      pods: size.pods,
      podsMode,
      cores,
      syncSeconds: Number(syncSeconds.toFixed(1)),
      rssAfterSyncMiB: mib(synced.current),
      peakSyncMiB: mib(synced.peak),
      peakRelistMiB: peakRelist === null ? null : mib(peakRelist),
      rssAfterRelistMiB: afterRelist === null ? null : mib(afterRelist),
      relistSeconds: relistSeconds === null ? null : Number(relistSeconds.toFixed(1)),
      rssAfterLoadMiB: mib(loaded.current),
      qps: Math.round(load.qps),
      parts: where,
    };
  } catch (e) {
    throw new Error(
      `${(e as Error).message}\n(step: ${step}; the server's last output follows; a server that did not become ready within the limit usually ran out of memory or could not reach the sandbox)\n${proc.output.slice(-20).join('\n')}`,
    );
  } finally {
    await proc.stop();
  }
}

const ratio = (a: number | null, b: number | null) => (a !== null && b !== null && b > 0 ? (a / b).toFixed(2) : '–');

function report(args: Args, rows: Row[], nodeVersion: string, load0: number[]): string {
  const machine = machineDescription();
  const lines = [
    `# Memory: clusterdns beside CoreDNS 1.15.0, ${new Date().toISOString()}`,
    '',
    `Machine: ${machine.cpu}, ${machine.cores} cores; load average before ${load0.map((x) => x.toFixed(2)).join(' ')}, after ${loadavg()
      .map((x) => x.toFixed(2))
      .join(
        ' ',
      )}. clusterdns on Node ${nodeVersion} (\`${SERVER_NODE_ARGS.join(' ')}\`), \`-workers\` = cores; both pinned with taskset.`,
    `Sandbox cluster, kubeadm's Corefile (forward to a local upstream), one server at a time. RSS = VmRSS (summed over the process tree); peaks = VmHWM, reset before the relist. Load: dnsperf, 16 clients, ${args.loadSeconds} s of the service query mix.`,
    '',
    '| services / pods | pods | cores | server | RSS after sync | peak sync / after sync | RSS after load | peak relist | / before it (after load) | / after sync | RSS after relist | ready s | relist s (to idle) |',
    '|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.services} / ${r.pods} | ${r.podsMode} | ${r.cores} | ${r.server} | ${r.rssAfterSyncMiB} | ${r.peakSyncMiB} (${ratio(r.peakSyncMiB, r.rssAfterSyncMiB)}×) | ${r.rssAfterLoadMiB} | ${r.peakRelistMiB ?? '–'} | ${ratio(r.peakRelistMiB, r.rssAfterLoadMiB)}× | ${ratio(r.peakRelistMiB, r.rssAfterSyncMiB)}× | ${r.rssAfterRelistMiB ?? '–'} | ${r.syncSeconds} | ${r.relistSeconds ?? '–'} |`,
    ),
    '',
    '| services / pods | pods | cores | clusterdns / CoreDNS: after sync | peak sync | after load | peak relist | clusterdns: two cores / one after load |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows.filter((x) => x.server === 'clusterdns')) {
    const c = rows.find(
      (x) =>
        x.server === 'CoreDNS' &&
        x.services === r.services &&
        x.pods === r.pods &&
        x.podsMode === r.podsMode &&
        x.cores === r.cores,
    );
    const one = rows.find(
      (x) =>
        x.server === 'clusterdns' &&
        x.services === r.services &&
        x.pods === r.pods &&
        x.podsMode === r.podsMode &&
        x.cores === 1,
    );
    lines.push(
      `| ${r.services} / ${r.pods} | ${r.podsMode} | ${r.cores} | ${ratio(r.rssAfterSyncMiB, c?.rssAfterSyncMiB ?? null)} | ${ratio(r.peakSyncMiB, c?.peakSyncMiB ?? null)} | ${ratio(r.rssAfterLoadMiB, c?.rssAfterLoadMiB ?? null)} | ${ratio(r.peakRelistMiB, c?.peakRelistMiB ?? null)} | ${r.cores > 1 ? ratio(r.rssAfterLoadMiB, one?.rssAfterLoadMiB ?? null) : ''} |`,
    );
  }
  lines.push(
    '',
    'Where the RSS after load goes (MiB): file-backed pages (the binary), anonymous pages, and what the runtime reports (V8 summed over threads; Go).',
    '',
    '| services / pods | pods | cores | server | file | anonymous | runtime |',
    '|---|---|---:|---|---:|---:|---|',
    ...rows.map(
      (r) =>
        `| ${r.services} / ${r.pods} | ${r.podsMode} | ${r.cores} | ${r.server} | ${r.parts.fileMiB} | ${r.parts.anonMiB} | ${Object.entries(
          r.parts.runtime,
        )
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')} |`,
    ),
    '',
  );
  return lines.join('\n');
}

export async function runMemory(argv: string[]): Promise<void> {
  const args = parseArgs(argv);
  if (!existsSync(join(root, '.bin/coredns')))
    throw new Error('.bin/coredns is missing: run scripts/install-coredns.sh');
  if (spawnSync('sh', ['-c', 'command -v taskset']).status !== 0 || cpus().length < 2)
    throw new Error('--memory needs taskset and two cores');
  if (!ensureDnsperf()) throw new Error('--memory needs dnsperf');
  const nodeVersion = spawnSync(args.node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const load0 = loadavg();
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-memory-'));
  const upPort = await port();
  const upstream = await startNode(join(DIST, 'bench/upstream.js'), [String(upPort)], /upstream listening/, 1);
  const rows: Row[] = [];
  const total = args.sizes.length * args.pods.length * args.cores.length * args.servers.length;
  try {
    for (const size of args.sizes) {
      say(
        `[size ${args.sizes.indexOf(size) + 1}/${args.sizes.length}] sandbox: ${size.services} services, ${size.pods} pods`,
      );
      const c = await startCluster(dir, size.services, size.pods);
      try {
        for (const podsMode of args.pods)
          for (const cores of args.cores)
            for (const server of args.servers) {
              say(`[${rows.length + 1}/${total}]`);
              rows.push(await measure(args, dir, c, size, podsMode, cores, server, upPort));
            }
      } finally {
        await c.proc.stop();
      }
    }
  } finally {
    await upstream.stop();
  }
  const md = report(args, rows, nodeVersion, load0);
  process.stdout.write(`\n${md}`);
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  writeResults({
    [`memory-${stamp}.md`]: md,
    [`memory-${stamp}.json`]: `${JSON.stringify({ machine: machineDescription(), loadavgBefore: load0, node: nodeVersion, args, rows }, null, 2)}\n`,
  });
}
