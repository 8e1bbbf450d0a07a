/**
 * The TCP caps' command-line flags: parsed in CoreDNS's flag style, rejected when out of range, and
 * applied by the real bin/clusterdns (a third connection from one address is closed at once while
 * another address is served).
 */
import * as net from 'node:net';
import { describe, expect, it } from 'vitest';
import { FlagError, parseFlags, usage } from '../cli/flags.js';
import { decode } from '../dns/message.js';
import { encodeQuery } from '../../test/helpers/dns.js';
import { spawnServer } from '../../test/helpers/spawn.js';

describe('TCP cap flags', () => {
  it('parses -dns.tcp.maxconns and -dns.tcp.maxconnspersource, with defaults 10000 and 256', () => {
    expect(parseFlags([])).toMatchObject({ tcpMaxConns: 10_000, tcpMaxConnsPerSource: 256 });
    expect(parseFlags(['-dns.tcp.maxconns', '500', '--dns.tcp.maxconnspersource=0'])).toMatchObject({
      tcpMaxConns: 500,
      tcpMaxConnsPerSource: 0,
    });
    expect(() => parseFlags(['-dns.tcp.maxconns', '0'])).toThrow(FlagError);
    expect(() => parseFlags(['-dns.tcp.maxconnspersource', '-1'])).toThrow(FlagError);
    expect(usage()).toContain('-dns.tcp.maxconnspersource int');
  });

  it('bin/clusterdns applies the per-source cap', async () => {
    const s = await spawnServer('example.org {\n  whoami\n}\n', ['-dns.tcp.maxconnspersource', '2']);
    const socks: net.Socket[] = [];
    try {
      await s.waitFor(/^clusterdns-/);
      const open = (localAddress: string) =>
        new Promise<net.Socket>((resolve, reject) => {
          const c = net.connect({ port: s.port, host: '127.0.0.1', localAddress }, () => resolve(c));
          socks.push(c);
          c.on('error', reject);
        });
      const ask = (c: net.Socket, id: number) =>
        new Promise<number | null>((resolve) => {
          const q = encodeQuery('example.org', 'A', { id });
          const f = Buffer.alloc(2);
          f.writeUInt16BE(q.length);
          c.once('data', (d: Buffer) => resolve(decode(d.subarray(2)).id ?? null));
          c.once('close', () => resolve(null));
          c.write(Buffer.concat([f, q]));
        });
      const a = await open('127.0.0.1');
      const b = await open('127.0.0.1');
      expect(await ask(a, 1)).toBe(1);
      expect(await ask(b, 2)).toBe(2);
      const third = await open('127.0.0.1');
      third.on('error', () => {});
      expect(await ask(third, 3)).toBeNull();
      const other = await open('127.0.0.2');
      expect(await ask(other, 4)).toBe(4);
    } finally {
      for (const c of socks) c.destroy();
      await s.stop();
    }
  }, 60_000);
});
