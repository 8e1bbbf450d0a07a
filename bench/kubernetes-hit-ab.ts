/**
 * A/B of the kubernetes plugin's cached-answer path (packet in → precomputed reply out): a server
 * of this checkout and one of another built checkout, in one process, each with `kubernetes
 * cluster.local` on the same sandbox (examples/cluster.yaml), their listener's dispatch function
 * called `--n` times per round with A queries for a ClusterIP service, a headless service, a
 * dual-stack service and a missing name. Rounds alternate (order flipped each round); the figure
 * is this process's CPU time per query (`process.cpuUsage`), and the ratio quoted is the median of
 * the per-round ratios baseline/this (above 1: this build is cheaper).
 *
 *   npm run build:bench && node dist/bench/kubernetes-hit-ab.js --baseline /work/main --rounds 16 --n 200000
 */
import { createSocket } from 'node:dgram';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import * as dnsPacket from 'dns-packet';
import { startSandbox } from '../sandbox/server.js';
import type { Exchange } from '../src/server/listener.js';
import { discardExchange } from './directdispatch.js';

interface ServerLike {
  start(): Promise<void>;
  shutdown(): Promise<number>;
  readonly current: {
    readonly listens: ReadonlyMap<unknown, { readonly table: unknown; readonly name: string }>;
  } | null;
}
interface BuildModules {
  readonly Server: new (o: {
    dnsPort: number;
    quiet: boolean;
    loadSource: () => Promise<{ path: string; text: string }>;
  }) => ServerLike;
  readonly makeDispatch: (table: unknown, o: { maxUdpSize: number }) => (pkt: Buffer, ex: Exchange) => void;
}
interface Side {
  readonly label: string;
  readonly server: ServerLike;
  readonly run: () => void;
  readonly perQueryNs: number[];
}

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    rounds: { type: 'string', default: '16' },
    n: { type: 'string', default: '200000' },
  },
});
if (!values.baseline) {
  process.stderr.write('usage: node dist/bench/kubernetes-hit-ab.js --baseline DIR [--rounds R] [--n N]\n');
  process.exit(2);
}
const rounds = Number(values.rounds);
const n = Number(values.n);
const ROOT = resolve(here, '../..');
const NAMES = [
  'svc1.testns.svc.cluster.local',
  'hl.testns.svc.cluster.local',
  'dual.testns.svc.cluster.local',
  'nosuch.testns.svc.cluster.local',
];

async function load(distDir: string): Promise<BuildModules> {
  const server = (await import(pathToFileURL(join(distDir, 'src/server/server.js')).href)) as Pick<
    BuildModules,
    'Server'
  >;
  const dispatch = (await import(pathToFileURL(join(distDir, 'src/server/dispatch.js')).href)) as Pick<
    BuildModules,
    'makeDispatch'
  >;
  return { Server: server.Server, makeDispatch: dispatch.makeDispatch };
}

/** A port the kernel just had free for TCP and UDP (the server binds both). */
async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((res, rej) => {
      const srv = createServer();
      srv.once('error', rej);
      srv.listen(0, () => {
        const p = (srv.address() as AddressInfo).port;
        srv.close(() => res(p));
      });
    });
    const udpFree = await new Promise<boolean>((res) => {
      const sock = createSocket('udp6');
      sock.once('error', () => res(false));
      sock.bind(port, () => sock.close(() => res(true)));
    });
    if (udpFree) return port;
  }
}

async function side(label: string, m: BuildModules, api: string): Promise<Side> {
  const port = await freePort();
  const text = `.:${port} {\n  kubernetes cluster.local {\n    endpoint ${api}\n  }\n}\n`;
  const server = new m.Server({ dnsPort: port, quiet: true, loadSource: async () => ({ path: 'bench', text }) });
  await server.start();
  const spec = [...server.current!.listens.values()][0]!;
  const dispatch = m.makeDispatch(spec.table, { maxUdpSize: 1232 });
  const pkts = NAMES.map((name) =>
    dnsPacket.encode({
      id: 1,
      type: 'query',
      flags: dnsPacket.RECURSION_DESIRED,
      questions: [{ name, type: 'A', class: 'IN' }],
    }),
  );
  const ex = discardExchange(port, spec.name);
  return {
    label,
    server,
    perQueryNs: [],
    run: () => {
      for (let i = 0; i < n; i++) dispatch(pkts[i % pkts.length]!, ex);
    },
  };
}

const median = (a: readonly number[]): number => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;

process.stdout.write('step 1/3: sandbox and both servers\n');
const sb = await startSandbox({ files: [join(ROOT, 'examples/cluster.yaml')], log: () => undefined });
const cand = await side('this', await load(join(ROOT, 'dist')), sb.url);
const base = await side('baseline', await load(join(resolve(values.baseline), 'dist')), sb.url);
process.stdout.write('step 2/3: warm-up (answers computed and cached)\n');
cand.run();
base.run();
const ratios: number[] = [];
for (let r = 0; r < rounds; r++) {
  process.stdout.write(`step 3/3: round ${r + 1}/${rounds}\r`);
  const ns: Record<string, number> = {};
  for (const s of r % 2 ? [base, cand] : [cand, base]) {
    const c0 = process.cpuUsage();
    s.run();
    const c = process.cpuUsage(c0);
    ns[s.label] = ((c.user + c.system) * 1000) / n;
    s.perQueryNs.push(ns[s.label]!);
  }
  ratios.push(ns['baseline']! / ns['this']!);
}
process.stdout.write(
  `\nCPU ns/query (median): this ${median(cand.perQueryNs).toFixed(0)}, baseline ${median(base.perQueryNs).toFixed(0)}\n` +
    `ratio baseline/this, median of ${rounds} rounds: ${median(ratios).toFixed(3)} (rounds: ${ratios.map((x) => x.toFixed(2)).join(' ')})\n`,
);
await cand.server.shutdown();
await base.server.shutdown();
await sb.close();
process.exit(0);
