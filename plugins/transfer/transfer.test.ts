import * as dgram from 'node:dgram';
import { mkdtempSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as dnsPacket from 'dns-packet';
import type { Answer } from 'dns-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Flag, Opcode } from '../../src/dns/constants.js';
import { decode, type Message } from '../../src/dns/message.js';
import { encodeQuery, makeQuery, rcode, tcpQueries, udpExchange } from '../../test/helpers/dns.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { waitFor } from '../../test/helpers/wait.js';
import { logger } from '../../src/log.js';
import type { ReplyStream } from '../../src/query.js';
import type { TransferSource } from '../../src/transfer.js';
import { allowed, longestMatch, MESSAGE_RECORD_BYTES, TransferHandler } from './handler.js';
import { transfer } from './index.js';
import { notifyMessage, sendNotify } from './notify.js';
import { normalizeTo, type XfrStanza } from './setup.js';

function setupErr(text: string): string {
  return configError(() => transfer.setup(dispenserFor(text, 'transfer'), setupContext()), text).describe();
}

describe('transfer: setup', () => {
  it('normalises `to` addresses as parse.HostPort with port 53', () => {
    expect(normalizeTo('10.0.0.1')).toBe('10.0.0.1:53');
    expect(normalizeTo('10.0.0.1:5300')).toBe('10.0.0.1:5300');
    expect(normalizeTo('2001:db8::1')).toBe('[2001:db8::1]:53');
    expect(normalizeTo('[2001:db8::1]:5300')).toBe('[2001:db8::1]:5300');
    expect(normalizeTo('fe80::1%eth0')).toBe('[fe80::1%eth0]:53');
    expect((normalizeTo('ns.example.org') as Error).message).toBe("must specify an IP address: `ns.example.org'");
    expect((normalizeTo('ns.example.org:53') as Error).message).toBe("must specify an IP address: `ns.example.org'");
  });

  it('words errors as CoreDNS 1.15.0 (doubled prefix where plugin.Error wraps twice)', () => {
    expect(setupErr('transfer')).toBe(
      "plugin/transfer: plugin/transfer: Corefile:1 - Error during parsing: 'to' is required",
    );
    expect(setupErr('transfer {\n  to\n}')).toBe(
      "plugin/transfer: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'to'",
    );
    expect(setupErr('transfer {\n  to *\n  source x\n}')).toBe(
      'plugin/transfer: plugin/transfer: Corefile:3 - Error during parsing: invalid source address "x"',
    );
    expect(setupErr('transfer {\n  to *\n  source 10.0.0.1\n  source 10.0.0.2\n}')).toBe(
      'plugin/transfer: plugin/transfer: Corefile:4 - Error during parsing: source already specified',
    );
    expect(setupErr('transfer {\n  to *\n  foo\n}')).toBe(
      'plugin/transfer: plugin/transfer: Corefile:3 - Error during parsing: unknown property "foo"',
    );
    expect(setupErr('transfer {\n  to nohost\n}')).toBe(
      "plugin/transfer: Corefile:2 - Error during parsing: must specify an IP address: `nohost'",
    );
  });

  it('picks the stanza with the longest zone and checks the client by host', () => {
    const a: XfrStanza = { zones: ['example.org.'], to: ['*'], source: null };
    const b: XfrStanza = { zones: ['sub.example.org.'], to: ['10.0.0.1:53', '[2001:db8::1]:5300'], source: null };
    expect(longestMatch([a, b], 'x.sub.example.org.')).toBe(b);
    expect(longestMatch([a, b], 'example.org.')).toBe(a);
    expect(longestMatch([a, b], 'example.net.')).toBeNull();
    expect(allowed(a, '192.0.2.1')).toBe(true);
    expect(allowed(b, '10.0.0.1')).toBe(true);
    expect(allowed(b, '2001:db8::1')).toBe(true);
    expect(allowed(b, '10.0.0.2')).toBe(false);
  });
});

describe('transfer: NOTIFY', () => {
  it('is `zone. IN SOA` with opcode NOTIFY and AA, no RD', () => {
    const m = decode(notifyMessage('example.org.', 77));
    expect(m.id).toBe(77);
    expect(((m.flags ?? 0) >> 11) & 0xf).toBe(Opcode.NOTIFY);
    expect((m.flags ?? 0) & Flag.AA).toBe(Flag.AA);
    expect((m.flags ?? 0) & Flag.RD).toBe(0);
    expect(m.questions).toEqual([{ name: 'example.org', type: 'SOA', class: 'IN' }]);
  });

  /** A secondary answering RCODE `rc`; `opcodeQuery` clears the opcode as some secondaries do. */
  async function secondary(rc: number, opcodeQuery = false): Promise<{ port: number; got: Buffer[]; close(): void }> {
    const sock = dgram.createSocket('udp4');
    const got: Buffer[] = [];
    sock.on('message', (m, from) => {
      got.push(m);
      const r = Buffer.from(m);
      const flags = opcodeQuery ? r.readUInt16BE(2) & ~(0xf << 11) : r.readUInt16BE(2);
      r.writeUInt16BE(flags | Flag.QR | rc, 2);
      sock.send(r, from.port, from.address);
    });
    await new Promise<void>((res) => sock.bind(0, '127.0.0.1', () => res()));
    return { port: sock.address().port, got, close: () => sock.close() };
  }

  it('is accepted by a secondary that answers NOERROR', async () => {
    const s = await secondary(0);
    try {
      expect(await sendNotify('example.org.', `127.0.0.1:${s.port}`, '127.0.0.1')).toBeNull();
      expect(s.got).toHaveLength(1);
    } finally {
      s.close();
    }
  });

  it('is accepted once from a secondary whose reply has opcode QUERY, as CoreDNS accepts it', async () => {
    const s = await secondary(0, true);
    try {
      expect(await sendNotify('example.org.', `127.0.0.1:${s.port}`, '127.0.0.1')).toBeNull();
      expect(s.got).toHaveLength(1);
    } finally {
      s.close();
    }
  });

  it('is tried three times and reported when the secondary refuses', async () => {
    const s = await secondary(5);
    try {
      expect(await sendNotify('example.org.', `127.0.0.1:${s.port}`, null)).toBe(
        `notify for zone "example.org." was not accepted by "127.0.0.1:${s.port}": rcode was "REFUSED"`,
      );
      expect(s.got).toHaveLength(3);
    } finally {
      s.close();
    }
  });
});

/** An IXFR query carrying the client's SOA with `serial` in its authority section. */
function ixfrQuery(zone: string, serial: number): Buffer {
  return dnsPacket.encode({
    id: 12,
    type: 'query',
    questions: [{ name: zone, type: 'IXFR', class: 'IN' }],
    authorities: [
      {
        name: zone,
        type: 'SOA',
        ttl: 0,
        data: { mname: `ns.${zone}`, rname: `h.${zone}`, serial, refresh: 0, retry: 0, expire: 0, minimum: 0 },
      },
    ],
  });
}

/** Records of every message of one transfer (until the closing SOA). */
async function axfr(port: number, zone: string, type: 'AXFR' | 'IXFR' = 'AXFR'): Promise<Message[]> {
  const soas = (ms: readonly Message[]): number =>
    ms.reduce((n, m) => n + m.answers.filter((a) => a.type === 'SOA').length, 0);
  return tcpQueries(
    port,
    [encodeQuery(zone, type, { id: 9 })],
    20000,
    '127.0.0.1',
    (ms) => soas(ms) >= 2 || (ms.length > 0 && rcode(ms[0]!) !== 0),
  );
}

describe('transfer: end to end (file zone)', () => {
  let srv: TestServer;
  const N = 6000;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'transfer-test-'));
    writeFileSync(
      join(dir, 'db.example.org'),
      `$TTL 300\n@ IN SOA ns.example.org. h.example.org. 5 3600 600 86400 60\n  IN NS ns\nns IN A 192.0.2.1\n$GENERATE 1-${N} host-$ TXT "${'x'.repeat(60)}"\n`,
    );
    // A record too large for a message's budget (63,000 bytes) between small ones.
    const big = Array.from({ length: 252 }, () => `"${'y'.repeat(255)}"`).join(' ');
    writeFileSync(
      join(dir, 'db.big.example'),
      `$TTL 300\n@ IN SOA ns.big.example. h.big.example. 7 3600 600 86400 60\n  IN NS ns\nns IN A 192.0.2.1\n$GENERATE 1-300 a-$ TXT "${'x'.repeat(60)}"\nhuge IN TXT ${big}\n$GENERATE 1-300 z-$ TXT "${'x'.repeat(60)}"\n`,
    );
    srv = await startServer(
      `big.example {\n  file ${join(dir, 'db.big.example')}\n  transfer {\n    to 127.0.0.1\n  }\n}\nexample.org {\n  file ${join(dir, 'db.example.org')}\n  transfer {\n    to 127.0.0.1\n  }\n}\nexample.net {\n  file ${join(dir, 'db.example.org')} example.net\n  transfer {\n    to 192.0.2.99\n  }\n}\n. {\n  whoami\n}\n`,
      { dir },
    );
  });
  afterAll(async () => {
    await srv?.stop();
  });

  it('AXFR: SOA first and last, every record once, messages within the 63,000-byte packing', async () => {
    const ms = await axfr(srv.port, 'example.org');
    expect(ms.length).toBeGreaterThan(1);
    const answers = ms.flatMap((m) => m.answers);
    expect(answers[0]!.type).toBe('SOA');
    expect(answers.at(-1)!.type).toBe('SOA');
    expect(answers).toHaveLength(N + 4);
    for (const m of ms) {
      expect(m.id).toBe(9);
      expect(m.flag_aa).toBe(true);
      expect(m.questions).toEqual([{ name: 'example.org', type: 'AXFR', class: 'IN' }]);
    }
    // CoreDNS's packing: a message's records stay within 63,000 uncompressed bytes, and the next
    // message's first record would not have fitted.
    const size = (a: Answer): number =>
      (dnsPacket as unknown as { answer: { encodingLength(x: Answer): number } }).answer.encodingLength(a);
    for (let i = 0; i < ms.length; i++) {
      const bytes = ms[i]!.answers.reduce((n, a) => n + size(a), 0);
      expect(bytes).toBeLessThanOrEqual(MESSAGE_RECORD_BYTES);
      if (i + 1 < ms.length) expect(bytes + size(ms[i + 1]!.answers[0]!)).toBeGreaterThan(MESSAGE_RECORD_BYTES);
    }
    await waitFor('the transfer log line', () =>
      srv.logs.some((l) =>
        l.includes(
          `[INFO] plugin/transfer: Outgoing transfer of ${N + 4} records of zone "example.org." to 127.0.0.1 for 5 SOA serial`,
        ),
      ),
    );
  });

  it('a record larger than the packing goes out alone, the messages around it whole', async () => {
    const ms = await axfr(srv.port, 'big.example');
    const answers = ms.flatMap((m) => m.answers);
    expect(answers).toHaveLength(605);
    expect(answers.at(-1)!.type).toBe('SOA');
    const alone = ms.findIndex((m) => m.answers.some((a) => a.name === 'huge.big.example'));
    expect(ms[alone]!.answers).toHaveLength(1);
    const txt = ms[alone]!.answers[0] as Answer & { data: Buffer[] };
    expect(txt.data).toHaveLength(252);
    expect(txt.data.every((b) => b.toString() === 'y'.repeat(255))).toBe(true);
    // The names around it in zone order (canonical: a-1, a-10, a-100, …), every one once.
    const names = answers.map((a) => a.name);
    expect(new Set(names.filter((n) => /^[az]-\d+\./.test(n))).size).toBe(600);
    expect(alone).toBeGreaterThan(0);
    expect(alone).toBeLessThan(ms.length - 1);
  });

  it('SVCB and HTTPS records go out with their types and RDATA as stored', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'transfer-test-'));
    writeFileSync(
      join(dir, 'db.svc.test'),
      '$TTL 300\n@ IN SOA ns.svc.test. h.svc.test. 1 3600 600 86400 60\n  IN NS ns\nns IN A 192.0.2.1\nsvc HTTPS 1 . alpn=h2\nsvc SVCB 0 web.svc.test.\n',
    );
    const one = await startServer(`svc.test {\n  file ${join(dir, 'db.svc.test')}\n  transfer {\n    to *\n  }\n}\n`, {
      dir,
    });
    try {
      const answers = (await axfr(one.port, 'svc.test')).flatMap((m) => m.answers);
      // dns-packet names types 64 and 65 UNKNOWN_64/65 and keeps their RDATA as bytes.
      const svc = answers.filter((a) => a.name === 'svc.svc.test');
      expect(svc.map((a) => a.type).sort()).toEqual(['UNKNOWN_64', 'UNKNOWN_65']);
      const svcb = svc.find((a) => a.type === ('UNKNOWN_64' as string)) as unknown as { data: Buffer };
      expect(svcb.data.toString('hex')).toBe('00000377656203737663047465737400');
    } finally {
      await one.stop();
    }
  });

  it('IXFR for the current serial: the SOA alone, not authoritative; an older serial: the whole zone', async () => {
    const [m] = await tcpQueries(srv.port, [ixfrQuery('example.org', 5)]);
    expect(rcode(m!)).toBe(0);
    expect(m!.flag_aa).toBe(false);
    expect(m!.answers.map((a) => a.type)).toEqual(['SOA']);
    await waitFor('the noop log line', () =>
      srv.logs.some((l) =>
        l.includes(
          '[INFO] plugin/transfer: Outgoing noop, incremental transfer for up to date zone "example.org." to 127.0.0.1 for 5 SOA serial',
        ),
      ),
    );
    const soas = (ms: readonly Message[]): number =>
      ms.reduce((n, x) => n + x.answers.filter((a) => a.type === 'SOA').length, 0);
    const all = await tcpQueries(srv.port, [ixfrQuery('example.org', 4)], 20000, '127.0.0.1', (ms) => soas(ms) >= 2);
    expect(all.flatMap((x) => x.answers)).toHaveLength(N + 4);
  });

  it('IXFR without the client SOA is SERVFAIL; over UDP AXFR is REFUSED', async () => {
    const [m] = await tcpQueries(srv.port, [encodeQuery('example.org', 'IXFR')]);
    expect(rcode(m!)).toBe(2);
    expect(rcode(decode(await udpExchange(srv.port, encodeQuery('example.org', 'AXFR'))))).toBe(5);
  });

  it('a client not in `to` gets a REFUSED reply', async () => {
    const [m] = await tcpQueries(srv.port, [encodeQuery('example.net', 'AXFR')]);
    expect(rcode(m!)).toBe(5);
  });

  it('other queries are answered while a client does not read its transfer, which ends once it reads', async () => {
    const sock = net.connect(srv.port, '127.0.0.1');
    await new Promise<void>((res) => sock.once('connect', () => res()));
    sock.pause();
    const q = encodeQuery('example.org', 'AXFR', { id: 11 });
    const len = Buffer.alloc(2);
    len.writeUInt16BE(q.length);
    sock.write(Buffer.concat([len, q]));
    try {
      // While the transfer waits for the client, the server answers others.
      for (let i = 0; i < 5; i++) {
        const r = decode(await udpExchange(srv.port, encodeQuery('www.example.com', 'A')));
        expect(rcode(r)).toBe(0);
      }
      // Reading again lets the transfer finish, every record intact: the messages that waited in
      // the socket's buffer were not overwritten by later ones (the connection reuses its frames).
      let buf = Buffer.alloc(0);
      let soas = 0;
      const names: string[] = [];
      sock.on('data', (c) => {
        buf = Buffer.concat([buf, c]);
        while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
          const m = decode(buf.subarray(2, 2 + buf.readUInt16BE(0)));
          buf = buf.subarray(2 + buf.readUInt16BE(0));
          soas += m.answers.filter((a) => a.type === 'SOA').length;
          for (const a of m.answers) names.push(a.name);
        }
      });
      sock.resume();
      await waitFor('the transfer to end', () => soas >= 2);
      expect(names).toHaveLength(N + 4);
      expect(new Set(names.filter((n) => n.startsWith('host-'))).size).toBe(N);
    } finally {
      sock.destroy();
    }
  });
});

describe('transfer: a source that fails part way', () => {
  it('closes the connection after the messages already sent instead of leaving the client waiting', async () => {
    const sent: Buffer[] = [];
    let aborted = false;
    const stream: ReplyStream = {
      send: (msg) => {
        sent.push(msg);
        return Promise.resolve(true);
      },
      abort: () => {
        aborted = true;
      },
    };
    const soa: Answer = {
      name: 'fail.example',
      type: 'SOA',
      ttl: 3600,
      data: {
        mname: 'ns.fail.example',
        rname: 'h.fail.example',
        serial: 7,
        refresh: 1,
        retry: 1,
        expire: 1,
        minimum: 1,
      },
    };
    // Enough records for a first message to go out, then the source fails.
    const big = 'x'.repeat(200);
    function* records(): Generator<readonly Answer[]> {
      yield [soa];
      for (let i = 0; i < 400; i++) yield [{ name: `t${i}.fail.example`, type: 'TXT', ttl: 60, data: big }];
      throw new Error('index gone');
    }
    const source: TransferSource = { plugin: 'test', transfer: () => records() };
    const h = new TransferHandler(
      [{ zones: ['fail.example.'], to: ['*'], source: null }],
      [source],
      null,
      logger('transfer'),
    );
    const q = makeQuery('fail.example', 'AXFR', { transport: { proto: 'tcp', openStream: () => stream } });
    await expect(Promise.resolve(h.serve(q))).rejects.toThrow('index gone');
    expect(sent.length).toBeGreaterThan(0);
    expect(aborted).toBe(true);
  });
});
