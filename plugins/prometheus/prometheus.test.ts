import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { prometheus } from './index.js';
import { MetricsHandler } from './handler.js';
import { Rcode } from '../../src/dns/constants.js';
import { replyTo } from '../../src/dns/message.js';
import type { BlockInfo, Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { makeQuery } from '../../test/helpers/dns.js';
import { freePort } from '../../test/helpers/net.js';
import { httpRequest, sampleValue } from '../../test/helpers/http.js';
import { dispenserFor, TestInstance } from '../../test/helpers/setup.js';
import { SharedResources } from '../../src/server/shared.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A next handler answering with `rcode` as wire bytes, written by `plugin`. */
function wireAnswer(rcode: number, plugin = 'whoami'): (q: Query) => number {
  return (q) => {
    const buf = Buffer.from(q.raw);
    buf.writeUInt16BE(((buf.readUInt16BE(2) | 0x8000 | rcode) & 0xfff0) | rcode, 2);
    q.writeWire(buf, plugin);
    return rcode;
  };
}

function handler(name: string, serve: Handler['serve']): Handler {
  return { name, serve };
}

async function setupPrometheus(
  text: string,
  block: Partial<BlockInfo>,
  shared = new SharedResources(),
): Promise<{ factory: (next: Handler | null) => Handler; inst: TestInstance; shared: SharedResources }> {
  const inst = new TestInstance({ shared });
  const ctx = inst.context('prometheus', block);
  const factory = await prometheus.setup(dispenserFor(text, 'prometheus'), ctx);
  if (!factory) throw new Error('prometheus must return a handler factory');
  return { factory: (next) => factory(next, ctx.block), inst, shared };
}

const A = { server: 'dns://:53', view: '' };

describe('prometheus handler', () => {
  it('records one set of observations per query, synchronously when next is synchronous', async () => {
    const h = new MetricsHandler(['.', 'example.org.'], handler('whoami', wireAnswer(Rcode.NOERROR)));
    const q = makeQuery('www.Example.org', 'A', { do: true, edns: 1232 });
    q.zone = 'example.org.';
    const r = h.serve(q);
    expect(r).toBe(0); // a number, not a promise
    const z = { ...A, zone: 'example.org.' };
    expect(
      await sampleValue('coredns_dns_requests_total', 'coredns_dns_requests_total', {
        ...z,
        proto: 'udp',
        family: 1,
        type: 'A',
      }),
    ).toBe(1);
    expect(await sampleValue('coredns_dns_do_requests_total', 'coredns_dns_do_requests_total', z)).toBe(1);
    expect(
      await sampleValue('coredns_dns_request_duration_seconds', 'coredns_dns_request_duration_seconds_count', z),
    ).toBe(1);
    expect(
      await sampleValue('coredns_dns_request_size_bytes', 'coredns_dns_request_size_bytes_sum', { ...z, proto: 'udp' }),
    ).toBe(q.raw.length);
    expect(
      await sampleValue('coredns_dns_response_size_bytes', 'coredns_dns_response_size_bytes_sum', {
        ...z,
        proto: 'udp',
      }),
    ).toBe(q.reply!.wire().length);
    expect(
      await sampleValue('coredns_dns_responses_total', 'coredns_dns_responses_total', {
        ...z,
        rcode: 'NOERROR',
        plugin: 'whoami',
      }),
    ).toBe(1);
  });

  it('handles an asynchronous next and labels tcp/IPv6, uncommon types as other', async () => {
    const sync = wireAnswer(Rcode.NXDOMAIN, 'forward');
    const h = new MetricsHandler(
      ['async.test.'],
      handler('forward', (q) => new Promise((resolve) => setImmediate(() => resolve(sync(q))))),
    );
    const q = makeQuery('x.async.test', 'NAPTR', {
      transport: { proto: 'tcp', family: 2, server: 'dns://[::1]:1053' },
    });
    q.zone = 'async.test.';
    const r = h.serve(q);
    expect(r).toBeInstanceOf(Promise);
    expect(await r).toBe(Rcode.NXDOMAIN);
    const z = { server: 'dns://[::1]:1053', zone: 'async.test.', view: '' };
    expect(
      await sampleValue('coredns_dns_requests_total', 'coredns_dns_requests_total', {
        ...z,
        proto: 'tcp',
        family: 2,
        type: 'other',
      }),
    ).toBe(1);
    expect(
      await sampleValue('coredns_dns_responses_total', 'coredns_dns_responses_total', {
        ...z,
        rcode: 'NXDOMAIN',
        plugin: 'forward',
      }),
    ).toBe(1);
    expect(
      await sampleValue('coredns_dns_request_size_bytes', 'coredns_dns_request_size_bytes_count', {
        ...z,
        proto: 'tcp',
      }),
    ).toBe(1);
    expect(await sampleValue('coredns_dns_do_requests_total', 'coredns_dns_do_requests_total', z)).toBeUndefined();
  });

  it('counts replies the server writes with the returned RCODE and plugin=""', async () => {
    const h = new MetricsHandler(
      ['srvfail.test.'],
      handler('forward', () => Rcode.SERVFAIL),
    );
    const q = makeQuery('a.srvfail.test', 'AAAA', { edns: 4096 });
    q.zone = 'srvfail.test.';
    expect(h.serve(q)).toBe(Rcode.SERVFAIL);
    const z = { ...A, zone: 'srvfail.test.' };
    expect(
      await sampleValue('coredns_dns_responses_total', 'coredns_dns_responses_total', {
        ...z,
        rcode: 'SERVFAIL',
        plugin: '',
      }),
    ).toBe(1);
    // Bare reply = header + question + OPT.
    expect(
      await sampleValue('coredns_dns_response_size_bytes', 'coredns_dns_response_size_bytes_sum', {
        ...z,
        proto: 'udp',
      }),
    ).toBe(q.req.questionEnd + 11);
  });

  it('records a decoded reply and a failing chain', async () => {
    const h = new MetricsHandler(
      ['dec.test.'],
      handler('hosts', (q) => {
        q.write(replyTo(q.request, Rcode.REFUSED), 'hosts');
        return Rcode.REFUSED;
      }),
    );
    const q = makeQuery('dec.test', 'SOA');
    q.zone = 'dec.test.';
    expect(h.serve(q)).toBe(Rcode.REFUSED);
    expect(
      await sampleValue('coredns_dns_responses_total', 'coredns_dns_responses_total', {
        ...A,
        zone: 'dec.test.',
        rcode: 'REFUSED',
        plugin: 'hosts',
      }),
    ).toBe(1);

    const boom = new MetricsHandler(
      ['boom.test.'],
      handler('kubernetes', () => {
        throw new Error('boom');
      }),
    );
    const q2 = makeQuery('boom.test', 'A');
    expect(() => boom.serve(q2)).toThrow('boom');
    expect(
      await sampleValue('coredns_dns_responses_total', 'coredns_dns_responses_total', {
        ...A,
        zone: 'boom.test.',
        rcode: 'SERVFAIL',
        plugin: '',
      }),
    ).toBe(1);
  });

  it('labels the zone with the longest key of its block containing the name, else "."', () => {
    const h = new MetricsHandler(['.', 'example.org.', 'sub.example.org.'], null);
    const zoneOf = (name: string, routed: string): string => {
      const q = makeQuery(name, 'A');
      q.zone = routed;
      return h.zoneOf(q);
    };
    expect(zoneOf('a.sub.example.org', 'sub.example.org.')).toBe('sub.example.org.');
    expect(zoneOf('a.sub.example.org', '.')).toBe('sub.example.org.'); // router value not of this match
    expect(zoneOf('www.example.org', 'example.org.')).toBe('example.org.');
    expect(zoneOf('notexample.org', 'other.')).toBe('.');
    const narrow = new MetricsHandler(['cluster.local.'], null);
    const q = makeQuery('example.com', 'A');
    expect(narrow.zoneOf(q)).toBe('.');
  });

  it('answers SERVFAIL when nothing follows it in the chain', async () => {
    const h = new MetricsHandler(['none.test.'], null);
    const q = makeQuery('none.test', 'A');
    expect(h.serve(q)).toBe(Rcode.SERVFAIL);
    expect(q.error?.message).toBe('plugin/prometheus: no next plugin found');
  });
});

describe('coredns_plugin_enabled', () => {
  it('is filled when the instance serves, survives a reload that keeps it, and follows the new chain', async () => {
    const block = {
      servers: ['dns://:5300'],
      zones: ['.', 'enabled.test.'],
      handlerPlugins: ['prometheus', 'errors', 'whoami'],
    };
    const v = (zone: string, name: string) =>
      sampleValue('coredns_plugin_enabled', 'coredns_plugin_enabled', { server: 'dns://:5300', zone, view: '', name });
    const first = await setupPrometheus('prometheus 127.0.0.1:0', block);
    expect(await v('.', 'whoami')).toBeUndefined(); // not before serving
    await first.inst.run('serving');
    for (const z of ['.', 'enabled.test.'])
      for (const n of ['prometheus', 'errors', 'whoami']) expect(await v(z, n)).toBe(1);

    // Reload: new instance serves first, the old one shuts down afterwards.
    const second = await setupPrometheus(
      'prometheus 127.0.0.1:0',
      { ...block, handlerPlugins: ['prometheus', 'whoami'] },
      first.shared,
    );
    await second.inst.run('serving');
    await first.inst.run('shutdown');
    expect(await v('.', 'whoami')).toBe(1);
    expect(await v('enabled.test.', 'prometheus')).toBe(1);
    expect(await v('.', 'errors')).toBeUndefined();

    // A failed reload never serves: nothing changes. The last instance going away clears it.
    const failed = await setupPrometheus(
      'prometheus 127.0.0.1:0',
      { ...block, handlerPlugins: ['prometheus', 'cache'] },
      first.shared,
    );
    await failed.inst.run('shutdown');
    expect(await v('.', 'cache')).toBeUndefined();
    expect(await v('.', 'whoami')).toBe(1);
    await second.inst.run('shutdown');
    expect(await v('.', 'whoami')).toBeUndefined();
  });
});

describe('/metrics endpoint', () => {
  it('gzips for scrapers that accept it, 404s other paths, keeps the socket across a reload', async () => {
    const port = await freePort();
    const first = await setupPrometheus(`prometheus 127.0.0.1:${port}`, {});
    await first.inst.run('startup');
    const gz = await new Promise<Buffer>((resolve, reject) => {
      import('node:http').then(({ get }) => {
        get({ host: '127.0.0.1', port, path: '/metrics', headers: { 'accept-encoding': 'gzip' } }, (res) => {
          const chunks: Buffer[] = [];
          expect(res.headers['content-encoding']).toBe('gzip');
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(Buffer.concat(chunks)));
        }).on('error', reject);
      }, reject);
    });
    expect(gunzipSync(gz).toString()).toContain('# TYPE coredns_build_info gauge');
    const nf = await httpRequest(port, '/');
    expect([nf.status, nf.body]).toEqual([404, '404 page not found\n']);

    const second = await setupPrometheus(`prometheus 127.0.0.1:${port}`, {}, first.shared);
    await second.inst.run('startup');
    await first.inst.release();
    expect((await httpRequest(port, '/metrics')).status).toBe(200);
    await second.inst.release();
  });
});
