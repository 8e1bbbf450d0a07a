/**
 * Differential: DNS over TLS and DNS over HTTPS against CoreDNS 1.15.0, with the same Corefile and
 * the same certificates (a CA made for the run, nothing committed). Both answer the same queries
 * over DoT and over DoH (POST and GET), with the same Cache-Control, and give bad DoH requests the
 * same status codes, content types and bodies. The harness's free READY and HEALTH ports carry the
 * DoT and DoH listeners (the Corefile has no ready or health plugin).
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  assertResult,
  generate,
  judge,
  missingBinaries,
  newResult,
  startPair,
  totalCompared,
  type Pair,
  type QuerySpec,
  encode,
} from './harness.js';
import { dotExchange, h2Request, makeTestPki, type HttpReply } from '../helpers/tls.js';

const pki = makeTestPki();
const ca = pki.read(pki.caCert);
const HOSTS = '192.0.2.1 a.example\n192.0.2.2 b.example c.example\n2001:db8::1 a.example\n';
const NAMES = ['a.example', 'b.example', 'c.example', 'nosuch.example'];

const body = `  tls ${pki.cert} ${pki.key}\n  hosts {{DIR}}/hosts {\n    ttl 300\n  }\n`;
const COREFILE = `.:{{DNS}} {\n  hosts {{DIR}}/hosts\n}\ntls://.:{{READY}} {\n${body}}\nhttps://.:{{HEALTH}} {\n${body}}\n`;

const queries: QuerySpec[] = generate(
  NAMES,
  ['A', 'AAAA', 'MX'],
  [{ proto: 'tcp' }, { proto: 'tcp', edns: 1232, mixed: true }],
  281,
);

async function doh(port: number, q: QuerySpec, get: boolean): Promise<HttpReply> {
  const wire = encode({ ...q, id: 0 });
  return get
    ? h2Request(port, ca, { method: 'GET', path: `/dns-query?dns=${wire.toString('base64url')}` })
    : h2Request(port, ca, {
        method: 'POST',
        path: '/dns-query',
        headers: { 'content-type': 'application/dns-message' },
        body: wire,
      });
}

/**
 * What must match between the two servers' HTTP answers. Not the Date header, and not the length
 * of a 200 reply: its body is compared as DNS by `judge`, and clusterdns compresses names where
 * CoreDNS's hosts reply does not, over plain TCP as well (52 vs 43 bytes for a.example A).
 */
function shape(r: HttpReply): Record<string, string | number> {
  const h = r.headers;
  return {
    status: r.status,
    'content-type': h['content-type'] ?? '',
    'cache-control': h['cache-control'] ?? '',
    'x-content-type-options': h['x-content-type-options'] ?? '',
    ...(r.status === 200
      ? { 'length matches body': String(h['content-length'] === String(r.body.length)) }
      : { 'content-length': h['content-length'] ?? '', body: r.body.toString() }),
  };
}

describe('differential: DNS over TLS and HTTPS', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential encrypted: ${t.compared} queries compared in ${t.cases} cases\n`);
  });

  it('answers DoT, DoH POST and DoH GET as CoreDNS does, and bad DoH requests alike', async () => {
    expect(missing).toBeNull();
    let pair: Pair | null = null;
    try {
      pair = await startPair({ corefile: COREFILE, files: { hosts: HOSTS } }, { name: 'a.example', type: 'A' });
      const { ref, cand } = pair;
      const dot = newResult('encrypted-dot');
      for (const q of queries) {
        const packet = encode(q);
        const [r, c] = await Promise.all([
          dotExchange(ref.ready, packet, { ca }).then((x) => x.reply),
          dotExchange(cand.ready, packet, { ca }).then((x) => x.reply),
        ]);
        judge(dot, q, r, c, ['hosts']);
      }
      assertResult(dot, queries.length);

      const dohResult = newResult('encrypted-doh');
      for (const get of [false, true]) {
        for (const q of queries) {
          const [r, c] = await Promise.all([doh(ref.health, q, get), doh(cand.health, q, get)]);
          expect([q.name, q.type, get, shape(c)]).toEqual([q.name, q.type, get, shape(r)]);
          judge(dohResult, { ...q, id: 0 }, r.body, c.body, ['hosts']);
        }
      }
      assertResult(dohResult, 2 * queries.length);

      const wire = encode({ name: 'a.example', type: 'A', proto: 'tcp', id: 0 });
      const b64 = wire.toString('base64url');
      const bad: Parameters<typeof h2Request>[2][] = [
        { method: 'GET', path: '/other' },
        { method: 'GET', path: '/dns-query' },
        { method: 'PUT', path: '/dns-query', body: wire },
        { method: 'DELETE', path: `/dns-query?dns=${b64}` },
        { method: 'GET', path: `/dns-query?dns=${b64}==` },
        { method: 'GET', path: '/dns-query?dns=not*base64' },
        { method: 'GET', path: `/dns-query?dns=${b64}&dns=${b64}` },
        { method: 'POST', path: '/dns-query', headers: { 'content-type': 'text/plain' }, body: wire },
        {
          method: 'POST',
          path: '/dns-query',
          headers: { 'content-type': 'application/dns-message' },
          body: Buffer.from('abc'),
        },
        { method: 'POST', path: '/dns-query', body: Buffer.alloc(65537) },
        { method: 'POST', path: '/dns-query', body: Buffer.alloc(0) },
      ];
      for (const req of bad) {
        const [r, c] = await Promise.all([h2Request(ref.health, ca, req), h2Request(cand.health, ca, req)]);
        const what = `${req.method} ${req.path.slice(0, 60)} (${req.body?.length ?? 0} bytes)`;
        expect([what, shape(c)]).toEqual([what, shape(r)]);
      }
    } finally {
      await pair?.stop();
    }
  }, 180_000);
});
