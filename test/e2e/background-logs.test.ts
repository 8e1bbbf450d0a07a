/**
 * Background work logs once per process (src/log.ts, backgroundLog; docs/multicore.md §6): with
 * `-workers 2` every query thread reloads its own copy of a `file` zone and rescans an `auto`
 * directory, and CoreDNS, one process, logs each change once. Here a serial change must give one
 * `Successfully reloaded zone` line per zone, however many threads reloaded it.
 *
 * How the test knows every thread reloaded before it counts: a thread writes its line (straight to
 * fd 1, before it answers anything from the new zone), so once replies from many client ports (the
 * kernel spreads flows over the threads' SO_REUSEPORT sockets) all carry the new serial, each
 * thread's line, had it written one, is in the pipe. A second change then makes the main thread log
 * again; its line comes after those in the pipe, and when it is read the first change's lines are
 * all counted.
 */
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../../src/dns/message.js';
import { udpQuery } from '../helpers/dns.js';
import { spawnServer, type Spawned } from '../helpers/spawn.js';
import { waitFor } from '../helpers/wait.js';

/** Fresh client sockets per check: enough flows that both threads' sockets get some. */
const FLOWS = 32;

const stops: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (stops.length) await stops.pop()!();
});

function zoneText(origin: string, serial: number): string {
  return `$ORIGIN ${origin}
@ 3600 IN SOA ns.${origin} admin.${origin} ${serial} 7200 3600 1209600 3600
@ 3600 IN NS ns.${origin}
ns 3600 IN A 192.0.2.53
www 3600 IN A 192.0.2.${serial}
`;
}

function serialOf(m: Message): number | null {
  const soa = m.answers?.find((rr) => rr.type === 'SOA');
  return soa && soa.type === 'SOA' ? (soa.data.serial ?? null) : null;
}

/** Does every one of FLOWS queries from fresh sockets see `serial` for `zone`? */
async function allSee(port: number, zone: string, serial: number): Promise<boolean> {
  const replies = await Promise.all(Array.from({ length: FLOWS }, () => udpQuery(port, zone, 'SOA').catch(() => null)));
  return replies.every((m) => m !== null && serialOf(m) === serial);
}

const reloaded = (zone: string, serial: number): RegExp =>
  new RegExp(
    `^\\[INFO\\] plugin/file: Successfully reloaded zone "${zone.replace(/\./g, '\\.')}" in ".*" with ${serial} SOA serial$`,
  );

describe('background work logs once per process with query threads', () => {
  it('a file zone and an auto zone: one reload line per serial change with -workers 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterdns-bglog-'));
    const fileZone = join(dir, 'db.example.org');
    const autoDir = join(dir, 'auto');
    mkdirSync(autoDir);
    const autoZone = join(autoDir, 'db.auto.test');
    writeFileSync(fileZone, zoneText('example.org.', 1));
    writeFileSync(autoZone, zoneText('auto.test.', 1));
    const corefile = `example.org {
    file ${fileZone} {
        reload 1s
    }
}
auto.test {
    auto {
        directory ${autoDir}
        reload 1s
    }
}
`;
    const s: Spawned = await spawnServer(corefile, ['-workers', '2']);
    stops.push(() => s.stop());
    const zones = ['example.org.', 'auto.test.'];
    for (const z of zones)
      await waitFor(`every thread serving ${z} with serial 1`, () => allSee(s.port, z, 1), {
        retry: () => true,
      });

    writeFileSync(fileZone, zoneText('example.org.', 2));
    writeFileSync(autoZone, zoneText('auto.test.', 2));
    for (const z of zones)
      await waitFor(`every thread serving ${z} with serial 2`, () => allSee(s.port, z, 2), {
        retry: () => true,
      });

    writeFileSync(fileZone, zoneText('example.org.', 3));
    writeFileSync(autoZone, zoneText('auto.test.', 3));
    for (const z of zones) await s.waitFor(reloaded(z, 3), 30_000);

    for (const z of zones) {
      const lines = s.output.filter((l) => reloaded(z, 2).test(l));
      expect(lines, `${z} serial 2 reload lines in:\n${s.output.join('\n')}`).toHaveLength(1);
    }
  });
});
