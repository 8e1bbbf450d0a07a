/**
 * `npm run build:bench && node dist/bench/dnstap-ab.js`: what the dnstap plugin costs per query,
 * as an A/B of the dispatcher (the bench:micro method, as bench/shadow-ab.ts): whoami alone, and
 * behind `dnstap` with and without `full`, in alternating rounds, in process CPU time. The collector
 * is a unix socket in this process that completes the handshake and discards the frames, so the
 * CPU of encoding and writing the records (done after each round's queries, off the query path)
 * and of reading them is all counted. Prints median and best per configuration and the ratio of
 * medians to whoami alone; answers per CPU-second with dnstap on are 1 / ratio of those without.
 *
 * SPREAD=1 hands each query over in its own turn of the event loop (setImmediate), as queries
 * from a socket arrive, instead of all in one loop: what is deferred per turn (dnstap's flush) is
 * then paid per query, as in a server. ROUNDS (default 20) sets the rounds. EXTRA=1 adds `dnstap
 * full` with a literal `extra` (its bytes made once at setup) and with a template of replacer
 * placeholders (rendered per record), to price the `extra` option.
 */
import { mkdtempSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONTENT_TYPE, Control, controlFrame, FrameReader } from '../src/dnstap/framestream.js';
import { directDispatch } from './directdispatch.js';
import { median } from './lib.js';

const ROUNDS = Number(process.env.ROUNDS ?? 20);
/** Queries per round: two records each stay within the queue (QUEUE multiple 8 = 80,000). */
const N = 20_000;
const SPREAD = process.env.SPREAD === '1';
const EXTRA = process.env.EXTRA === '1';
/** A template as a collector would want it: client, question, id and a metadata label. */
const EXTRA_TEMPLATE = '{remote}:{port} {>id} {type} {name} {proto} {size} {/kubernetes/client-namespace}';

/** One round of `c`: all at once, or (SPREAD) one query per turn of the event loop. */
async function runRound(c: { run: () => void; runOne: () => void; n: number }): Promise<void> {
  if (!SPREAD) {
    c.run();
    return;
  }
  for (let i = 0; i < c.n; i++) {
    c.runOne();
    await new Promise((r) => setImmediate(r));
  }
}

/** A collector that accepts the handshake and counts frames. */
async function sink(path: string): Promise<{ frames: () => number; close: () => void }> {
  let frames = 0;
  const server = net.createServer((s) => {
    const r = new FrameReader(
      () => frames++,
      (c) => {
        if (c.type === Control.READY) s.write(controlFrame(Control.ACCEPT, [CONTENT_TYPE]));
      },
    );
    s.on('data', (b: Buffer) => r.push(b));
    s.on('error', () => s.destroy());
  });
  await new Promise<void>((res) => server.listen(path, res));
  return { frames: () => frames, close: () => server.close() };
}

async function main(): Promise<void> {
  const path = join(mkdtempSync(join(tmpdir(), 'dnstap-ab-')), 'tap.sock');
  const col = await sink(path);
  const extra = (e: string): string => `.:{PORT} {\n dnstap ${path} full 1 8 {\n  extra "${e}"\n }\n whoami\n}\n`;
  process.stdout.write(
    `setting up ${EXTRA ? 5 : 3} configurations${SPREAD ? ' (one query per event-loop turn)' : ''}\n`,
  );
  const configs = [
    await directDispatch('whoami', '.:{PORT} {\n whoami\n}\n', N),
    // The second argument is not `full` (CoreDNS reads only that word there): records without messages.
    await directDispatch('dnstap → whoami', `.:{PORT} {\n dnstap ${path} nofull 1 8\n whoami\n}\n`, N),
    await directDispatch('dnstap full → whoami', `.:{PORT} {\n dnstap ${path} full 1 8\n whoami\n}\n`, N),
    ...(EXTRA
      ? [
          await directDispatch('full, extra literal', extra('cluster-a'), N),
          await directDispatch('full, extra template', extra(EXTRA_TEMPLATE), N),
        ]
      : []),
  ];
  for (let round = 0; round < ROUNDS; round++) {
    process.stdout.write(`round ${round + 1}/${ROUNDS}\r`);
    for (const c of configs) {
      const u0 = process.cpuUsage();
      await runRound(c);
      // The records are encoded and written after the queries: count that CPU too.
      await new Promise((r) => setTimeout(r, 150));
      const u = process.cpuUsage(u0);
      if (round >= 2) c.perQueryNs.push(((u.user + u.system) * 1e3) / c.n);
    }
  }
  process.stdout.write(`\nframes received: ${col.frames()}\n`);
  const base = median(configs[0]!.perQueryNs);
  for (const c of configs) {
    const m = median(c.perQueryNs);
    process.stdout.write(
      `${c.label.padEnd(24)} median ${m.toFixed(0).padStart(6)} ns/query  best ${Math.min(...c.perQueryNs)
        .toFixed(0)
        .padStart(6)}  ratio ${(m / base).toFixed(3)}  answers/CPU-s vs whoami ${(base / m).toFixed(3)}\n`,
    );
  }
  for (const c of configs) await c.server.shutdown();
  col.close();
  process.exit(0);
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
