/**
 * `npm run bench:micro`: the server's own cost per query, without sockets: packets are handed
 * straight to the listener's dispatch function (parse, route, chain, fit the reply) in a loop.
 * Complements `npm run bench`, whose figures are dominated by the kernel's UDP send and receive.
 *
 * Scenarios: whoami; a cache hit (forward to a local responder, primed); the kubernetes plugin
 * answering from its precomputed replies (fixture cluster in the sandbox).
 */
import { spawn } from 'node:child_process';
import * as dgram from 'node:dgram';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as dnsPacket from 'dns-packet';
import { startSandbox } from '../sandbox/server.js';
import { makeDispatch } from '../src/server/dispatch.js';
import { Server } from '../src/server/server.js';
import type { Exchange } from '../src/server/listener.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const N = Number(process.env.N ?? 500_000);
let port = 36000 + Math.floor(Math.random() * 10000);

async function measure(label: string, corefile: string, names: string[]): Promise<void> {
  const p = port++;
  const server = new Server({
    dnsPort: p,
    quiet: true,
    loadSource: async () => ({ path: 'bench', text: corefile.replaceAll('{PORT}', String(p)) }),
  });
  await server.start();
  const spec = [...server.current!.listens.values()][0]!;
  const dispatch = makeDispatch(spec.table, { maxUdpSize: 1232 });
  const packets = names.map((name, i) =>
    dnsPacket.encode({
      id: i,
      type: 'query',
      flags: dnsPacket.RECURSION_DESIRED,
      questions: [{ name, type: 'A', class: 'IN' }],
    }),
  );
  let replies = 0;
  const ex: Exchange = {
    proto: 'udp',
    family: 1,
    remoteAddress: '127.0.0.1',
    remotePort: 5555,
    localAddress: '',
    localPort: p,
    server: spec.name,
    respond: () => void replies++,
    done: () => undefined,
  };
  // Prime caches (a miss may wait for an upstream), then three timed rounds; the best counts.
  for (const pkt of packets) dispatch(pkt, ex);
  await new Promise((r) => setTimeout(r, 300));
  const rounds: number[] = [];
  for (let round = 0; round < 3; round++) {
    const t0 = performance.now();
    for (let i = 0; i < N; i++) dispatch(packets[i % packets.length]!, ex);
    await new Promise((r) => setImmediate(r));
    rounds.push(((performance.now() - t0) * 1e6) / N);
  }
  await server.shutdown();
  process.stdout.write(
    `${label.padEnd(28)} ${Math.min(...rounds)
      .toFixed(0)
      .padStart(6)} ns/query  (${replies} replies)\n`,
  );
}

async function main(): Promise<void> {
  await measure('whoami', '.:{PORT} {\n  whoami\n}\n', ['example.org']);
  // shadow's cost on the client's path: copies go to a UDP sink (or are dropped past max_outstanding).
  const sink = dgram.createSocket('udp4');
  await new Promise<void>((r) => sink.bind(0, '127.0.0.1', () => r()));
  for (const f of ['0.01', '1'])
    await measure(
      `whoami + shadow ${f}`,
      `.:{PORT} {\n  shadow 127.0.0.1:${sink.address().port} {\n    fraction ${f}\n    log_rate 0\n  }\n  whoami\n}\n`,
      ['example.org'],
    );
  sink.close();
  const up = spawn(process.execPath, [join(root, 'dist/bench/upstream.js'), '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const upPort = await new Promise<number>((r) =>
    up.stdout.on('data', (c: Buffer) => r(Number(/listening on (\d+)/.exec(c.toString())?.[1]))),
  );
  await measure('cache hit', `.:{PORT} {\n  cache 3600\n  forward . 127.0.0.1:${upPort}\n}\n`, [
    'a.example.com',
    'b.Example.com',
    'c.example.com',
  ]);
  await measure(
    'cache hit + prometheus,log,lb',
    `.:{PORT} {\n  prometheus 127.0.0.1:0\n  errors\n  log . {\n    class denial\n  }\n  loadbalance\n  cache 3600\n  forward . 127.0.0.1:${upPort}\n}\n`,
    ['a.example.com', 'b.Example.com', 'c.example.com'],
  );
  up.kill();
  const sb = await startSandbox({ files: [join(root, 'examples/cluster.yaml')], log: () => {} });
  await measure('kubernetes (fixture)', `.:{PORT} {\n  kubernetes cluster.local {\n    endpoint ${sb.url}\n  }\n}\n`, [
    'svc1.testns.svc.cluster.local',
    'kubernetes.default.svc.cluster.local',
    'missing.testns.svc.cluster.local',
  ]);
  await sb.close();
  process.exit(0);
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
