/**
 * `npm run bench -- --axfr`: what a zone transfer of `cluster.local` costs the server, issue #27's
 * targets: with 10,000 Services, RSS growth during the transfer ≤ 10 MiB, and queries on other
 * connections keep their p99 within 1.5× of an idle server's. clusterdns and the real CoreDNS
 * 1.15.0 (.bin/coredns, reported beside, not a target) run one at a time on the same sandbox
 * cluster with the same Corefile (`transfer { to * }` beside `kubernetes cluster.local`; CoreDNS
 * reads the sandbox through a kubeconfig, clusterdns through `endpoint`), pinned to CPU 0. The
 * load client (tools/udpload at a fixed rate, open loop, each reply timed by its kernel receive
 * stamp: the AXFR client shares CPU 1 with it, and a generator that timed replies when it got to
 * them counted that contention as the server's latency), the AXFR client and the RSS sampler
 * (this process) share CPU 1. Per server:
 *   - a warm-up: every name of the query mix asked once at saturation (the answers a server keeps
 *     are then kept before any RSS is read), then idle;
 *   - one AXFR alone: RSS (VmRSS) sampled every `--sample-ms` from just before to the end, peak
 *     also as VmHWM (reset through clear_refs just before), growth = peak − RSS before;
 *   - `--rounds` rounds of (idle: the query load alone; transfers: the same load while this
 *     process runs AXFRs back to back, each read to its last SOA): p50/p99 of each run, and the
 *     RSS growth during the transfers over the RSS just before them. The medians over the rounds
 *     are compared: p99 during / p99 idle.
 * Usage: npm run bench -- --axfr [--services 10000] [--rate 2000] [--seconds 6] [--rounds 3]
 *          [--sample-ms 5] [--servers clusterdns,CoreDNS] [--node PATH] [--server-root DIR] [--turns]
 * `--server-root DIR` runs another built checkout's bin/clusterdns (an A/B in one session with this
 * bench's code); `--turns` preloads loopturns.ts into clusterdns and reports the CPU time of its
 * event-loop turns per idle and transfer run (what the server itself holds other clients up by).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as net from 'node:net';
import { Qtype } from '../src/dns/constants.js';
import { questionMessage } from '../src/dns/axfr.js';
import { FrameReader, framed } from '../src/dns/tcpframes.js';
import {
  cpuSeconds,
  ensureDnsperf,
  machineDescription,
  median,
  openLoad,
  pinTo,
  port,
  resetPeakRss,
  rssMiB,
  runLoad,
  serviceQueries,
  SERVER_NODE_ARGS,
  startSyntheticSandbox,
  startPinned,
  udploadPath,
  writeResults,
  type OpenLoadResult,
  type Proc,
} from './lib.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');

type Server = 'clusterdns' | 'CoreDNS';

interface Args {
  services: number;
  rate: number;
  seconds: number;
  rounds: number;
  sampleMs: number;
  servers: Server[];
  node: string;
  serverRoot: string;
  turns: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = {
    services: 10_000,
    rate: 2000,
    seconds: 6,
    rounds: 3,
    sampleMs: 5,
    servers: ['clusterdns', 'CoreDNS'],
    node: process.execPath,
    serverRoot: root,
    turns: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = argv[i + 1];
    if (k === '--turns') {
      a.turns = true;
      continue;
    }
    if (v === undefined) continue;
    if (k === '--services') a.services = Number(v);
    else if (k === '--rate') a.rate = Number(v);
    else if (k === '--seconds') a.seconds = Number(v);
    else if (k === '--rounds') a.rounds = Number(v);
    else if (k === '--sample-ms') a.sampleMs = Number(v);
    else if (k === '--node') a.node = resolve(v);
    else if (k === '--servers') a.servers = v.split(',') as Server[];
    else if (k === '--server-root') a.serverRoot = resolve(v);
    else continue;
    i++;
  }
  for (const s of a.servers) if (s !== 'clusterdns' && s !== 'CoreDNS') throw new Error(`--servers: ${s}?`);
  return a;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (x: number) => Number(x.toFixed(2));
const ms3 = (s: number) => Number((s * 1000).toFixed(3));
const say = (line: string) => process.stdout.write(`${line}\n`);

/**
 * Sample VmRSS of `pid` every `everyMs` until stopped; `stop()` gives the highest sample, the
 * number of samples and VmHWM (reset by the caller before starting, so it is the peak since then
 * even between samples).
 */
function sampleRss(pid: number, everyMs: number): { stop(): { peak: number; hwm: number; samples: number } } {
  let peak = rssMiB(pid).current;
  let samples = 1;
  const timer = setInterval(() => {
    const r = rssMiB(pid).current;
    samples++;
    if (r > peak) peak = r;
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const r = rssMiB(pid);
      return { peak: Math.max(peak, r.current), hwm: r.peak, samples: samples + 1 };
    },
  };
}

/**
 * Wait until `pid` used under 2 % of a core over each of three consecutive seconds (3 s with
 * `--turns`, whose preload keeps the server busy).
 */
async function idle(pid: number, what: string, turns = false): Promise<void> {
  // loopturns.ts keeps the loop turning (the process at a whole core): wait instead of measuring.
  if (turns) {
    await sleep(3000);
    return;
  }
  let quiet = 0;
  let last = cpuSeconds(pid);
  const end = Date.now() + 300_000;
  while (quiet < 3) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await sleep(1000);
    const now = cpuSeconds(pid);
    quiet = now - last < 0.02 ? quiet + 1 : 0;
    last = now;
  }
}

interface Transfer {
  records: number;
  messages: number;
  seconds: number;
}

/** The offset just past the name at `off` (labels or a pointer), without reading it. */
function skipName(m: Buffer, off: number): number {
  for (;;) {
    const len = m[off]!;
    if (len === 0) return off + 1;
    if ((len & 0xc0) === 0xc0) return off + 2;
    off += len + 1;
  }
}

/**
 * One AXFR of cluster.local read to its closing SOA. The client only walks each message's records
 * (their types, for the SOA that ends the transfer) and keeps none: it shares CPU 1 with udpload
 * and the RSS sampler, which a client decoding 46,000 records into objects would hold up.
 */
function axfr(dnsPort: number): Promise<Transfer> {
  const t0 = performance.now();
  return new Promise((resolvePromise, reject) => {
    const sock = net.connect(dnsPort, '127.0.0.1');
    const frames = new FrameReader();
    let records = 0;
    let messages = 0;
    let done = false;
    const fail = (e: Error) => {
      if (done) return;
      done = true;
      sock.destroy();
      reject(e);
    };
    sock.setTimeout(10_000, () => fail(new Error('AXFR: no message for 10 s')));
    sock.on('error', fail);
    sock.on('close', () => fail(new Error(`AXFR: connection closed after ${messages} messages`)));
    sock.on('connect', () => sock.write(framed(questionMessage('cluster.local.', Qtype.AXFR))));
    sock.on('data', (chunk: Buffer) =>
      frames.push(chunk, (m) => {
        if (done) return;
        messages++;
        if ((m.readUInt16BE(2) & 0xf) !== 0) return fail(new Error(`AXFR: rcode ${m.readUInt16BE(2) & 0xf}`));
        let off = 12;
        for (let q = m.readUInt16BE(4); q > 0; q--) off = skipName(m, off) + 4;
        let last = -1;
        for (let a = m.readUInt16BE(6); a > 0; a--) {
          off = skipName(m, off);
          last = m.readUInt16BE(off);
          off += 10 + m.readUInt16BE(off + 8);
          records++;
        }
        if (last === Qtype.SOA && records > 1) {
          done = true;
          sock.destroy();
          resolvePromise({ records, messages, seconds: (performance.now() - t0) / 1000 });
        }
      }),
    );
  });
}

interface LoadRun {
  p50ms: number;
  p99ms: number;
  qps: number;
  lost: number;
}

interface Round {
  idle: LoadRun;
  during: LoadRun;
  transfers: number;
  rssBeforeMiB: number;
  /** Highest VmRSS sample during the transfers − RSS before. */
  growthMiB: number;
  /** VmHWM (reset just before) − RSS before: the peak between samples too. */
  hwmGrowthMiB: number;
  samples: number;
  /** `--turns`: the CPU time of the server's event-loop turns in the idle run and in the transfer run. */
  turnsIdle?: LoopTurns;
  turnsDuring?: LoopTurns;
}

/** What loopturns.ts reports: turns, percentiles and maximum in ms of CPU, turns over 2/5/10 ms. */
interface LoopTurns {
  turns: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  over2: number;
  over5: number;
  over10: number;
}

/** Ask the preloaded loopturns.ts for its histogram since the last ask (and start a new one). */
async function loopTurns(proc: Proc): Promise<LoopTurns> {
  const seen = proc.output.length;
  process.kill(proc.pid, 'SIGWINCH');
  const t0 = Date.now();
  for (;;) {
    const line = proc.output.slice(seen).find((l) => l.startsWith('LOOPTURNS '));
    if (line !== undefined) return JSON.parse(line.slice('LOOPTURNS '.length)) as LoopTurns;
    if (Date.now() - t0 > 10_000)
      throw new Error(
        '--turns: no LOOPTURNS line from the server in 10 s (was it started with --import loopturns.js?)',
      );
    await sleep(20);
  }
}

const turnsText = (t: LoopTurns | undefined): string =>
  t === undefined
    ? ''
    : `; loop turns (ms CPU) p99 ${t.p99.toFixed(2)} p99.9 ${t.p999.toFixed(2)} max ${t.max.toFixed(1)}, >2/5/10 ms: ${t.over2}/${t.over5}/${t.over10} of ${t.turns}`;

interface Result {
  server: Server;
  version: string;
  single: Transfer & { rssBeforeMiB: number; growthMiB: number; hwmGrowthMiB: number; samples: number };
  rounds: Round[];
  /** Medians over the rounds. */
  idleP99ms: number;
  duringP99ms: number;
  p99Ratio: number;
  maxGrowthMiB: number;
  maxHwmGrowthMiB: number;
  cpuDuringTransfers: number;
}

function loadRun(r: OpenLoadResult, seconds: number): LoadRun {
  return {
    p50ms: ms3(r.p50),
    p99ms: ms3(r.p99),
    qps: Math.round(r.answered / seconds),
    lost: r.sent - r.answered,
  };
}

async function measure(
  args: Args,
  server: Server,
  corefile: string,
  dnsPort: number,
  queries: string[],
  udpload: string,
): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-axfr-'));
  const file = join(dir, 'Corefile');
  writeFileSync(file, corefile);
  say(`${server}: starting (${args.services} services)`);
  const proc: Proc =
    server === 'CoreDNS'
      ? await startPinned('coredns', [join(root, '.bin/coredns'), '-conf', file], /CoreDNS-1\./, '0')
      : await startPinned(
          'clusterdns',
          [
            args.node,
            ...SERVER_NODE_ARGS,
            ...(args.turns ? ['--import', join(here, 'loopturns.js')] : []),
            join(args.serverRoot, 'bin/clusterdns'),
            '-conf',
            file,
            '-workers',
            '1',
          ],
          /^clusterdns-\d/,
          '0',
        );
  const version = proc.output.find((l) => /^(CoreDNS|clusterdns)-\d/.test(l)) ?? server;
  try {
    // Synced: the transfer holds every Service (a first AXFR that would be short is retried).
    const t0 = Date.now();
    let first = await axfr(dnsPort).catch(() => null);
    while (first === null || first.records < args.services) {
      if (Date.now() - t0 > 300_000)
        throw new Error(
          `${server}: the zone never held ${args.services} services (last AXFR: ${first?.records} records)`,
        );
      await sleep(500);
      first = await axfr(dnsPort).catch(() => null);
    }
    say(`${server}: synced; AXFR ${first.records} records in ${first.messages} messages`);
    say(`${server}: warm-up (every name of the query mix once, then idle)`);
    await runLoad({
      port: dnsPort,
      queries,
      proto: 'udp',
      durationS: Math.max(2, Math.ceil(queries.length / 10_000)),
      cpu: 1,
    });
    await idle(proc.pid, `${server} idle after the warm-up`, args.turns && server === 'clusterdns');

    say(`${server}: one AXFR alone, RSS sampled every ${args.sampleMs} ms`);
    if (!resetPeakRss(proc.pid)) throw new Error(`${server}: /proc/PID/clear_refs refused: no peak RSS`);
    const before = rssMiB(proc.pid).current;
    let sampler = sampleRss(proc.pid, args.sampleMs);
    const t = await axfr(dnsPort);
    let s = sampler.stop();
    const single = {
      ...t,
      rssBeforeMiB: mib(before),
      growthMiB: mib(s.peak - before),
      hwmGrowthMiB: mib(s.hwm - before),
      samples: s.samples,
    };
    say(
      `${server}: ${t.records} records, ${t.messages} messages in ${t.seconds.toFixed(3)} s; RSS before ${mib(before)} MiB, growth ${single.growthMiB} MiB (VmHWM ${single.hwmGrowthMiB}), ${s.samples} samples`,
    );

    const rounds: Round[] = [];
    let cpu = 0;
    for (let i = 0; i < args.rounds; i++) {
      const step = `${server}: round ${i + 1}/${args.rounds}`;
      await idle(proc.pid, `${step}: the server idle`, args.turns && server === 'clusterdns');
      say(`${step}: ${args.seconds} s of ${args.rate} queries/s, idle server`);
      const turnsOn = args.turns && server === 'clusterdns';
      if (turnsOn) await loopTurns(proc);
      const idleRun = loadRun(await openLoad(udpload, dnsPort, args.rate, args.seconds, queries), args.seconds);
      const turnsIdle = turnsOn ? await loopTurns(proc) : undefined;
      await idle(proc.pid, `${step}: the server idle`, args.turns && server === 'clusterdns');
      say(`${step}: ${args.seconds} s of ${args.rate} queries/s with AXFRs back to back`);
      if (turnsOn) await loopTurns(proc);
      resetPeakRss(proc.pid);
      const rssBefore = rssMiB(proc.pid).current;
      const cpu0 = cpuSeconds(proc.pid);
      sampler = sampleRss(proc.pid, args.sampleMs);
      let stop = false;
      let transfers = 0;
      const xfrs = (async () => {
        while (!stop) {
          await axfr(dnsPort);
          transfers++;
        }
      })();
      const during = loadRun(await openLoad(udpload, dnsPort, args.rate, args.seconds, queries), args.seconds);
      stop = true;
      await xfrs;
      const turnsDuring = turnsOn ? await loopTurns(proc) : undefined;
      s = sampler.stop();
      cpu += cpuSeconds(proc.pid) - cpu0;
      const round: Round = {
        idle: idleRun,
        during,
        transfers,
        rssBeforeMiB: mib(rssBefore),
        growthMiB: mib(s.peak - rssBefore),
        hwmGrowthMiB: mib(s.hwm - rssBefore),
        samples: s.samples,
        ...(turnsIdle ? { turnsIdle } : {}),
        ...(turnsDuring ? { turnsDuring } : {}),
      };
      rounds.push(round);
      say(
        `${step}: idle p50/p99 ${idleRun.p50ms}/${idleRun.p99ms} ms; during ${transfers} AXFRs ${during.p50ms}/${during.p99ms} ms (lost ${idleRun.lost}/${during.lost}); RSS growth ${round.growthMiB} MiB (VmHWM ${round.hwmGrowthMiB}) over ${round.rssBeforeMiB} MiB`,
      );
      if (turnsOn) say(`${step}: idle${turnsText(turnsIdle)}\n${step}: during${turnsText(turnsDuring)}`);
    }
    const idleP99 = median(rounds.map((r) => r.idle.p99ms));
    const duringP99 = median(rounds.map((r) => r.during.p99ms));
    return {
      server,
      version,
      single,
      rounds,
      idleP99ms: idleP99,
      duringP99ms: duringP99,
      p99Ratio: Number((duringP99 / idleP99).toFixed(2)),
      maxGrowthMiB: Math.max(single.growthMiB, ...rounds.map((r) => r.growthMiB)),
      maxHwmGrowthMiB: Math.max(single.hwmGrowthMiB, ...rounds.map((r) => r.hwmGrowthMiB)),
      cpuDuringTransfers: Number((cpu / (args.rounds * args.seconds)).toFixed(2)),
    };
  } catch (e) {
    throw new Error(
      `${(e as Error).message}\n(step: ${server}; its last output follows; a server that never holds the zone usually cannot reach the sandbox)\n${proc.output.slice(-20).join('\n')}`,
    );
  } finally {
    await proc.stop();
  }
}

function report(args: Args, results: Result[], load0: number[]): string {
  const m = machineDescription();
  const lines = [
    `# AXFR of cluster.local, ${args.services} Services: memory and other queries, ${new Date().toISOString()}`,
    '',
    `Machine: ${m.cpu}, ${m.cores} cores; load average before ${load0.map((x) => x.toFixed(2)).join(' ')}, after ${loadavg()
      .map((x) => x.toFixed(2))
      .join(
        ' ',
      )}. Server pinned to CPU 0 (clusterdns \`-workers 1\`, \`${SERVER_NODE_ARGS.join(' ')}\`); tools/udpload (${args.rate} queries/s open loop, service query mix, each reply timed by its kernel receive stamp), the AXFR client and the RSS sampler (every ${args.sampleMs} ms) on CPU 1. ${args.rounds} rounds of ${args.seconds} s idle then ${args.seconds} s with AXFRs back to back; medians over the rounds.`,
    '',
    '| server | records / messages | one AXFR s | RSS before MiB | growth, one AXFR (VmHWM) | growth, AXFRs under load, max over rounds (VmHWM) | AXFRs per round | p50 idle / during ms | p99 idle / during ms | p99 ratio | server CPU during |',
    '|---|---|---:|---:|---:|---:|---|---|---|---:|---:|',
    ...results.map((r) => {
      const med = (f: (x: Round) => number) => median(r.rounds.map(f));
      return `| ${r.version} | ${r.single.records} / ${r.single.messages} | ${r.single.seconds.toFixed(3)} | ${r.single.rssBeforeMiB} | ${r.single.growthMiB} (${r.single.hwmGrowthMiB}) | ${Math.max(...r.rounds.map((x) => x.growthMiB))} (${Math.max(...r.rounds.map((x) => x.hwmGrowthMiB))}) | ${r.rounds.map((x) => x.transfers).join(', ')} | ${med((x) => x.idle.p50ms)} / ${med((x) => x.during.p50ms)} | ${r.idleP99ms} / ${r.duringP99ms} | ${r.p99Ratio} | ${r.cpuDuringTransfers} |`;
    }),
    '',
    'Per round (p99 idle → during, ms; RSS growth MiB):',
    '',
    ...results.map(
      (r) =>
        `- ${r.server}: ${r.rounds.map((x) => `${x.idle.p99ms} → ${x.during.p99ms} (${(x.during.p99ms / x.idle.p99ms).toFixed(2)}×, +${x.growthMiB})`).join('; ')}`,
    ),
    '',
  ];
  const c = results.find((r) => r.server === 'clusterdns');
  if (c) {
    const growth = Math.max(c.maxGrowthMiB, c.maxHwmGrowthMiB);
    // A p99 many times the p50 on an idle server is the machine's noise (other processes on the
    // server's core), and a ratio over it says nothing about the transfers: say so.
    const idleP50 = median(c.rounds.map((x) => x.idle.p50ms));
    const noisy = c.idleP99ms > 100 * idleP50;
    lines.push(
      `Idle p99 / p50 (clusterdns): ${(c.idleP99ms / idleP50).toFixed(1)}${noisy ? ' — the idle baseline is noise from other processes (over 100×): the p99 ratio below is not a measurement of the transfers; run it on a quiet machine' : ''}.`,
      '',
      `Targets (issue #27, clusterdns): RSS growth ≤ 10 MiB: ${growth} MiB, ${growth <= 10 ? 'met' : 'NOT met'}; p99 during transfers ≤ 1.5× idle: ${c.p99Ratio}×, ${noisy ? 'not measurable here' : c.p99Ratio <= 1.5 ? 'met' : 'NOT met'}.`,
      '',
    );
  }
  return lines.join('\n');
}

export async function runAxfr(argv: string[]): Promise<void> {
  const args = parseArgs(argv);
  if (args.servers.includes('CoreDNS') && !existsSync(join(root, '.bin/coredns')))
    throw new Error('.bin/coredns is missing: run scripts/install-coredns.sh (or --servers clusterdns)');
  if (spawnSync('sh', ['-c', 'command -v taskset']).status !== 0 || cpus().length < 2)
    throw new Error('--axfr needs taskset and two cores');
  if (!ensureDnsperf()) throw new Error('--axfr needs dnsperf (the Debian package)');
  // This process is the AXFR client and the RSS sampler: on the load generator's core.
  pinTo(process.pid, 1);
  say('udpload: building tools/udpload (the query load) if needed');
  const udpload = udploadPath();
  const load0 = loadavg();
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-axfr-'));
  const kubeconfig = join(dir, 'kubeconfig');
  say(`sandbox: ${args.services} services, ${args.services * 3} pods`);
  const { proc: sandbox, url } = await startSyntheticSandbox(args.services, args.services * 3, 1, kubeconfig);
  const results: Result[] = [];
  try {
    const queries = await serviceQueries(url);
    for (const [i, server] of args.servers.entries()) {
      say(`[${i + 1}/${args.servers.length}] ${server}`);
      const dnsPort = await port();
      const source = server === 'CoreDNS' ? `kubeconfig ${kubeconfig} sandbox` : `endpoint ${url}`;
      const corefile = `cluster.local:${dnsPort} {\n  bind 127.0.0.1\n  kubernetes cluster.local {\n    ${source}\n  }\n  transfer {\n    to *\n  }\n}\n`;
      results.push(await measure(args, server, corefile, dnsPort, queries, udpload));
    }
  } finally {
    await sandbox.stop();
  }
  const md = report(args, results, load0);
  process.stdout.write(`\n${md}`);
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  writeResults({
    [`axfr-${stamp}.md`]: md,
    [`axfr-${stamp}.json`]: `${JSON.stringify({ machine: machineDescription(), loadavgBefore: load0, args, results }, null, 2)}\n`,
  });
}
