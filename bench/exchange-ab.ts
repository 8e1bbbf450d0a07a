/**
 * A/B of the client side of a cache miss: forward's `UdpPool.exchange` from this checkout against
 * the same from another built checkout, in one process, in alternation (order flipped each round),
 * against `bench/upstream.ts` running in a child process. The figure is CPU time of this process
 * per exchange (`process.cpuUsage`), which the machine's load disturbs far less than QPS through
 * the kernel: on a shared machine `npm run bench`'s UDP rows move by ±30 % between runs.
 *
 *   npm run build:bench && node dist/bench/exchange-ab.js --baseline /work/main --rounds 14 --n 50000
 */
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { QuestionKey } from '../src/dns/match.js';
import { startNode } from './lib.js';

interface Pool {
  exchange(packet: Buffer, q: QuestionKey, timeoutMs: number): Promise<Buffer>;
  close(): void;
}
interface Build {
  readonly label: string;
  readonly newPool: (port: number) => Pool;
  readonly buildQuery: (name: string, qtype: number, rd: boolean) => Buffer;
}

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    rounds: { type: 'string', default: '10' },
    n: { type: 'string', default: '50000' },
    concurrency: { type: 'string', default: '100' },
  },
});
if (values.baseline === undefined) throw new Error('exchange-ab: --baseline DIR (a built checkout) is required');
const rounds = Number(values.rounds);
const perRun = Number(values.n);
const concurrency = Number(values.concurrency);

/** The pool and query builder of the checkout whose `dist/` is `dist`. */
async function load(label: string, dist: string): Promise<Build> {
  const udp = (await import(pathToFileURL(join(dist, 'plugins/forward/udp.js')).href)) as {
    UdpPool: new (o: object) => Pool;
  };
  const enc = (await import(pathToFileURL(join(dist, 'src/dns/encode.js')).href)) as Pick<Build, 'buildQuery'>;
  const newPool = (port: number): Pool =>
    new udp.UdpPool({
      host: '127.0.0.1',
      port,
      label: `127.0.0.1:${port}`,
      sourceAddress: null,
      expireMs: 10_000,
      size: 4,
      onConn: () => undefined,
    });
  return { label, newPool, buildQuery: enc.buildQuery };
}

/** `perRun` exchanges, `concurrency` at a time: CPU µs per exchange and failures. */
async function run(b: Build, port: number): Promise<{ us: number; failed: number }> {
  const pool = b.newPool(port);
  const names = Array.from({ length: 1000 }, (_, i) => `n${i}.example.org.`);
  const packets = names.map((n) => b.buildQuery(n, 1, true));
  const questions = names.map((lname) => ({ lname, qtype: 1, qclass: 1 }));
  let started = 0;
  let failed = 0;
  const cpu0 = process.cpuUsage();
  const worker = async (): Promise<void> => {
    while (started < perRun) {
      const i = started++ % names.length;
      try {
        await pool.exchange(packets[i]!, questions[i]!, 2000);
      } catch {
        failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const cpu = process.cpuUsage(cpu0);
  pool.close();
  return { us: (cpu.user + cpu.system) / perRun, failed };
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const port = 40_000 + Math.floor(Math.random() * 10_000);
console.log('step 1/3: starting the upstream (bench/upstream.ts)');
const upstream = await startNode(join(here, 'upstream.js'), [String(port)], /upstream listening/, null);
try {
  const builds = [
    await load('this checkout', resolve(here, '..')),
    await load(`baseline ${values.baseline}`, join(resolve(values.baseline), 'dist')),
  ] as const;
  console.log('step 2/3: warm-up of both');
  for (const b of builds) await run(b, port);
  const us: [number[], number[]] = [[], []];
  let failed = 0;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    for (const k of r % 2 === 0 ? [0, 1] : [1, 0]) {
      const res = await run(builds[k]!, port);
      us[k]!.push(res.us);
      failed += res.failed;
    }
    console.log(
      `step 3/3: round ${r + 1}/${rounds}: ${us[0].at(-1)!.toFixed(1)} vs ${us[1].at(-1)!.toFixed(1)} µs/exchange (${((performance.now() - t0) / 1000).toFixed(1)} s)`,
    );
  }
  const ratios = us[0].map((a, i) => a / us[1][i]!);
  for (const [k, b] of builds.entries())
    console.log(`${b.label}: median ${median(us[k]!).toFixed(2)} CPU µs per exchange`);
  console.log(`CPU per exchange, this / baseline: median of per-round ratios ${median(ratios).toFixed(3)}`);
  if (failed > 0) {
    console.error(
      `exchange-ab: ${failed} exchanges failed (upstream overloaded or not answering): the figures are not comparable`,
    );
    process.exitCode = 1;
  }
} finally {
  await upstream.stop();
}
