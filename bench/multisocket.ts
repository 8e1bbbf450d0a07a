/**
 * `npm run bench -- --multisocket`: answers per CPU-second of one query thread with 1, 2 and 4
 * SO_REUSEPORT sockets per address (`multisocket N`, docs/multicore.md §9). Each server serves
 * `whoami` pinned to CPU 0 for the whole run; dnsperf (8 clients, so that flows spread over the
 * sockets) on CPU 1 saturates them in turn, in an order rotated every round. Per run: QPS, the
 * server's CPU seconds from /proc, answers per CPU-second; then per N the median and every round's.
 *
 * Options: --rounds N (default 3), --duration S (default 5), --sockets 1,2,4.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, ensureDnsperf, median, port, runLoad, SERVER_NODE_ARGS, startNode, type Proc } from './lib.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

async function start(n: number): Promise<{ proc: Proc; port: number }> {
  const p = await port();
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-bench-multisocket-'));
  const conf = join(dir, 'Corefile');
  writeFileSync(conf, `.:${p} {\n  multisocket ${n}\n  whoami\n}\n`);
  const proc = await startNode(
    join(root, 'bin/clusterdns'),
    ['-conf', conf, '-dns.port', String(p), '-workers', '1'],
    /^clusterdns-\d/,
    0,
    {},
    SERVER_NODE_ARGS,
  );
  return { proc, port: p };
}

export async function runMultisocket(argv: string[]): Promise<void> {
  const arg = (k: string): string | undefined => {
    const i = argv.indexOf(k);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const rounds = Number(arg('--rounds') ?? 3);
  const durationS = Number(arg('--duration') ?? 5);
  const counts = (arg('--sockets') ?? '1,2,4').split(',').map(Number);
  if (!ensureDnsperf())
    process.stdout.write('(without dnsperf the Node generator shares the CPUs: figures are lower)\n');
  const servers = new Map<number, { proc: Proc; port: number }>();
  const perCpu = new Map<number, number[]>(counts.map((n) => [n, []]));
  try {
    for (const n of counts) servers.set(n, await start(n));
    for (let r = 0; r < rounds; r++) {
      const order = counts.map((_, i) => counts[(i + r) % counts.length]!);
      for (const n of order) {
        const s = servers.get(n)!;
        process.stdout.write(`round ${r + 1}/${rounds}: multisocket ${n} … `);
        const cpu0 = cpuSeconds(s.proc.pid);
        const res = await runLoad({ port: s.port, queries: ['example.org A'], proto: 'udp', durationS, clients: 8 });
        const cpu = cpuSeconds(s.proc.pid) - cpu0;
        const answers = res.completed / cpu;
        perCpu.get(n)!.push(answers);
        process.stdout.write(
          `${Math.round(res.qps)} qps, ${cpu.toFixed(2)} CPU-s, ${Math.round(answers)} answers per CPU-second\n`,
        );
      }
    }
  } finally {
    for (const s of servers.values()) await s.proc.stop();
  }
  const base = median(perCpu.get(counts[0]!)!);
  process.stdout.write(
    `\n| sockets | answers per CPU-second (median) | vs ${counts[0]} | rounds |\n|---|---|---|---|\n`,
  );
  for (const n of counts) {
    const xs = perCpu.get(n)!;
    process.stdout.write(
      `| ${n} | ${Math.round(median(xs))} | ${(median(xs) / base).toFixed(2)} | ${xs.map((x) => Math.round(x)).join(', ')} |\n`,
    );
  }
}
