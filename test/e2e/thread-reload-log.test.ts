/**
 * The `log` plugin's line for every answered query, across reloads, with query threads
 * (docs/multicore.md §6): a thread that reloads keeps serving through its previous chain, and
 * those queries' lines must not be dropped with the thread's own reload lines.
 *
 * The zone is large so that each thread's reload (parsing it again) takes a while and queries pile
 * up meanwhile; the assertion does not depend on how many land in a reload: it holds for every
 * query answered. (60,000 records is too many: a query thread's 96 MiB heap does not hold the
 * old and the new copy of the zone at once, and V8 ends the thread on each reload.)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { rcode, udpQuery } from '../helpers/dns.js';
import { spawnServer, type Spawned } from '../helpers/spawn.js';
import { waitFor } from '../helpers/wait.js';

const RECORDS = 20_000;
const PUMPS = 8;
const RELOADS = 3;

function bigZone(): string {
  const lines = [
    '$ORIGIN example.org.',
    '@ 3600 IN SOA ns.example.org. admin.example.org. 1 7200 3600 1209600 3600',
    '@ 3600 IN NS ns.example.org.',
    'ns 3600 IN A 192.0.2.53',
    '*.q 3600 IN A 192.0.2.1',
  ];
  for (let i = 0; i < RECORDS; i++) lines.push(`filler${i} 3600 IN A 198.51.${(i >> 8) & 255}.${i & 255}`);
  return `${lines.join('\n')}\n`;
}

const ROOT = resolve(import.meta.dirname, '../..');

let server: Spawned | null = null;
let sandbox: Sandbox | null = null;
let dir = '';
afterEach(async () => {
  await server?.stop();
  server = null;
  await sandbox?.close();
  sandbox = null;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('query lines across reloads with query threads', () => {
  it('every query answered while the threads reload has its log line (-workers 2)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'clusterdns-reload-log-'));
    const zone = join(dir, 'db.example.org');
    writeFileSync(zone, bigZone());
    sandbox = await startSandbox({ files: [join(ROOT, 'examples/cluster.yaml')], log: () => undefined });
    server = await spawnServer(
      `example.org {\n    log\n    file ${zone}\n}\ncluster.local {\n    log\n    kubernetes {\n        endpoint ${sandbox.url}\n    }\n}\n`,
      ['-workers', '2'],
    );
    const s = server;
    await waitFor(
      'both threads answering',
      async () => rcode(await udpQuery(s.port, 'ready.q.example.org', 'A', { timeoutMs: 2000 })) === 0,
      { retry: () => true },
    );

    // Queries from fresh sockets (so the kernel spreads them over both threads) until the reloads
    // are over; each answered name is remembered.
    const answered: string[] = [];
    let pumping = true;
    let next = 0;
    const pump = async (): Promise<void> => {
      while (pumping) {
        const name = next % 2 ? `n${next}.q.example.org.` : `n${next}.default.svc.cluster.local.`;
        next++;
        const m = await udpQuery(s.port, name, 'A', { timeoutMs: 5000 }).catch(() => null);
        if (m) answered.push(name);
      }
    };
    const pumps = Array.from({ length: PUMPS }, () => pump());
    const complete = (): number => s.output.filter((l) => l === '[INFO] Reloading complete').length;
    for (let r = 1; r <= RELOADS; r++) {
      // A changed file, so that the new chain is built from a new parse.
      writeFileSync(zone, `${bigZone()}r${r} 3600 IN A 192.0.2.${r}\n`);
      s.proc.kill('SIGUSR1');
      await waitFor(`reload ${r} to complete`, () => complete() >= r, { timeoutMs: 60_000 });
    }
    pumping = false;
    await Promise.all(pumps);

    // A line is written before its reply is sent, and stdout is one pipe: once the line of a query
    // sent after every other reply has arrived, every earlier line has too.
    const last = 'last.q.example.org.';
    expect(rcode(await udpQuery(s.port, last, 'A'))).toBe(0);
    await s.waitFor(new RegExp(`"A IN ${last.replace(/\./g, '\\.')} `));

    const logged = new Set<string>();
    for (const l of s.output) {
      const m = /"A IN (n\d+\.\S+) /.exec(l);
      if (m) logged.add(m[1]!);
    }
    const missing = answered.filter((n) => !logged.has(n));
    expect(answered.length).toBeGreaterThan(0);
    expect(missing, `${missing.length} of ${answered.length} answered queries have no log line`).toEqual([]);
  });
});
