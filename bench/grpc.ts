/**
 * `npm run bench -- --grpc`: DNS over gRPC answers per CPU-second, clusterdns beside CoreDNS
 * 1.15.0 (issue #28). Both serve `grpc://.:PORT { whoami }`, pinned to CPU 0 and up for the whole
 * run; bench/grpcload.ts (on CPU 1) keeps CONNECTIONS × OUTSTANDING calls in flight against one
 * of them at a time. Rounds interleave the servers (order flipped each round), so a drift of the
 * machine's speed lands on both alike; each round gives the ratio of their answers per
 * CPU-second (server CPU from /proc during the counted seconds only).
 *
 *   npm run bench -- --grpc [--duration S] [--rounds N] [--connections C] [--outstanding K] [--baseline DIR]
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  cpuSeconds,
  median,
  pinTo,
  port,
  SERVER_NODE_ARGS,
  startNode,
  startProcess,
  writeResults,
  type Proc,
} from './lib.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');

interface Run {
  qps: number;
  cpu: number;
  perCpu: number;
  errors: number;
}

function opt(argv: readonly string[], name: string, fallback: number): number {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
}

/** One counted load run against `p`: the load generator's answers, the server's CPU meanwhile. */
function loadRun(
  p: { port: number; pid: number },
  o: { duration: number; connections: number; outstanding: number },
): Promise<Run> {
  return new Promise((resolveRun, reject) => {
    const args = [
      join(root, 'dist/bench/grpcload.js'),
      String(p.port),
      String(o.duration),
      String(o.connections),
      String(o.outstanding),
    ];
    const proc = spawn('taskset', ['-c', '1', process.execPath, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    const c0 = { v: 0 };
    // The counted seconds start one second in (the load generator's warm-up).
    const warm = setTimeout(() => (c0.v = cpuSeconds(p.pid)), 1000);
    let out = '';
    proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
    proc.on('error', reject);
    proc.on('exit', (code) => {
      clearTimeout(warm);
      const cpu = (cpuSeconds(p.pid) - c0.v) / o.duration;
      if (code !== 0)
        return reject(
          new Error(`grpc load generator exited with ${code} (step: load run on port ${p.port}); its output: ${out}`),
        );
      const r = JSON.parse(out.trim().split('\n').at(-1)!) as { answers: number; errors: number; seconds: number };
      const qps = r.answers / r.seconds;
      resolveRun({ qps, cpu, perCpu: qps / cpu, errors: r.errors });
    });
  });
}

async function startClusterdns(checkout: string, p: number): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-bench-grpc-'));
  writeFileSync(join(dir, 'Corefile'), `grpc://.:${p} {\n  whoami\n}\n`);
  return startNode(
    join(checkout, 'bin/clusterdns'),
    ['-conf', join(dir, 'Corefile'), '-workers', '1'],
    /^clusterdns-\d/,
    0,
    {},
    SERVER_NODE_ARGS,
  );
}

async function startCoreDNS(p: number): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'coredns-bench-grpc-'));
  writeFileSync(join(dir, 'Corefile'), `grpc://.:${p} {\n  whoami\n}\n`);
  const proc = await startProcess(
    'coredns',
    join(root, '.bin/coredns'),
    ['-conf', join(dir, 'Corefile')],
    /^CoreDNS-1\./,
    {
      env: { GOMAXPROCS: '1' },
    },
  );
  pinTo(proc.pid, 0);
  return proc;
}

export async function runGrpc(argv: readonly string[]): Promise<void> {
  const o = {
    duration: opt(argv, '--duration', 5),
    connections: opt(argv, '--connections', 4),
    outstanding: opt(argv, '--outstanding', 50),
  };
  const rounds = opt(argv, '--rounds', 3);
  const b = argv.indexOf('--baseline');
  const servers: { name: string; start: (p: number) => Promise<Proc> }[] = [
    { name: 'clusterdns', start: (p) => startClusterdns(root, p) },
  ];
  if (b >= 0) servers.push({ name: 'clusterdns (baseline)', start: (p) => startClusterdns(resolve(argv[b + 1]!), p) });
  if (existsSync(join(root, '.bin/coredns'))) servers.push({ name: 'CoreDNS', start: startCoreDNS });
  else process.stdout.write('grpc: .bin/coredns is missing (bash scripts/install-coredns.sh): no CoreDNS beside\n');
  const up: { name: string; port: number; pid: number; proc: Proc }[] = [];
  try {
    for (const s of servers) {
      process.stdout.write(`grpc: starting ${s.name}\n`);
      const p = await port();
      const proc = await s.start(p);
      up.push({ name: s.name, port: p, pid: proc.pid, proc });
    }
    const runs = new Map<string, Run[]>(up.map((s) => [s.name, []]));
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? up : [...up].reverse();
      for (const s of order) {
        const x = await loadRun(s, o);
        runs.get(s.name)!.push(x);
        process.stdout.write(
          `grpc: round ${r + 1}/${rounds} ${s.name}: ${Math.round(x.qps)} answers/s, server ${x.cpu.toFixed(2)} of a core, ${Math.round(x.perCpu)} answers per CPU-second, ${x.errors} failed calls\n`,
        );
      }
    }
    const lines = [
      `# DNS over gRPC, answers per CPU-second (${new Date().toISOString()})`,
      '',
      `${rounds} interleaved rounds of ${o.duration} s, ${o.connections} connections × ${o.outstanding} calls in flight, whoami, one core each.`,
      '',
      '| server | answers/s (median) | server CPU (cores) | answers per CPU-second (median) | per round |',
      '|---|---|---|---|---|',
    ];
    for (const [name, xs] of runs) {
      lines.push(
        `| ${name} | ${Math.round(median(xs.map((x) => x.qps)))} | ${median(xs.map((x) => x.cpu)).toFixed(2)} | ${Math.round(median(xs.map((x) => x.perCpu)))} | ${xs.map((x) => Math.round(x.perCpu)).join(', ')} |`,
      );
    }
    const mine = runs.get('clusterdns')!;
    for (const [name, xs] of runs) {
      if (name === 'clusterdns') continue;
      const ratios = mine.map((m, i) => m.perCpu / xs[i]!.perCpu);
      lines.push(
        '',
        `clusterdns / ${name}, answers per CPU-second, per round: ${ratios.map((v) => v.toFixed(3)).join(', ')}; median ${median(ratios).toFixed(3)}`,
      );
    }
    const md = `${lines.join('\n')}\n`;
    process.stdout.write(`\n${md}`);
    writeResults({ [`grpc-${Date.now()}.md`]: md });
  } finally {
    for (const s of up) await s.proc.stop();
  }
}
