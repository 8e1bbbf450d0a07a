/**
 * The log and errors plugins' lines for a query no plugin wrote a reply to (a refusing upstream),
 * against the real CoreDNS 1.15.0 (.bin/coredns): the same lines once the client's port, the
 * duration and our end's port of the upstream socket are set aside.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { decode } from '../../src/dns/message.js';
import { encodeQuery, rcode, udpExchange } from '../../test/helpers/dns.js';
import { requireCoreDNS, startLines } from '../../test/helpers/lines.js';
import { freePort } from '../../test/helpers/net.js';

/** Client port, duration and the upstream socket's local port vary from run to run. */
function normalise(line: string): string {
  return line
    .replace(/^(\[INFO\] 127\.0\.0\.1:)\d+ /, '$1PORT ')
    .replace(/ \d+(\.\d+)?s$/, ' DURATIONs')
    .replace(/read udp 127\.0\.0\.1:\d+->/, 'read udp 127.0.0.1:PORT->');
}

async function run(which: 'clusterdns' | 'coredns', corefile: string, dnsPort: number): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), `log-lines-${which}-`));
  writeFileSync(join(dir, 'Corefile'), corefile);
  const p = startLines(which, ['-conf', 'Corefile'], dir);
  try {
    await p.waitFor(/^\.:\d+$/);
    const reply = decode(await udpExchange(dnsPort, encodeQuery('fail.example.org', 'A', { id: 4660 }), 10_000));
    expect(rcode(reply)).toBe(2);
    const from = await p.waitFor(/^\[INFO\] 127\.0\.0\.1:/);
    await p.waitFor(/^\[ERROR\] plugin\/errors: /);
    return p.lines
      .slice(from)
      .filter((l) => l.startsWith('['))
      .map(normalise);
  } finally {
    await p.stop();
  }
}

describe('log and errors lines against CoreDNS 1.15.0', () => {
  beforeAll(requireCoreDNS);
  it('a SERVFAIL no plugin wrote: `SERVFAIL qr,rd 34`, and the upstream error in Go wording', async () => {
    const port = await freePort();
    const dead = await freePort();
    const corefile = `.:${port} {\n    errors\n    log\n    forward . 127.0.0.1:${dead} {\n        max_fails 0\n        max_connect_attempts 1\n    }\n}\n`;
    const theirs = await run('coredns', corefile, port);
    const ours = await run('clusterdns', corefile, port);
    expect(theirs).toEqual([
      '[INFO] 127.0.0.1:PORT - 4660 "A IN fail.example.org. udp 34 false 512" SERVFAIL qr,rd 34 DURATIONs',
      `[ERROR] plugin/errors: 2 fail.example.org. A: read udp 127.0.0.1:PORT->127.0.0.1:${dead}: read: connection refused`,
    ]);
    expect(ours).toEqual(theirs);
  }, 30_000);
});
