/**
 * The gateway client's handling of what a real etcd rarely shows on demand: a range read in
 * pages, watch events as the gateway streams them (PUT has no `type`), a watch cancelled because
 * its revision was compacted, and an expired auth token answered by a new authentication — on a
 * scripted HTTP server on 127.0.0.1.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers/wait.js';
import { EtcdClient, type WatchEvent } from './client.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const unb64 = (s: string): string => Buffer.from(s, 'base64').toString();

type Route = (body: Record<string, unknown>, req: http.IncomingMessage, res: http.ServerResponse) => void;

const servers: http.Server[] = [];
afterEach(async () => {
  while (servers.length) {
    const s = servers.pop()!;
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function gateway(routes: Record<string, Route>): Promise<string> {
  const srv = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const route = routes[req.url ?? ''];
      if (!route) {
        res.writeHead(404).end('{}');
        return;
      }
      route(JSON.parse(text || '{}') as Record<string, unknown>, req, res);
    });
  });
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
}

const client = (endpoint: string, credentials: { username: string; password: string } | null = null): EtcdClient =>
  new EtcdClient({ endpoints: [endpoint], tls: null, credentials, timeoutMs: 2000 });

describe('etcd gateway client', () => {
  it('reads a prefix in pages at the first page revision', async () => {
    const keys = ['/skydns/a', '/skydns/b', '/skydns/c'];
    const seen: Record<string, unknown>[] = [];
    const ep = await gateway({
      '/v3/kv/range': (body, _req, res) => {
        seen.push(body);
        const from = unb64(String(body['key']));
        const page = keys.filter((k) => k >= from).slice(0, Number(body['limit']));
        const more = keys.indexOf(page[page.length - 1]!) < keys.length - 1;
        res.end(
          JSON.stringify({
            header: { revision: '7' },
            kvs: page.map((k) => ({ key: b64(k), value: b64(`{"host":"${k}"}`) })),
            more,
          }),
        );
      },
    });
    const c = client(ep);
    const r = await c.rangePrefix('/skydns/', 2);
    expect(r.revision).toBe(7);
    expect(r.kvs.map((k) => k.key)).toEqual(keys);
    expect(seen.map((b) => b['revision'])).toEqual([undefined, 7]);
    expect(unb64(String(seen[0]!['range_end']))).toBe('/skydns0');
    c.close();
  });

  it('streams watch events, and ends with `compacted` when the revision is gone', async () => {
    const ep = await gateway({
      '/v3/watch': (body, _req, res) => {
        expect(body['create_request']).toMatchObject({ key: b64('/skydns/'), start_revision: 5 });
        res.write('{"result":{"header":{"revision":"4"},"created":true}}\n');
        res.write(
          `{"result":{"header":{"revision":"6"},"events":[{"kv":{"key":"${b64('/skydns/x')}","value":"${b64('{}')}","lease":"99"}},`,
        );
        res.write(`{"type":"DELETE","kv":{"key":"${b64('/skydns/y')}"}}]}}\n`);
        res.write('{"result":{"header":{"revision":"9"},"compact_revision":"8","canceled":true}}\n');
      },
    });
    const c = client(ep);
    const events: WatchEvent[] = [];
    let created = false;
    let ended: { err: Error; compacted: boolean } | null = null;
    c.watch('/skydns/', 5, {
      created: () => (created = true),
      events: (e) => events.push(...e),
      ended: (err, compacted) => (ended = { err, compacted }),
    });
    const end = await waitFor('the watch to end', () => ended);
    expect(created).toBe(true);
    expect(events).toEqual([
      { type: 'put', kv: { key: '/skydns/x', value: '{}', lease: '99' } },
      { type: 'delete', key: '/skydns/y' },
    ]);
    expect(end.compacted).toBe(true);
    expect(end.err.message).toMatch(/compacted/);
    c.close();
  });

  it('authenticates again when etcd rejects an expired token', async () => {
    let tokens = 0;
    const ep = await gateway({
      '/v3/auth/authenticate': (body, _req, res) => {
        expect(body).toEqual({ name: 'u', password: 'p' });
        res.end(JSON.stringify({ token: `t${++tokens}` }));
      },
      '/v3/kv/range': (_body, req, res) => {
        if (req.headers.authorization !== 't2') {
          res.writeHead(401).end(JSON.stringify({ error: 'etcdserver: invalid auth token', code: 16 }));
          return;
        }
        res.end(JSON.stringify({ header: { revision: '3' } }));
      },
    });
    const c = client(ep, { username: 'u', password: 'p' });
    const r = await c.rangePrefix('/skydns/');
    expect(r).toEqual({ revision: 3, kvs: [] });
    expect(tokens).toBe(2);
    c.close();
  });
});
