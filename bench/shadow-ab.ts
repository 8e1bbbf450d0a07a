/**
 * `npm run build:bench && node dist/bench/shadow-ab.js`: what the shadow plugin costs per query, as an
 * A/B of the dispatcher (the bench:micro method: packets handed straight to a listener's dispatch
 * function) with the configurations measured in alternating rounds, in process CPU time, so that
 * drift and other processes on a shared machine hit every configuration alike. Copies go to a UDP
 * sink on loopback. Prints the median and best round per configuration and the ratio of medians.
 */
import * as dgram from 'node:dgram';
import { directDispatch } from './directdispatch.js';
import { median } from './lib.js';

const ROUNDS = Number(process.env.ROUNDS ?? 30);

async function main(): Promise<void> {
  const sink = dgram.createSocket('udp4');
  await new Promise<void>((r) => sink.bind(0, '127.0.0.1', () => r()));
  const to = `127.0.0.1:${sink.address().port}`;
  const configs = [
    await directDispatch('whoami', '.:{PORT} {\n whoami\n}\n', 200_000),
    await directDispatch(
      'shadow 0.01 → whoami',
      `.:{PORT} {\n shadow ${to} {\n  fraction 0.01\n  log_rate 0\n }\n whoami\n}\n`,
      200_000,
    ),
    await directDispatch('whoami (10k rounds)', '.:{PORT} {\n whoami\n}\n', 10_000),
    await directDispatch(
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
