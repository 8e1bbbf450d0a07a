/**
 * Each query thread's heap bound applies whatever heap flag the main thread was started with
 * (docs/multicore.md §4, "Heap"; src/server/thread-heap.ts): `bin/clusterdns` under a memory
 * limit (a fake cgroup mount, as the launcher reads it), each thread's `heap_size_limit` read
 * inside the thread through `clusterdns_thread_heap_size_limit_bytes`, and a thread driven past
 * its bound by real traffic (unique names into a cache sized beyond the bound) being replaced
 * while the process serves on, within its limit.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { THREAD_HEAP_MIB } from '../../src/util/cpus.js';
import { heapPlan } from '../../src/util/heap.js';
import { fakeCgroupRoot } from '../helpers/cgroup.js';
import { encodeQuery, udpQuery } from '../helpers/dns.js';
import { httpRequest } from '../helpers/http.js';
import { freePort } from '../helpers/net.js';
import { BIN, watchLines, type LineWatch } from '../helpers/spawn.js';
import { anyError, waitFor } from '../helpers/wait.js';

const MiB = 1048576;
/** The pod's memory limit in these tests: room for the main thread and a query thread or two. */
const LIMIT = 512 * MiB;
/** bin/clusterdns's young generation flag, which the tests pass as the launcher's shell part does. */
const SEMI = '--max-semi-space-size=2';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** heap_size_limit of a node started with `flags` (main thread), or of a Worker it starts with `workerMib`. */
function referenceLimit(flags: string[], workerMib?: number): number {
  const script =
    workerMib === undefined
      ? "process.stdout.write(String(require('v8').getHeapStatistics().heap_size_limit))"
      : `const { Worker } = require('node:worker_threads');
         const w = new Worker("require('node:worker_threads').parentPort.postMessage(require('v8').getHeapStatistics().heap_size_limit)", { eval: true, resourceLimits: { maxOldGenerationSizeMb: ${workerMib} } });
         w.on('message', (m) => { process.stdout.write(String(m)); w.terminate(); });`;
  const r = spawnSync(process.execPath, [...flags, '-e', script], { encoding: 'utf8', timeout: 30_000 });
  expect(r.status).toBe(0);
  return Number(r.stdout);
}

/** Every `clusterdns_thread_heap_size_limit_bytes` sample of a scrape, by thread. */
function limitsOf(scrape: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of scrape.matchAll(/^clusterdns_thread_heap_size_limit_bytes\{thread="(\d+)"\} (\S+)$/gm))
    out.set(m[1]!, Number(m[2]));
  return out;
}

function sample(scrape: string, name: string): number | null {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(scrape);
  return m ? Number(m[1]) : null;
}

interface Running extends LineWatch {
  dns: number;
  metrics: number;
  pid: number;
  exitCode(): number | null;
  scrape(): Promise<string>;
}

async function start(workers: number, env: NodeJS.ProcessEnv, blockExtra: string): Promise<Running> {
  const [dns, metrics] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-thread-heap-'));
  const corefile = join(dir, 'Corefile');
  writeFileSync(corefile, `.:${dns} {\n    prometheus 127.0.0.1:${metrics}\n${blockExtra}}\n`);
  const cgroup = fakeCgroupRoot({ 'memory.max': String(LIMIT) }, '\n');
  const proc = spawn(process.execPath, [SEMI, BIN, '-conf', corefile, '-workers', String(workers)], {
    cwd: dir,
    env: { ...process.env, CLUSTERDNS_CGROUP_ROOT: cgroup, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines = watchLines(proc, { label: 'clusterdns', timeoutMs: 60_000 });
  cleanups.push(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    return lines.exited;
  });
  const scrape = async (): Promise<string> => (await httpRequest(metrics, '/metrics')).body;
  await waitFor(
    `${workers} threads serving`,
    async () => {
      if (proc.exitCode !== null) throw new Error(`clusterdns exited (${proc.exitCode}):\n${lines.output.join('\n')}`);
      return sample(await scrape(), 'clusterdns_query_threads') === workers;
    },
    { retry: (e) => (e as NodeJS.ErrnoException).code === 'ECONNREFUSED', timeoutMs: 60_000 },
  );
  return { ...lines, dns, metrics, pid: proc.pid!, exitCode: () => proc.exitCode, scrape };
}

/** The most RSS the process ever had (VmHWM), bytes. */
function peakRss(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/**
 * One round of `count` A queries for names never asked before, from `sockets` sockets (source
 * ports: the kernel spreads them over the threads), at most 16 outstanding per socket. Resolves
 * with the number answered; a query not answered within 2 s counts as lost (a thread that dies
 * drops the queries it had).
 */
async function uniqueNames(port: number, round: number, count: number, sockets = 32): Promise<number> {
  const label = 'x'.repeat(60);
  let answered = 0;
  await Promise.all(
    Array.from({ length: sockets }, (_, s) => {
      const sock = createSocket('udp4');
      const per = Math.ceil(count / sockets);
      return new Promise<void>((resolve) => {
        let next = 0;
        const pending = new Map<number, NodeJS.Timeout>();
        const finish = (id: number): void => {
          clearTimeout(pending.get(id));
          pending.delete(id);
          pump();
        };
        const pump = (): void => {
          while (pending.size < 16 && next < per) {
            const id = next++;
            const name = `${label}.${label}.${label}.r${round}s${s}q${id}.example.`;
            pending.set(
              id,
              setTimeout(() => finish(id), 2000),
            );
            sock.send(encodeQuery(name, 'A', { id }), port, '127.0.0.1');
          }
          if (pending.size === 0) {
            sock.close();
            resolve();
          }
        };
        sock.on('message', (msg) => {
          const id = msg.readUInt16BE(0);
          if (!pending.has(id)) return;
          answered++;
          finish(id);
        });
        sock.bind(0, '127.0.0.1', pump);
      });
    }),
  );
  return answered;
}

describe('query thread heap bounds', () => {
  it("each thread's heap_size_limit, read inside it, is its own bound whatever the main thread's flag", async () => {
    const expectedThread = referenceLimit([SEMI], THREAD_HEAP_MIB);
    // The threads' bound is what a Worker gets without any process-wide heap flag, and far below
    // the main thread's (nodejs/node#43991 gave every thread the main thread's).
    expect(expectedThread).toBeLessThan((THREAD_HEAP_MIB + 16) * MiB);

    // The launcher's flag, from the cgroup limit: the main thread gets 70 % of what two threads leave.
    const cgroup = fakeCgroupRoot({ 'memory.max': String(LIMIT) }, '\n');
    const plan = heapPlan({ CLUSTERDNS_CGROUP_ROOT: cgroup }, [], ['-workers', '3']);
    const launched = await start(3, {}, '    whoami\n');
    const limits = limitsOf(await launched.scrape());
    expect([...limits.keys()].sort()).toEqual(['0', '1', '2']);
    expect(limits.get('0')).toBe(referenceLimit([SEMI, plan.flag!]));
    expect(limits.get('1')).toBe(expectedThread);
    expect(limits.get('2')).toBe(expectedThread);
    // Every bound together stays inside the limit.
    expect(limits.get('0')! + 2 * expectedThread).toBeLessThan(LIMIT);

    // An operator's own flag in NODE_OPTIONS is the main thread's; the threads keep theirs.
    const operator = await start(2, { NODE_OPTIONS: '--max-old-space-size=300' }, '    whoami\n');
    const opLimits = limitsOf(await operator.scrape());
    expect(opLimits.get('0')).toBe(referenceLimit([SEMI, '--max-old-space-size=300']));
    expect(opLimits.get('1')).toBe(expectedThread);
  }, 180_000);

  it('a thread driven past its bound is replaced while the process serves on, within its limit', async () => {
    // A cache far larger than a thread's heap can hold (an operator's mistake), and a client
    // asking names nobody asked before: each answer is cached until a thread's heap is full.
    const server = await start(
      2,
      {},
      '    cache 3600 {\n        success 2000000\n        denial 2000000\n    }\n' +
        '    template IN A example {\n        answer "{{ .Name }} 60 IN A 10.0.0.1"\n    }\n',
    );
    const bound = limitsOf(await server.scrape()).get('1')!;
    expect(bound).toBe(referenceLimit([SEMI], THREAD_HEAP_MIB));
    const oom = /query thread 1: Worker terminated due to reaching memory limit/;
    // Rounds of 20,000 new names until the query thread has reached its bound (a bound of work,
    // not of time: 60 rounds hold many times what a thread's heap can).
    let round = 0;
    while (!server.output.some((l) => oom.test(l))) {
      expect(round, 'query thread 1 never reached its heap bound').toBeLessThan(60);
      expect(server.exitCode(), 'the server exited').toBeNull();
      await uniqueNames(server.dns, round++, 20_000);
    }
    await server.waitFor(/query thread 1 exited \(1\); starting a new one/);
    // The main thread served on; the replacement serves again with the same bound.
    await waitFor(
      'the replacement thread serving',
      async () => sample(await server.scrape(), 'clusterdns_query_threads') === 2,
      { retry: anyError, timeoutMs: 60_000 },
    );
    expect(limitsOf(await server.scrape()).get('1')).toBe(bound);
    const answers = await Promise.all(Array.from({ length: 20 }, () => udpQuery(server.dns, 'after.example.', 'A')));
    expect(answers.every((m) => m.answers?.length === 1)).toBe(true);
    expect(server.exitCode()).toBeNull();
    expect(server.output.filter((l) => /fatal|heap out of memory/i.test(l) && !oom.test(l))).toEqual([]);
    // The process never took more than its limit: the thread's bound stopped it first.
    expect(peakRss(server.pid)).toBeLessThan(LIMIT);
  }, 600_000);
});
