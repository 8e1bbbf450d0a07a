import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Answer } from 'dns-packet';
import { ConfigError } from '../../src/corefile/types.js';
import { decode } from '../../src/dns/message.js';
import { encodeQuery, makeQuery, rcode, tcpQueries, udpExchange, udpExchangeFrom } from '../../test/helpers/dns.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import type { Handler } from '../../src/plugin.js';
import { whoami } from './index.js';
import { configError, dispenserFor, factoryOf, setupContext } from '../../test/helpers/setup.js';

interface SrvData {
  priority: number;
  weight: number;
  port: number;
  target: string;
}

function build(): Handler {
  const ctx = setupContext();
  const f = factoryOf(whoami.setup(dispenserFor('whoami'), ctx));
  return f(null, ctx.block);
}

function setupErr(text: string): ConfigError {
  return configError(() => whoami.setup(dispenserFor(text, 'whoami'), setupContext()), text);
}

describe('whoami: handler (direct)', () => {
  it('answers NOERROR, AA, no answers, A + SRV in additional with TTL 0, owner as asked', () => {
    const h = build();
    const q = makeQuery('Example.ORG', 'A', {
      id: 4242,
      transport: { remoteAddress: '10.244.2.7', remotePort: 40000, proto: 'udp' },
    });
    expect(h.serve(q)).toBe(0);
    expect(q.reply).not.toBeNull();
    const m = decode(q.reply!.wire());
    expect(m.id).toBe(4242);
    expect(m.type).toBe('response');
    expect(rcode(m)).toBe(0);
    expect(m.flag_aa).toBe(true);
    expect(m.flag_rd).toBe(true);
    expect(m.questions).toEqual([{ name: 'Example.ORG', type: 'A', class: 'IN' }]);
    expect(m.answers).toEqual([]);
    expect(m.authorities).toEqual([]);
    expect(m.additionals).toHaveLength(2);
    const [addr, srv] = m.additionals as Answer[];
    expect(addr).toMatchObject({ name: 'Example.ORG', type: 'A', class: 'IN', ttl: 0, data: '10.244.2.7' });
    expect(srv).toMatchObject({ name: '_udp.Example.ORG', type: 'SRV', class: 'IN', ttl: 0 });
    expect((srv as Answer & { data: SrvData }).data).toEqual({ priority: 0, weight: 0, port: 40000, target: '.' });
  });

  it('TCP transport gives a _tcp. SRV record', () => {
    const q = makeQuery('example.org', 'A', { transport: { proto: 'tcp', remotePort: 5353 } });
    expect(build().serve(q)).toBe(0);
    const srv = decode(q.reply!.wire()).additionals![1] as Answer & { data: SrvData };
    expect(srv.name).toBe('_tcp.example.org');
    expect(srv.data.port).toBe(5353);
  });

  it('IPv6 client gets an AAAA record', () => {
    const q = makeQuery('example.org', 'A', { transport: { remoteAddress: '::1', family: 2, remotePort: 1234 } });
    expect(build().serve(q)).toBe(0);
    const m = decode(q.reply!.wire());
    expect(m.additionals![0]).toMatchObject({ name: 'example.org', type: 'AAAA', ttl: 0, data: '::1' });
    expect((m.additionals![1] as Answer & { data: SrvData }).data.port).toBe(1234);
  });

  it('IPv4-mapped IPv6 client gets an A record (like Go To4)', () => {
    const q = makeQuery('example.org', 'A', { transport: { remoteAddress: '::ffff:10.1.2.3', family: 2 } });
    expect(build().serve(q)).toBe(0);
    expect(decode(q.reply!.wire()).additionals![0]).toMatchObject({
      name: 'example.org',
      type: 'A',
      ttl: 0,
      data: '10.1.2.3',
    });
  });

  it('full IPv6 client address', () => {
    const q = makeQuery('example.org', 'A', { transport: { remoteAddress: 'fd00::2', family: 2 } });
    expect(build().serve(q)).toBe(0);
    expect(decode(q.reply!.wire()).additionals![0]).toMatchObject({ type: 'AAAA', data: 'fd00::2' });
  });

  it('root name: owners are `.` and `_udp.`', () => {
    const q = makeQuery('.', 'NS');
    expect(build().serve(q)).toBe(0);
    const m = decode(q.reply!.wire());
    expect(m.questions![0]!.name).toBe('.');
    expect(m.additionals![0]).toMatchObject({ name: '.', type: 'A', data: '10.244.2.7' });
    expect(m.additionals![1]).toMatchObject({ name: '_udp', type: 'SRV' });
  });

  it.each(['AAAA', 'MX', 'TXT', 'SRV', 'PTR', 'ANY'])('answers qtype %s the same way', (type) => {
    const q = makeQuery('svc.example.org', type);
    expect(build().serve(q)).toBe(0);
    const m = decode(q.reply!.wire());
    expect(m.questions![0]!.type).toBe(type);
    expect(m.answers).toEqual([]);
    expect(m.additionals!.map((r) => r.type)).toEqual(['A', 'SRV']);
  });

  it('copies the query class into the records (CH)', () => {
    const q = makeQuery('example.org', 'TXT', { class: 'CH' });
    expect(build().serve(q)).toBe(0);
    const m = decode(q.reply!.wire());
    expect(m.questions![0]!.class).toBe('CH');
    expect(m.additionals!.map((r) => (r as Answer & { class: string }).class)).toEqual(['CH', 'CH']);
  });

  it('writes owner names in full, as CoreDNS does: version.bind. CH A is 94 bytes', () => {
    // CoreDNS's whoami leaves dns.Msg.Compress false: `chaos` + `whoami` answer this in 94 bytes
    // (with compression pointers the same records took 70; issue #27, item 8).
    const q = makeQuery('version.bind', 'A', { class: 'CH', transport: { remoteAddress: '127.0.0.1' } });
    expect(build().serve(q)).toBe(0);
    const wire = q.reply!.wire();
    expect(wire.length).toBe(94);
    const qname = Buffer.from('\x07version\x04bind\x00', 'latin1');
    // The question, then the A record's owner, then the SRV's `_udp` label and the name again.
    expect(wire.indexOf(qname, 12 + qname.length + 4)).toBe(12 + qname.length + 4);
    expect(wire.indexOf(Buffer.concat([Buffer.from('\x04_udp', 'latin1'), qname]))).toBeGreaterThan(0);
    const m = decode(wire);
    expect(m.additionals!.map((r) => r.name)).toEqual(['version.bind', '_udp.version.bind']);
  });

  it('keeps RD and CD of the request, clears others', () => {
    const q = makeQuery('example.org', 'A', { rd: false, cd: true });
    expect(build().serve(q)).toBe(0);
    const m = decode(q.reply!.wire());
    expect(m.flag_rd).toBe(false);
    expect(m.flag_cd).toBe(true);
    expect(m.flag_ra).toBe(false);
    expect(m.flag_aa).toBe(true);
  });

  it('is terminal: never calls next', () => {
    const ctx = setupContext();
    const f = factoryOf(whoami.setup(dispenserFor('whoami'), ctx));
    let called = 0;
    const h = f(
      {
        name: 'next',
        serve: () => {
          called++;
          return 0;
        },
      },
      ctx.block,
    );
    expect(h.serve(makeQuery('example.org', 'A'))).toBe(0);
    expect(called).toBe(0);
  });
});

describe('whoami: setup', () => {
  it('accepts no arguments', () => {
    expect(typeof factoryOf(whoami.setup(dispenserFor('whoami'), setupContext()))).toBe('function');
  });

  it('rejects arguments', () => {
    const e = setupErr('whoami example.org');
    expect(e.message).toMatch(/Wrong argument count|argument/i);
  });

  it('rejects a block property', () => {
    expect(() => whoami.setup(dispenserFor('whoami {\n foo\n}'), setupContext())).toThrow(ConfigError);
  });

  it('a second whoami in a block is ignored', async () => {
    const srv = await startServer('. {\n whoami\n whoami\n}\n');
    try {
      const m = decode(await udpExchange(srv.port, encodeQuery('example.org', 'A')));
      expect(rcode(m)).toBe(0);
      expect(m.additionals).toHaveLength(2);
    } finally {
      await srv.stop();
    }
  });
});

describe('whoami: end to end', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer('. {\n whoami\n}\n');
  });
  afterAll(async () => {
    await srv.stop();
  });

  it('UDP over 127.0.0.1: A record with 127.0.0.1, SRV with the client port', async () => {
    const { reply, localPort } = await udpExchangeFrom(srv.port, encodeQuery('WhoAmI.Example.org', 'A', { id: 7 }));
    const m = decode(reply);
    expect(m.id).toBe(7);
    expect(rcode(m)).toBe(0);
    expect(m.flag_aa).toBe(true);
    expect(m.answers).toEqual([]);
    expect(m.additionals![0]).toMatchObject({ name: 'WhoAmI.Example.org', type: 'A', ttl: 0, data: '127.0.0.1' });
    const s = m.additionals![1] as Answer & { ttl?: number; data: SrvData };
    expect(s.name).toBe('_udp.WhoAmI.Example.org');
    expect(s.ttl).toBe(0);
    expect(s.data).toEqual({ priority: 0, weight: 0, port: localPort, target: '.' });
  });

  it('UDP over ::1: AAAA record', async () => {
    const { reply, localPort } = await udpExchangeFrom(srv.port, encodeQuery('example.org', 'AAAA'), '::1');
    const m = decode(reply);
    expect(m.additionals![0]).toMatchObject({ name: 'example.org', type: 'AAAA', ttl: 0, data: '::1' });
    expect((m.additionals![1] as Answer & { data: SrvData }).data.port).toBe(localPort);
  });

  it('TCP: _tcp. SRV', async () => {
    const [m] = await tcpQueries(srv.port, [encodeQuery('example.org', 'MX')]);
    expect(rcode(m!)).toBe(0);
    expect(m!.additionals!.map((r) => `${r.name} ${r.type}`)).toEqual(['example.org A', '_tcp.example.org SRV']);
  });

  it('root query over UDP: owner `_udp.`', async () => {
    const m = decode(await udpExchange(srv.port, encodeQuery('.', 'A')));
    expect(m.additionals!.map((r) => `${r.name} ${r.type}`)).toEqual(['. A', '_udp SRV']);
  });

  it('EDNS query: reply still carries A + SRV (and OPT)', async () => {
    const m = decode(await udpExchange(srv.port, encodeQuery('example.org', 'A', { edns: 1232 })));
    expect(rcode(m)).toBe(0);
    expect(m.additionals!.filter((r) => r.type !== 'OPT').map((r) => r.type)).toEqual(['A', 'SRV']);
  });
});
