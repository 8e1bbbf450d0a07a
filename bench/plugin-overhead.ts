/**
 * What a plugin rule that never matches costs on the kubernetes answer path: kubeadm's Corefile,
 * and the same Corefile plus extra lines (by default a `rewrite` regex rule no cluster name
 * matches), served side by side against the sandbox's synthetic cluster and loaded in alternation
 * with the k8s-service query mix of `npm run bench` (80 % A / 20 % AAAA on random services, 10 %
 * NXDOMAIN). Each round loads one server, then the other (the order flips every round); the
 * medians of the saturation runs are compared.
 *
 * `--micro 1` measures the same two Corefiles in this process instead, without sockets (packets
 * handed to the listener's dispatch function, as `npm run bench:micro` does), alternating rounds of
 * 200,000 queries on the fixture cluster: the per-query cost without the kernel's UDP noise.
 *
 * Usage: npm run build:bench && node dist/bench/plugin-overhead.js [--duration 5] [--rounds 5]
 *        [--services 10000] [--micro 1] [--extra 'rewrite name regex (.*)\.corp\.example\.com {1}.default.svc.cluster.local answer auto']
 *        (--extra may be repeated; each is one line of the block)
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as dnsPacket from 'dns-packet';
import { startSandbox } from '../sandbox/server.js';
import { makeDispatch } from '../src/server/dispatch.js';
import type { Exchange } from '../src/server/listener.js';
import { Server } from '../src/server/server.js';
import {
  ensureDnsperf,
  kubeadmCorefile,
  median,
  runLoad,
  serviceQueries,
  SERVER_NODE_ARGS,
  startNode,
  startSyntheticSandbox,
  type Proc,
} from './lib.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');

interface Args {
  duration: number;
  rounds: number;
  services: number;
  extra: string[];
  micro: boolean;
}

const DEFAULT_EXTRA = ['rewrite name regex (.*)\\.corp\\.example\\.com {1}.default.svc.cluster.local answer auto'];

function parseArgs(argv: string[]): Args {
  const a: Args = { duration: 5, rounds: 5, services: 10_000, extra: [], micro: false };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i];
    const v = argv[i + 1];
    if (v === undefined) break;
    if (k === '--duration') a.duration = Number(v);
    else if (k === '--rounds') a.rounds = Number(v);
    else if (k === '--services') a.services = Number(v);
    else if (k === '--extra') a.extra.push(v);
    else if (k === '--micro') a.micro = v !== '0';
  }
  if (a.extra.length === 0) a.extra = DEFAULT_EXTRA;
  return a;
}

let nextPort = 20000 + Math.floor(Math.random() * 20000);
const port = (): number => nextPort++;

/** kubeadm's Corefile on fresh loopback ports (forward to a closed loopback port: no query leaves the host). */
function kubeadm(dns: number, api: string, extra: readonly string[]): string {
  return kubeadmCorefile(
    { dns, health: port(), ready: port(), metrics: port(), upstream: port() },
    `endpoint ${api}`,
    extra,
  );
}

async function startServer(corefile: string, dns: number): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-overhead-'));
  const path = join(dir, 'Corefile');
  writeFileSync(path, corefile);
  return startNode(
    join(root, 'bin/clusterdns'),
    ['-conf', path, '-dns.port', String(dns)],
    /^clusterdns-\d/,
    0,
    {},
    SERVER_NODE_ARGS,
  );
}

/** In-process: the two Corefiles' dispatch functions, alternating timed rounds (best round counts). */
async function micro(args: Args): Promise<void> {
  const sb = await startSandbox({ files: [join(root, 'examples/cluster.yaml')], log: () => undefined });
  const names = [
    'svc1.testns.svc.cluster.local',
    'kubernetes.default.svc.cluster.local',
    'missing.testns.svc.cluster.local',
    'hl.testns.svc.cluster.local',
    'dual.testns.svc.cluster.local',
  ];
  const packets = names.flatMap((name, i) =>
    ['A', 'AAAA'].map((type, j) =>
      dnsPacket.encode({
        id: i * 2 + j,
        type: 'query',
        flags: dnsPacket.RECURSION_DESIRED,
        questions: [{ name, type: type as 'A', class: 'IN' }],
      }),
    ),
  );
  const setups = [];
  for (const extra of [[], args.extra]) {
    const p = port();
    const server = new Server({
      dnsPort: p,
      quiet: true,
      loadSource: () => Promise.resolve({ path: 'bench', text: kubeadm(p, sb.url, extra) }),
    });
    await server.start();
    const spec = [...server.current!.listens.values()][0]!;
    const dispatch = makeDispatch(spec.table, { maxUdpSize: 1232 });
    const ex: Exchange = {
      proto: 'udp',
      family: 1,
      remoteAddress: '127.0.0.1',
      remotePort: 5555,
      localAddress: '',
      localPort: p,
      server: spec.name,
      respond: () => undefined,
      done: () => undefined,
    };
    for (const pkt of packets) dispatch(pkt, ex);
    setups.push({ name: extra.length ? 'kubeadm + extra' : 'kubeadm', server, dispatch, ex, rounds: [] as number[] });
  }
  await new Promise((r) => setTimeout(r, 300));
  const N = 200_000;
  for (let round = 0; round < Math.max(args.rounds, 3) * 2; round++) {
    for (const s of round % 2 === 0 ? setups : [...setups].reverse()) {
      const t0 = performance.now();
      for (let i = 0; i < N; i++) s.dispatch(packets[i % packets.length]!, s.ex);
      await new Promise((r) => setImmediate(r));
      s.rounds.push(((performance.now() - t0) * 1e6) / N);
    }
  }
  for (const s of setups) await s.server.shutdown();
  await sb.close();
  process.stdout.write(`extra lines: ${args.extra.join(' | ')}\n`);
  for (const s of setups)
    process.stdout.write(
      `${s.name.padEnd(16)} in-process best ${Math.min(...s.rounds).toFixed(0)} ns/query, median ${median(s.rounds).toFixed(0)}\n`,
    );
  const [a, b] = setups.map((s) => Math.min(...s.rounds)) as [number, number];
  process.stdout.write(`ratio (queries/s with extra / without, best rounds): ${(a / b).toFixed(3)}\n`);
  process.exit(0);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.micro) return micro(args);
  ensureDnsperf();
  const { proc: sandbox, url } = await startSyntheticSandbox(args.services, args.services * 3, 1);
  const q = await serviceQueries(url);

  const pPlain = port();
  const pExtra = port();
  const plain = await startServer(kubeadm(pPlain, url, []), pPlain);
  const extra = await startServer(kubeadm(pExtra, url, args.extra), pExtra);
  const targets = [
    { name: 'kubeadm', port: pPlain, runs: [] as number[] },
    { name: 'kubeadm + extra', port: pExtra, runs: [] as number[] },
  ];
  try {
    for (const t of targets) await runLoad({ port: t.port, queries: q, proto: 'udp', durationS: 2 }); // warm-up: sync, JIT
    for (let r = 0; r < args.rounds; r++) {
      const order = r % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order)
        t.runs.push((await runLoad({ port: t.port, queries: q, proto: 'udp', durationS: args.duration })).qps);
    }
  } finally {
    await plain.stop();
    await extra.stop();
    await sandbox.stop();
  }
  const [a, b] = targets.map((t) => median(t.runs)) as [number, number];
  process.stdout.write(`extra lines: ${args.extra.join(' | ')}\n`);
  for (const t of targets)
    process.stdout.write(
      `${t.name.padEnd(16)} udp runs ${t.runs.map((x) => Math.round(x)).join(' ')} qps, median ${Math.round(median(t.runs))}\n`,
    );
  process.stdout.write(`ratio (with extra / without): ${(b / a).toFixed(3)}\n`);
}

void main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
