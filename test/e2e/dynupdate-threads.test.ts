/**
 * dynupdate with query threads (plugins/dynupdate/zone.ts, docs/multicore.md §2): `-workers 2`,
 * `nsupdate` as the client. The main thread owns each dynamic zone and an UPDATE's reply waits
 * until every thread installed the change, so the SOA asked right after nsupdate returns, from
 * many fresh sockets (the kernel spreads flows over the threads' SO_REUSEPORT sockets), must show
 * the new serial on every reply — asked once, not waited for. The NOTIFY after a change goes out
 * once every thread has it: a secondary that asks on receiving it sees the new serial everywhere.
 * A reload keeps a zone with `database` and resets one without to its seed (as CoreDNS), in every
 * thread, and updates go on after it (a thread's new configuration follows the main thread's).
 */
import { spawnSync } from 'node:child_process';
import * as dgram from 'node:dgram';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message } from '../../src/dns/message.js';
import { udpQuery } from '../helpers/dns.js';
import { hasTool, spawnServer, type Spawned } from '../helpers/spawn.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'i9M+00yrECfVZG2qCjr4mPpaGim/Bq+IWMiNrLjUO4Y=';
const KEYNAME = 'update-key.example.org.';
/** Fresh client sockets per check: enough flows that both threads' sockets get some. */
const FLOWS = 32;

function seed(origin: string): string {
  return `$ORIGIN ${origin}
@ 60 IN SOA ns.${origin} hostmaster.${origin} 1 3600 600 86400 60
@ 60 IN NS ns.${origin}
ns 60 IN A 192.0.2.53
`;
}

function serialOf(m: Message | null): number | null {
  const soa = m?.answers?.find((rr) => rr.type === 'SOA');
  return soa && soa.type === 'SOA' ? (soa.data.serial ?? null) : null;
}

/** The serial each of FLOWS queries from fresh sockets got for `zone`'s SOA. */
async function serials(port: number, zone: string): Promise<(number | null)[]> {
  const replies = await Promise.all(Array.from({ length: FLOWS }, () => udpQuery(port, zone, 'SOA').catch(() => null)));
  return replies.map(serialOf);
}

const all = (serial: number): number[] => Array.from({ length: FLOWS }, () => serial);

function nsupdate(port: number, script: string): string {
  const r = spawnSync('nsupdate', ['-y', `hmac-sha256:${KEYNAME}:${SECRET}`], {
    input: `server 127.0.0.1 ${port}\n${script}send\n`,
    encoding: 'utf8',
    timeout: 20000,
  });
  return `${r.stdout}${r.stderr}exit=${r.status}`;
}

/** A secondary that accepts NOTIFYs and, on each, asks the server for the zone's SOA at once. */
interface Secondary {
  readonly port: number;
  /** Per NOTIFY received, in order: the serials its fresh-socket queries got. */
  readonly seen: (number | null)[][];
  close(): void;
}

async function startSecondary(server: () => number): Promise<Secondary> {
  const sock = dgram.createSocket('udp4');
  const seen: (number | null)[][] = [];
  sock.on('message', (m, from) => {
    // NOERROR reply: the request's header with QR, and its question.
    const reply = Buffer.from(m);
    reply.writeUInt16BE(m.readUInt16BE(2) | 0x8000, 2);
    sock.send(reply, from.port, from.address);
    const slot: (number | null)[] = [];
    seen.push(slot);
    void serials(server(), 'example.org.').then((s) => slot.push(...s));
  });
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', r));
  return { port: sock.address().port, seen, close: () => sock.close() };
}

describe('dynupdate with -workers 2', () => {
  let s: Spawned | null = null;
  let secondary: Secondary | null = null;
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-dynupdate-threads-'));

  beforeAll(async () => {
    if (!hasTool('nsupdate')) throw new Error('nsupdate is missing: apt-get install bind9-utils');
    writeFileSync(join(dir, 'db.example.org'), seed('example.org.'));
    writeFileSync(join(dir, 'db.example.net'), seed('example.net.'));
    secondary = await startSecondary(() => s!.port);
    const tsig = `tsig {
    secret ${KEYNAME} ${SECRET}
    require_opcode UPDATE
  }`;
    const corefile = `example.org {
  ${tsig}
  transfer {
    to 127.0.0.1:${secondary.port}
  }
  dynupdate {
    file ${join(dir, 'db.example.org')}
    database ${join(dir, 'example.org.db')}
    allow ${KEYNAME} * *
  }
}
example.net {
  ${tsig}
  dynupdate {
    file ${join(dir, 'db.example.net')}
    allow ${KEYNAME} * *
  }
}
`;
    s = await spawnServer(corefile, ['-workers', '2']);
    await s.waitFor(/^clusterdns-/);
  }, 30000);

  afterAll(async () => {
    await s?.stop();
    secondary?.close();
  });

  it('every thread answers each change as soon as nsupdate returns; NOTIFY comes after all have it', async () => {
    const port = s!.port;
    expect(await serials(port, 'example.org.')).toEqual(all(1));
    for (let i = 1; i <= 3; i++) {
      expect(nsupdate(port, `zone example.org.\nupdate add h${i}.example.org. 60 A 192.0.2.${i}\n`)).toBe('exit=0');
      expect(await serials(port, 'example.org.'), `update ${i}`).toEqual(all(1 + i));
      const a = await Promise.all(
        Array.from({ length: FLOWS }, () => udpQuery(port, `h${i}.example.org.`, 'A').catch(() => null)),
      );
      expect(a.map((m) => m?.answers?.length ?? -1)).toEqual(all(1));
      await waitFor(`the NOTIFY after update ${i}, and its queries`, () => secondary!.seen[i - 1]?.length === FLOWS);
      expect(secondary!.seen[i - 1], `queries on NOTIFY ${i}`).toEqual(all(1 + i));
    }
    expect(nsupdate(port, 'zone example.net.\nupdate add m.example.net. 60 A 192.0.2.9\n')).toBe('exit=0');
    expect(await serials(port, 'example.net.')).toEqual(all(2));
  });

  it('a reload keeps the database zone and resets the in-memory one, in every thread; updates go on', async () => {
    const port = s!.port;
    s!.proc.kill('SIGUSR1');
    await s!.waitFor(/\[INFO\] Reloading complete/);
    expect(await serials(port, 'example.org.')).toEqual(all(4));
    expect(await serials(port, 'example.net.')).toEqual(all(1));
    expect(nsupdate(port, 'zone example.org.\nupdate add after.example.org. 60 A 192.0.2.10\n')).toBe('exit=0');
    expect(await serials(port, 'example.org.')).toEqual(all(5));
    expect(nsupdate(port, 'zone example.net.\nupdate add after.example.net. 60 A 192.0.2.10\n')).toBe('exit=0');
    expect(await serials(port, 'example.net.')).toEqual(all(2));
  });
});
