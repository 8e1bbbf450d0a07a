/**
 * runCorefile (test/helpers/corefile.ts) answers exactly as the listening server does: the same
 * Corefile asked the same questions over a real UDP socket and through the socketless dispatch
 * gives the same replies, REFUSED included, and a reply too large for UDP is truncated the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode } from '../../src/dns/message.js';
import { runCorefile, type CorefileRun } from './corefile.js';
import { encodeQuery, udpExchange } from './dns.js';
import { rrLines } from './records.js';
import { startServer, type TestServer } from './server.js';

const HOSTS = Array.from({ length: 120 }, (_, i) => `    10.1.0.${i + 1} big.example.org`).join('\n');
const COREFILE = `example.org {\n  hosts {\n${HOSTS}\n    192.0.2.1 www.example.org\n  }\n}\n`;

describe('runCorefile', () => {
  let run: CorefileRun;
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer(COREFILE);
    run = await runCorefile(COREFILE, { dnsPort: srv.port });
  });
  afterAll(async () => {
    await run.stop();
    await srv.stop();
  });

  const cases: [string, string, { edns?: number }][] = [
    ['www.example.org', 'A', {}],
    ['nothing.example.org', 'A', {}],
    ['www.example.net', 'A', {}], // no block: REFUSED before any plugin
    ['big.example.org', 'A', {}], // too large for 512 bytes: TC
    ['big.example.org', 'A', { edns: 4096 }],
  ];
  for (const [name, type, o] of cases) {
    it(`replies to ${name} ${type}${o.edns ? ` (EDNS ${o.edns})` : ''} as the UDP listener does`, async () => {
      const packet = encodeQuery(name, type, { id: 4711, ...o });
      const overUdp = await udpExchange(srv.port, packet);
      const socketless = await run.exchange(packet);
      expect(socketless).not.toBeNull();
      expect(decode(socketless!)).toEqual(decode(overUdp));
    });
  }

  it('ask decodes the reply', async () => {
    const m = await run.ask('www.example.org', 'A');
    expect(rrLines(m.answers)).toEqual(['www.example.org. 3600 IN A 192.0.2.1']);
  });
});
