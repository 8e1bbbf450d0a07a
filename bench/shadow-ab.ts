/**
 * `npm run build:bench && node dist/bench/shadow-ab.js`: what the shadow plugin costs per query, as an
 * A/B of the dispatcher (the bench:micro method: packets handed straight to a listener's dispatch
 * function) with the configurations measured in alternating rounds, in process CPU time, so that
 * drift and other processes on a shared machine hit every configuration alike. Copies go to a UDP
 * sink on loopback. Prints the median and best round per configuration and the ratio of medians.
 */
import * as dgram from 'node:dgram';
import * as dnsPacket from 'dns-packet';
import { makeDispatch } from '../src/server/dispatch.js';
import type { Exchange } from '../src/server/listener.js';
import { Server } from '../src/server/server.js';

const ROUNDS = Number(process.env.ROUNDS ?? 30);
let port = 47000 + Math.floor(Math.random() * 5000);

interface Config {
  readonly label: string;
  readonly n: number;
  readonly server: Server;
  readonly run: () => void;
  readonly perQueryNs: number[];
}

async function setup(label: string, corefile: string, n: number): Promise<Config> {
  const p = port++;
  const server = new Server({
    dnsPort: p,
    quiet: true,
    loadSource: async () => ({ path: 'bench', text: corefile.replaceAll('{PORT}', String(p)) }),
  });
  await server.start();
  const spec = [...server.current!.listens.values()][0]!;
  const dispatch = makeDispatch(spec.table, { maxUdpSize: 1232 });
  const pkt = dnsPacket.encode({
    id: 1,
    type: 'query',
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ name: 'example.org', type: 'A', class: 'IN' }],
  });
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
  return {
    label,
    n,
    server,
    perQueryNs: [],
    run: () => {
      for (let i = 0; i < n; i++) dispatch(pkt, ex);
    },
  };
}

function median(a: number[]): number {
  const s = [...a].sort((x, y) => x - y);
  return s[s.length >> 1]!;
}

async function main(): Promise<void> {
  const sink = dgram.createSocket('udp4');
  await new Promise<void>((r) => sink.bind(0, '127.0.0.1', () => r()));
  const to = `127.0.0.1:${sink.address().port}`;
  const configs = [
    await setup('whoami', '.:{PORT} {\n whoami\n}\n', 200_000),
    await setup(
      'shadow 0.01 → whoami',
      `.:{PORT} {\n shadow ${to} {\n  fraction 0.01\n  log_rate 0\n }\n whoami\n}\n`,
      200_000,
    ),
    await setup('whoami (10k rounds)', '.:{PORT} {\n whoami\n}\n', 10_000),
    await setup(
      'shadow 1 → whoami (10k rounds)',
      `.:{PORT} {\n shadow ${to} {\n  fraction 1\n  log_rate 0\n  max_outstanding 10000\n  timeout 100ms\n }\n whoami\n}\n`,
      10_000,
    ),
  ];
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of configs) {
      const u0 = process.cpuUsage();
      c.run();
      await new Promise((r) => setImmediate(r));
      const u = process.cpuUsage(u0);
      if (round >= 2) c.perQueryNs.push(((u.user + u.system) * 1e3) / c.n);
    }
    // Let the fraction-1 copies time out between rounds, so every round sends all of its copies.
    await new Promise((r) => setTimeout(r, 150));
  }
  for (let i = 0; i < configs.length; i += 2) {
    const base = median(configs[i]!.perQueryNs);
    for (const c of [configs[i]!, configs[i + 1]!]) {
      const m = median(c.perQueryNs);
      process.stdout.write(
        `${c.label.padEnd(32)} median ${m.toFixed(0).padStart(6)} ns/query  best ${Math.min(...c.perQueryNs)
          .toFixed(0)
          .padStart(6)}  ratio ${(m / base).toFixed(3)}\n`,
      );
    }
  }
  for (const c of configs) await c.server.shutdown();
  sink.close();
  process.exit(0);
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
