/**
 * A CNAME cycle through the whole server (src/server/selflookup.ts), end to end: two `template`
 * blocks answer `a.one.test. CNAME b.two.test.` and `b.two.test. CNAME a.one.test.`, each following
 * its CNAME through the server. The client gets SERVFAIL, and every client query makes the same
 * number of requests (`coredns_dns_requests_total`, nested lookups included) with 1, 2 and 4 query
 * threads: the lookup chain travels on the query, so the cycle is caught in whichever thread the
 * client's query lands. Query threads need `reusePort` (Node 24: run with .bin/node24/bin first in
 * PATH, as the other thread tests).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rcodeName } from '../../src/dns/constants.js';
import { udpQuery } from '../helpers/dns.js';
import { freePort } from '../helpers/net.js';
import { BIN, watchLines } from '../helpers/spawn.js';

const stops: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (stops.length) await stops.pop()!();
});

/** Retry `fn` until it returns true, at most `limitMs` (a generous bound, not a timing). */
async function until(fn: () => Promise<boolean>, what: string, limitMs = 20000): Promise<void> {
  const end = Date.now() + limitMs;
  for (;;) {
    if (await fn().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function scrape(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/metrics', timeout: 10000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Sum of every sample of `name` (any labels). */
function total(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

function corefile(metrics: number): string {
  const block = (zone: string, answer: string): string => `${zone} {
  prometheus 127.0.0.1:${metrics}
  template IN A ${zone} {
    answer "${answer}"
  }
}
`;
  return (
    block('one.test', 'a.one.test. 60 IN CNAME b.two.test.') + block('two.test', 'b.two.test. 60 IN CNAME a.one.test.')
  );
}

/** Client queries, each from its own socket (own source port: the kernel spreads them over the threads). */
const QUERIES = 24;

/** The server's answers to QUERIES queries for `a.one.test. A`, and the requests it counted per query. */
async function run(workers: number): Promise<{ rcodes: string[]; perQuery: number }> {
  const [dns, metrics] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'clusterdns-cycle-'));
  writeFileSync(join(dir, 'Corefile'), corefile(metrics));
  const proc = spawn(
    process.execPath,
    [BIN, '-conf', join(dir, 'Corefile'), '-dns.port', String(dns), '-workers', String(workers)],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines = watchLines(proc, { label: 'clusterdns', timeoutMs: 20000 });
  stops.push(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    return lines.exited;
  });
  await lines.waitFor(/^clusterdns-\d/);
  // Every thread serves once the main thread counts them all.
  if (workers > 1)
    await until(
      async () => total(await scrape(metrics), 'clusterdns_query_threads') === workers,
      `${workers} query threads`,
    );
  const before = total(await scrape(metrics), 'coredns_dns_requests_total');
  const replies = await Promise.all(Array.from({ length: QUERIES }, () => udpQuery(dns, 'a.one.test.', 'A')));
  const counted = total(await scrape(metrics), 'coredns_dns_requests_total') - before;
  return { rcodes: replies.map((m) => rcodeName((m.flags ?? 0) & 0xf)), perQuery: counted / QUERIES };
}

describe('a CNAME cycle through the server', () => {
  it('is answered SERVFAIL with the same requests per query with 1, 2 and 4 query threads', async () => {
    const one = await run(1);
    expect(new Set(one.rcodes)).toEqual(new Set(['SERVFAIL']));
    // The client's query, the lookup of b.two.test. and the lookup of a.one.test. whose own
    // lookup of b.two.test. is refused as a cycle.
    expect(one.perQuery).toBe(3);
    for (const workers of [2, 4]) {
      const r = await run(workers);
      expect({ workers, rcodes: new Set(r.rcodes), perQuery: r.perQuery }).toEqual({
        workers,
        rcodes: new Set(['SERVFAIL']),
        perQuery: one.perQuery,
      });
    }
  }, 120_000);
});
