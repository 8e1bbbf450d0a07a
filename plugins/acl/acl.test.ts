import * as dgram from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acl } from './index.js';
import { ConfigErrorList } from '../../src/corefile/types.js';
import * as metrics from './metrics.js';
import { decode } from '../../src/dns/message.js';
import { encodeQuery, makeQuery, rcode, tcpQueries, udpExchange } from '../../test/helpers/dns.js';
import { freePort } from '../../test/helpers/net.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { configError, dispenserFor, setupContext as fakeSetupContext, handlerOf } from '../../test/helpers/setup.js';
import { FakeNext } from '../../test/helpers/upstream.js';
import type { Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';

function build(text: string, next: Handler, zones = ['.']): Handler {
  return handlerOf(acl, text, next, fakeSetupContext({ zones }));
}

function setupErr(text: string): string {
  return configError(() => acl.setup(dispenserFor(text, 'acl'), fakeSetupContext()), text).describe();
}

/** Serve synchronously (every path of acl is). */
function run(h: Handler, q: Query): number {
  const r = h.serve(q);
  if (typeof r !== 'number') throw new Error('acl answered asynchronously');
  return r;
}

const answered = (): FakeNext =>
  new FakeNext((q: Query) => {
    q.writeWire(Buffer.from(q.raw), 'fake');
    return 0;
  });

describe('acl: setup', () => {
  it.each([
    [
      'acl {\n allowx\n}',
      "plugin/acl: Corefile:2 - Error during parsing: unexpected token \"allowx\"; expect 'allow', 'block', 'filter' or 'drop'",
    ],
    [
      'acl {\n Block type A\n}',
      "plugin/acl: Corefile:2 - Error during parsing: unexpected token \"Block\"; expect 'allow', 'block', 'filter' or 'drop' (write 'block' in lower case)",
    ],
    [
      'acl {\n block foo A\n}',
      'plugin/acl: Corefile:2 - Error during parsing: unexpected token "foo"; expect \'type | net\'',
    ],
    ['acl {\n block type\n}', 'plugin/acl: Corefile:2 - Error during parsing: no token specified in "type" section'],
    ['acl {\n block net\n}', 'plugin/acl: Corefile:2 - Error during parsing: no token specified in "net" section'],
    [
      'acl {\n block type a\n}',
      'plugin/acl: Corefile:2 - Error during parsing: unexpected token "a"; expect legal QTYPE',
    ],
    [
      'acl {\n block type TYPE65\n}',
      'plugin/acl: Corefile:2 - Error during parsing: unexpected token "TYPE65"; expect legal QTYPE',
    ],
    [
      'acl {\n allow type A\n block net 10.0.0.300\n}',
      'plugin/acl: Corefile:3 - Error during parsing: illegal CIDR notation "10.0.0.300/32"',
    ],
    [
      'acl {\n block type A net foo/33\n}',
      'plugin/acl: Corefile:2 - Error during parsing: illegal CIDR notation "foo/33"',
    ],
    [
      'acl {\n block net 10.0.0.0/33\n}',
      'plugin/acl: Corefile:2 - Error during parsing: illegal CIDR notation "10.0.0.0/33"',
    ],
  ])('%j', (text, message) => {
    expect(setupErr(text)).toBe(message);
  });

  it('reports every unknown action of an occurrence (for -validate)', () => {
    try {
      void acl.setup(
        dispenserFor('acl {\n permit type A {\n  x\n }\n deny\n block type A\n}', 'acl'),
        fakeSetupContext(),
      );
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigErrorList);
      expect((e as ConfigErrorList).errors.map((x) => x.describe())).toEqual([
        "plugin/acl: Corefile:2 - Error during parsing: unexpected token \"permit\"; expect 'allow', 'block', 'filter' or 'drop'",
        "plugin/acl: Corefile:5 - Error during parsing: unexpected token \"deny\"; expect 'allow', 'block', 'filter' or 'drop'",
      ]);
    }
  });

  it('accepts `*`, bare addresses and IPv6 networks', () => {
    expect(() =>
      build('acl example.org {\n block type * A net * 10.0.0.1\n allow net 2001:db8::/32 ::1\n filter\n}', answered()),
    ).not.toThrow();
  });
});

describe('acl: decisions', () => {
  it('blocks with REFUSED and EDE 15 in an OPT of 4096 with DO; the next plugin is not called', () => {
    const next = answered();
    const h = build('acl {\n block type MX\n}', next);
    const q = makeQuery('Example.org', 'MX', { id: 7 });
    expect(run(h, q)).toBe(0);
    expect(next.calls).toBe(0);
    const m = decode(q.reply!.wire());
    expect(rcode(m)).toBe(5);
    expect(m.flag_rd).toBe(true);
    expect(m.questions).toEqual([{ name: 'Example.org', type: 'MX', class: 'IN' }]);
    const opt = m.additionals[0] as unknown as {
      type: string;
      udpPayloadSize: number;
      flags: number;
      options: { code: number; data: Buffer }[];
    };
    expect(opt.type).toBe('OPT');
    expect(opt.udpPayloadSize).toBe(4096);
    expect(opt.flags & 0x8000).toBe(0x8000);
    expect(opt.options.map((o) => [o.code, o.data.toString('hex')])).toEqual([[15, '000f']]);
  });

  it('filters with NOERROR, no records and EDE 17', () => {
    const h = build('acl {\n filter type TXT\n}', answered());
    const q = makeQuery('example.org', 'TXT');
    expect(run(h, q)).toBe(0);
    const m = decode(q.reply!.wire());
    expect(rcode(m)).toBe(0);
    expect(m.answers).toEqual([]);
    expect(
      (m.additionals[0] as unknown as { options: { code: number; data: Buffer }[] }).options[0]!.data.toString('hex'),
    ).toBe('0011');
  });

  it('drops: no reply, the query is marked dropped', () => {
    const next = answered();
    const h = build('acl {\n drop type SRV\n}', next);
    const q = makeQuery('example.org', 'SRV');
    expect(run(h, q)).toBe(0);
    expect(q.reply).toBeNull();
    expect(q.dropped).toBe(true);
    expect(next.calls).toBe(0);
  });

  it('the first matching policy wins; allow ends every rule; zones limit a rule', () => {
    const next = answered();
    const h = build(
      'acl example.org {\n allow type A net 10.244.0.0/16\n block type A\n}\nacl {\n block type A\n}\nacl other.org {\n filter\n}',
      next,
    );
    const fromPod = { transport: { remoteAddress: '10.244.2.7' } };
    const fromElsewhere = { transport: { remoteAddress: '192.0.2.1' } };
    const q1 = makeQuery('www.example.org', 'A', fromPod);
    run(h, q1);
    expect(next.calls).toBe(1); // allowed: the second rule's block is not checked
    const q2 = makeQuery('www.example.org', 'A', fromElsewhere);
    run(h, q2);
    expect(rcode(decode(q2.reply!.wire()))).toBe(5);
    const q3 = makeQuery('www.example.net', 'A', fromPod);
    run(h, q3);
    expect(rcode(decode(q3.reply!.wire()))).toBe(5); // only the catch-all rule applies
    const q4 = makeQuery('www.example.net', 'AAAA', fromPod);
    run(h, q4);
    expect(next.calls).toBe(2);
  });

  it('IPv4 networks match IPv4 and IPv4-mapped clients, IPv6 networks IPv6 clients only', () => {
    const next = new FakeNext(() => 2);
    const h = build('acl {\n block net 10.0.0.0/8\n filter net ::/0\n}', next);
    const rc = (addr: string): number => {
      const q = makeQuery('example.org', 'A', { transport: { remoteAddress: addr } });
      run(h, q);
      return q.reply ? rcode(decode(q.reply.wire())) : -1;
    };
    expect(rc('10.1.2.3')).toBe(5);
    expect(rc('::ffff:10.1.2.3')).toBe(5);
    expect(rc('2001:db8::1')).toBe(0); // filtered
    expect(rc('fe80::1%eth0')).toBe(0);
    expect(rc('192.0.2.1')).toBe(-1); // passed on
    expect(next.calls).toBe(1);
  });

  it('counts blocked, filtered, dropped per zone and allowed per server', async () => {
    const h = build('acl example.org {\n block type MX\n filter type TXT\n drop type SRV\n}', answered());
    const value = async (
      c: typeof metrics.blocked | typeof metrics.allowed,
      labels: Record<string, string>,
    ): Promise<number> =>
      (await c.get()).values.find((v) =>
        Object.entries(labels).every(([k, x]) => (v.labels as Record<string, string | number | undefined>)[k] === x),
      )?.value ?? 0;
    const before = {
      b: await value(metrics.blocked, { server: 'dns://:53', zone: 'example.org.', view: '' }),
      f: await value(metrics.filtered, { server: 'dns://:53', zone: 'example.org.', view: '' }),
      d: await value(metrics.dropped, { server: 'dns://:53', zone: 'example.org.', view: '' }),
      a: await value(metrics.allowed, { server: 'dns://:53', view: '' }),
    };
    for (const t of ['MX', 'TXT', 'SRV', 'A', 'A']) run(h, makeQuery('example.org', t));
    expect(await value(metrics.blocked, { server: 'dns://:53', zone: 'example.org.', view: '' })).toBe(before.b + 1);
    expect(await value(metrics.filtered, { server: 'dns://:53', zone: 'example.org.', view: '' })).toBe(before.f + 1);
    expect(await value(metrics.dropped, { server: 'dns://:53', zone: 'example.org.', view: '' })).toBe(before.d + 1);
    expect(await value(metrics.allowed, { server: 'dns://:53', view: '' })).toBe(before.a + 2);
  });
});

/** Send the packets on one UDP socket; resolve with every reply received until one with id `until` arrives. */
function udpUntil(port: number, packets: Buffer[], until: number): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const sock = dgram.createSocket('udp4');
    const ids: number[] = [];
    const timer = setTimeout(() => {
      sock.close();
      reject(new Error(`no reply with id ${until}`));
    }, 10_000);
    sock.on('message', (m) => {
      ids.push(m.readUInt16BE(0));
      if (m.readUInt16BE(0) === until) {
        clearTimeout(timer);
        sock.close();
        resolve(ids);
      }
    });
    for (const p of packets) sock.send(p, port, '127.0.0.1');
  });
}

describe('acl: over real sockets', () => {
  let srv: TestServer;
  let metricsPort: number;
  beforeAll(async () => {
    metricsPort = await freePort();
    srv = await startServer(
      `. {\n  prometheus 127.0.0.1:${metricsPort}\n  acl {\n    drop type SRV\n    block type MX net 127.0.0.0/8\n  }\n  whoami\n}\n`,
    );
  });
  afterAll(async () => {
    await srv.stop();
  });

  it('a dropped UDP query gets no reply; the queries after it are answered (blocked, allowed)', async () => {
    const ids = await udpUntil(
      srv.port,
      [
        encodeQuery('example.org', 'SRV', { id: 1 }),
        encodeQuery('example.org', 'MX', { id: 2 }),
        encodeQuery('example.org', 'A', { id: 3 }),
      ],
      3,
    );
    expect(ids).not.toContain(1);
    expect(ids).toContain(2);
    const r = decode(await udpExchange(srv.port, encodeQuery('example.org', 'MX')));
    expect(rcode(r)).toBe(5);
  });

  it('prometheus counts a dropped query as CoreDNS does: NOERROR, no plugin, size 0', async () => {
    const port = srv.port;
    await udpUntil(
      port,
      [encodeQuery('drop.example.org', 'SRV', { id: 11 }), encodeQuery('drop.example.org', 'A', { id: 12 })],
      12,
    );
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const line = (re: RegExp): string | undefined => text.split('\n').find((l) => re.test(l));
    expect(line(/^coredns_dns_responses_total\{.*rcode="SERVFAIL"/)).toBeUndefined();
    expect(line(/^coredns_dns_responses_total\{.*rcode="NOERROR",plugin=""/)).toMatch(/ [1-9]\d*$/);
    expect(line(/^coredns_dns_response_size_bytes_bucket\{(?=.*proto="udp")(?=.*le="0")/)).toMatch(/ [1-9]\d*$/);
    expect(line(/^coredns_acl_dropped_requests_total\{/)).toMatch(/ [1-9]\d*$/);
  });

  it('on TCP a dropped query gets nothing and the connection keeps answering', async () => {
    const packets = [
      encodeQuery('example.org', 'A', { id: 1 }),
      encodeQuery('example.org', 'SRV', { id: 2 }),
      encodeQuery('example.org', 'A', { id: 3 }),
    ];
    const replies = await tcpQueries(srv.port, packets, 10_000, '127.0.0.1', (rs) =>
      [1, 3].every((id) => rs.some((r) => r.id === id)),
    );
    expect(replies.map((r) => r.id).sort()).toEqual([1, 3]);
  });
});
