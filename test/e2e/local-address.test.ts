/**
 * `{local}` (the address a query arrived on) with a listener on the wildcard address, beside the
 * real CoreDNS 1.15.0: CoreDNS gives a TCP query the address its connection was accepted on, not
 * the listener's `::`, and so does clusterdns, for log, dnstap's extra, view's server_ip() and
 * every other reader of the query's local address. Requires `npm run build` (done by `npm test`).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tcpQuery } from '../helpers/dns.js';
import { requireCoreDNS, startLines } from '../helpers/lines.js';
import { freePort } from '../helpers/net.js';

async function localOfTcpQuery(which: 'clusterdns' | 'coredns'): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), `clusterdns-local-${which}-`));
  const port = await freePort();
  // No `bind`: the listener is the wildcard address.
  writeFileSync(join(dir, 'Corefile'), `.:${port} {\n    log . "LOCAL {local} {proto} {name}"\n    whoami\n}\n`);
  const p = startLines(which, ['-conf', 'Corefile'], dir);
  try {
    await p.waitFor(new RegExp(`^\\.:${port}$`));
    await tcpQuery(port, 'local.example.', 'A');
    const i = await p.waitFor(/LOCAL .* tcp local\.example\.$/);
    return p.lines[i]!.replace(/^.*LOCAL /, '');
  } finally {
    await p.stop();
  }
}

describe('{local} of a TCP query on a wildcard listener', () => {
  it('is the address the connection was accepted on, as CoreDNS 1.15.0', async () => {
    requireCoreDNS();
    const coredns = await localOfTcpQuery('coredns');
    const clusterdns = await localOfTcpQuery('clusterdns');
    expect(coredns).toBe('127.0.0.1 tcp local.example.');
    expect(clusterdns).toBe(coredns);
  });
});
