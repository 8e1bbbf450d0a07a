/**
 * `npm run bench -- --shed`: what `shed` does under overload (issue #28's target: under twice the
 * saturating load with shed, the p99 latency of the queries answered is at most 3× its value at
 * half load). One clusterdns (`bin/clusterdns`, built `dist/`) pinned to CPU 0 serves `whoami`
 * with and without `shed`; the load on CPU 1. Per round and server: its saturation rate S
 * (dnsperf, unlimited load, 200 outstanding), then half of it (S/2) and twice it (2S), both sent
 * open-loop by tools/udpload (4 sockets, 1 s timeout, the latency of every reply up to the kernel's
 * receive timestamp, so the generator's own CPU queue is not counted as the server's): dnsperf is
 * closed-loop, and at 2S the queries a shedding server drops filled its outstanding table and held
 * its send rate at a fraction of 2S, so the overload never happened. The rounds
 * alternate the two servers; medians are reported with every round's figures, and the shed drops
 * the server counted (coredns_shed_dropped_total from its /metrics).
 *
 * Options: --rounds N (default 3), --duration S (seconds per run, default 5).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ensureDnsperf,
  httpText,
  median,
  openLoad,
  port,
  runLoad,
  SERVER_NODE_ARGS,
  startNode,
  udploadPath,
  type Proc,
} from './lib.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface Round {
  saturation: number;
  halfP99ms: number;
  overP99ms: number;
  overAnswered: number;
  overSent: number;
  shedQuery: number;
}

async function start(shed: boolean): Promise<{ proc: Proc; port: number; metrics: number }> {
  const p = await port();
  const m = await port();
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-bench-shed-'));
  const conf = join(dir, 'Corefile');
  writeFileSync(conf, `.:${p} {\n${shed ? '  shed\n' : ''}  prometheus 127.0.0.1:${m}\n  whoami\n}\n`);
  const proc = await startNode(
    join(root, 'bin/clusterdns'),
    ['-conf', conf, '-dns.port', String(p), '-workers', '1'],
    /^clusterdns-\d/,
    0,
    {},
    SERVER_NODE_ARGS,
  );
  return { proc, port: p, metrics: m };
}

async function shedDrops(metricsPort: number): Promise<number> {
  const { body } = await httpText(metricsPort, '/metrics');
  let n = 0;
  for (const m of body.matchAll(/^coredns_shed_dropped_total\{[^}]*reason="query"[^}]*\} (\S+)$/gm)) n += Number(m[1]);
  return n;
}

async function round(
  s: { port: number; metrics: number },
  durationS: number,
  label: string,
  udpload: string,
): Promise<Round> {
  const queries = ['example.org A'];
  const step = (what: string) => process.stdout.write(`  ${label}: ${what}\n`);
  step('saturation');
  const sat = await runLoad({ port: s.port, queries, proto: 'udp', durationS, outstanding: 200 });
  const S = sat.qps;
  step(`half load (${Math.round(S / 2)} qps)`);
  const half = await openLoad(udpload, s.port, S / 2, durationS);
  const before = await shedDrops(s.metrics).catch(() => 0);
  step(`twice saturation (${Math.round(2 * S)} qps)`);
  const over = await openLoad(udpload, s.port, 2 * S, durationS);
  const after = await shedDrops(s.metrics).catch(() => 0);
  return {
    saturation: Math.round(S),
    halfP99ms: half.p99 * 1000,
    overP99ms: over.p99 * 1000,
    overAnswered: over.answered,
    overSent: over.sent,
    shedQuery: after - before,
  };
}

export async function runShed(argv: string[]): Promise<void> {
  const arg = (k: string, d: number): number => {
    const i = argv.indexOf(k);
    return i >= 0 ? Number(argv[i + 1]) : d;
  };
  const rounds = arg('--rounds', 3);
  const durationS = arg('--duration', 5);
  if (!ensureDnsperf())
    throw new Error('the shed bench needs dnsperf (Debian package dnsperf) for the saturation rate');
  process.stdout.write('shed: building tools/udpload (the open-loop load) if needed\n');
  const udpload = udploadPath();
  const servers = { shed: await start(true), plain: await start(false) };
  const results: Record<'shed' | 'plain', Round[]> = { shed: [], plain: [] };
  try {
    for (let r = 0; r < rounds; r++) {
      const order: ('shed' | 'plain')[] = r % 2 === 0 ? ['shed', 'plain'] : ['plain', 'shed'];
      for (const name of order) {
        process.stdout.write(`round ${r + 1}/${rounds}, ${name}\n`);
        const res = await round(servers[name], durationS, name, udpload);
        results[name].push(res);
        process.stdout.write(
          `  saturation ${res.saturation} qps, p99 at half ${res.halfP99ms.toFixed(2)} ms, at 2x ${res.overP99ms.toFixed(2)} ms` +
            ` (answered ${res.overAnswered}/${res.overSent}, shed drops ${res.shedQuery}), ratio ${(res.overP99ms / res.halfP99ms).toFixed(2)}\n`,
        );
      }
    }
  } finally {
    await servers.shed.proc.stop();
    await servers.plain.proc.stop();
  }
  process.stdout.write(
    '\n| server | saturation qps | p99 at S/2 (ms) | p99 at 2S (ms) | ratio (target ≤ 3 with shed) | answered at 2S | shed drops |\n|---|---|---|---|---|---|---|\n',
  );
  for (const name of ['shed', 'plain'] as const) {
    const rs = results[name];
    const ratios = rs.map((x) => x.overP99ms / x.halfP99ms);
    process.stdout.write(
      `| ${name === 'shed' ? 'whoami + shed' : 'whoami'} | ${median(rs.map((x) => x.saturation))} | ${median(rs.map((x) => x.halfP99ms)).toFixed(2)} | ${median(rs.map((x) => x.overP99ms)).toFixed(2)} | ${median(ratios).toFixed(2)} (rounds: ${ratios.map((x) => x.toFixed(2)).join(', ')}) | ${median(rs.map((x) => x.overAnswered / x.overSent)).toFixed(2)} | ${median(rs.map((x) => x.shedQuery))} |\n`,
    );
  }
}
