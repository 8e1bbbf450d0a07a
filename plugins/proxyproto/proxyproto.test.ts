/**
 * proxyproto on real listeners: the header's client is what the chain sees (whoami, acl, log's
 * {remote}, metadata), the reply goes back to the proxy, and the policies drop what CoreDNS drops.
 */
import * as dgram from 'node:dgram';
import * as net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode, type Message } from '../../src/dns/message.js';
import { encodeQuery, rcode, udpExchange } from '../../test/helpers/dns.js';
import { proxyV1, proxyV2, tcpFrame } from '../../test/helpers/proxyproto.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';
import { waitFor } from '../../test/helpers/wait.js';
import { proxyproto } from './index.js';

/** whoami's A/AAAA record: the client address the chain saw. */
function seen(m: Message): string {
  const a = (m.additionals ?? []).find((r) => r.type === 'A' || r.type === 'AAAA') as { data?: unknown } | undefined;
  return String(a?.data);
}

/** One TCP connection: send `bytes`, read one framed reply, or null when the server closes. */
function tcpOnce(port: number, bytes: Buffer): Promise<Message | null> {
  return new Promise((resolve, reject) => {
    const c = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    c.on('connect', () => c.write(bytes));
    c.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        resolve(decode(buf.subarray(2, 2 + buf.readUInt16BE(0))));
        c.destroy();
      }
    });
    c.on('close', () => resolve(null));
    c.on('error', reject);
  });
}

/** Send a datagram and wait for the server to have read it (the `read` counter), returning any reply seen. */
async function udpNoReply(srv: TestServer, port: number, packet: Buffer, logText: string): Promise<void> {
  const sock = dgram.createSocket('udp4');
  let replies = 0;
  sock.on('message', () => replies++);
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  sock.send(packet, port, '127.0.0.1');
  await waitFor(`the warning ${logText}`, () => srv.logs.some((l) => l.includes(logText)));
  // A reply sent before the warning would have been written first; none comes after a drop.
  await udpExchange(port, encodeQuery('flush.example', 'A'));
  sock.close();
  expect(replies).toBe(0);
}

describe('proxyproto: setup', () => {
  const err = (text: string) =>
    configError(() => proxyproto.setup(dispenserFor(text, 'proxyproto'), setupContext()), text).describe();
  it('words errors as CoreDNS 1.15.0', () => {
    expect(err('proxyproto a')).toBe(
      "plugin/proxyproto: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'a'",
    );
    expect(err('proxyproto {\n allow 1.2.3.4\n}')).toBe('plugin/proxyproto: 1.2.3.4: invalid CIDR address: 1.2.3.4');
    expect(err('proxyproto {\n foo\n}')).toBe("Corefile:2 - Error during parsing: unknown option 'foo'");
    expect(err('proxyproto {\n default maybe\n}')).toBe(
      "plugin/proxyproto: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'maybe'",
    );
    expect(err('proxyproto {\n udp_session_tracking 5x\n}')).toBe(
      'plugin/proxyproto: udp_session_tracking: invalid duration "5x": time: unknown unit "x" in duration "5x"',
    );
    expect(err('proxyproto {\n udp_session_tracking 5s 0\n}')).toBe(
      'plugin/proxyproto: udp_session_tracking: invalid max sessions "0": must be a positive integer',
    );
  });
});

describe('proxyproto: UDP and TCP listeners', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer(
      [
        '. {',
        '  metadata',
        '  proxyproto {',
        '    allow 127.0.0.0/8',
        '    tlv_metadata',
        '  }',
        '  log . "{remote}:{port} {proto} {/proxyproto/tlv} {name}"',
        '  acl blocked.example {',
        '    block net 203.0.113.0/24',
        '  }',
        '  whoami',
        '}',
        '',
      ].join('\n'),
    );
  });
  afterAll(() => srv.stop());

  it('UDP: the v2 header names the client; the reply comes back to the proxy', async () => {
    const q = encodeQuery('a.example', 'A');
    const hdr = proxyV2('198.51.100.9', 4242, '10.96.0.10', 53, { tlvs: [[0xe0, Buffer.from('vpc')]] });
    const m = decode(await udpExchange(srv.port, Buffer.concat([hdr, q])));
    expect(seen(m)).toBe('198.51.100.9');
    await waitFor('the log line', () =>
      srv.logs.some((l) => l.includes('198.51.100.9:4242 udp e00003767063 a.example.')),
    );
  });

  it('UDP: acl judges the header client', async () => {
    const hdr = proxyV2('203.0.113.5', 1, '10.96.0.10', 53);
    const m = decode(await udpExchange(srv.port, Buffer.concat([hdr, encodeQuery('blocked.example', 'A')])));
    expect(rcode(m)).toBe(5);
    const plain = decode(await udpExchange(srv.port, encodeQuery('blocked.example', 'A')));
    expect(rcode(plain)).toBe(0);
  });

  it('UDP: a v1 header, a TCP header and a malformed one are dropped with a warning', async () => {
    const q = encodeQuery('x.example', 'A');
    await udpNoReply(
      srv,
      srv.port,
      Buffer.concat([proxyV1('192.0.2.1', 1, '10.0.0.1', 53), q]),
      'only v2 supported for UDP',
    );
    await udpNoReply(
      srv,
      srv.port,
      Buffer.concat([proxyV2('192.0.2.1', 1, '10.0.0.1', 53, { transport: 'tcp' }), q]),
      'is not UDP type (transport protocol: 0x11)',
    );
    const bad = proxyV2('192.0.2.1', 1, '10.0.0.1', 53);
    bad[12] = 0x2f;
    await udpNoReply(srv, srv.port, Buffer.concat([bad, q]), 'unsupported proxy protocol version and command');
    expect(srv.logs.some((l) => l.startsWith('[WARNING] dropping invalid Proxy Protocol packet from 127.0.0.1:'))).toBe(
      true,
    );
  });

  it('TCP: v1 and v2 headers name the client of every query on the connection', async () => {
    const q = tcpFrame(encodeQuery('b.example', 'A'));
    const v1 = await tcpOnce(srv.port, Buffer.concat([proxyV1('192.0.2.44', 5000, '10.96.0.10', 53), q]));
    expect(seen(v1!)).toBe('192.0.2.44');
    const v2 = await tcpOnce(
      srv.port,
      Buffer.concat([proxyV2('2001:db8::5', 5001, '2001:db8::1', 53, { transport: 'tcp' }), q]),
    );
    expect(seen(v2!)).toBe('2001:db8::5');
    const plain = await tcpOnce(srv.port, q);
    expect(seen(plain!)).toBe('127.0.0.1');
  });

  it('TCP: a header split over several writes is still read', async () => {
    const bytes = Buffer.concat([
      proxyV1('192.0.2.45', 5000, '10.96.0.10', 53),
      tcpFrame(encodeQuery('c.example', 'A')),
    ]);
    const m = await new Promise<Message>((resolve, reject) => {
      const c = net.connect(srv.port, '127.0.0.1');
      let buf = Buffer.alloc(0);
      c.on('connect', () => {
        c.write(bytes.subarray(0, 7));
        setImmediate(() => c.write(bytes.subarray(7)));
      });
      c.on('data', (d) => {
        buf = Buffer.concat([buf, d]);
        if (buf.length >= 2 + buf.readUInt16BE(0)) {
          resolve(decode(buf.subarray(2)));
          c.destroy();
        }
      });
      c.on('error', reject);
    });
    expect(seen(m)).toBe('192.0.2.45');
  });

  it('TCP: a malformed header closes the connection', async () => {
    const bad = Buffer.concat([Buffer.from('PROXY TCP4 1.2.3.4\r\n'), tcpFrame(encodeQuery('b.example', 'A'))]);
    expect(await tcpOnce(srv.port, bad)).toBeNull();
  });
});

describe('proxyproto: policies', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer(
      ['. {', '  proxyproto {', '    allow 192.0.2.0/24', '    default reject', '  }', '  whoami', '}', ''].join('\n'),
    );
  });
  afterAll(() => srv.stop());

  it('reject: a source outside allow sending a header is dropped (UDP) or closed (TCP); plain queries pass', async () => {
    const q = encodeQuery('a.example', 'A');
    await udpNoReply(
      srv,
      srv.port,
      Buffer.concat([proxyV2('198.51.100.9', 1, '10.0.0.1', 53), q]),
      'connection rejected by Proxy Protocol connection policy',
    );
    expect(seen(decode(await udpExchange(srv.port, q)))).toBe('127.0.0.1');
    expect(
      await tcpOnce(srv.port, Buffer.concat([proxyV1('198.51.100.9', 1, '10.0.0.1', 53), tcpFrame(q)])),
    ).toBeNull();
  });

  it('ignore and skip after a reload: the header is dropped, or left in the message', async () => {
    const q = encodeQuery('a.example', 'A');
    const withHeader = Buffer.concat([proxyV2('198.51.100.9', 1, '10.0.0.1', 53), q]);
    expect(
      await srv.reload(['. {', '  proxyproto {', '    allow 192.0.2.0/24', '  }', '  whoami', '}', ''].join('\n')),
    ).toBe(true);
    expect(seen(decode(await udpExchange(srv.port, withHeader)))).toBe('127.0.0.1');
    expect(
      await srv.reload(
        ['. {', '  proxyproto {', '    allow 192.0.2.0/24', '    default skip', '  }', '  whoami', '}', ''].join('\n'),
      ),
    ).toBe(true);
    // The header is read as a DNS message: its bytes make no valid query.
    const r = await udpExchange(srv.port, withHeader).then(
      (b) => rcode(decode(b)),
      () => -1,
    );
    expect(r).not.toBe(0);
  });
});

describe('proxyproto: udp_session_tracking', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer(
      ['. {', '  proxyproto {', '    udp_session_tracking 30s 2', '  }', '  whoami', '}', ''].join('\n'),
    );
  });
  afterAll(() => srv.stop());

  it('a header-only datagram names the client of the headerless queries from the same address', async () => {
    const sock = dgram.createSocket('udp4');
    await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
    const replies: Buffer[] = [];
    sock.on('message', (m) => replies.push(m));
    sock.send(proxyV2('198.51.100.77', 7, '10.0.0.1', 53), srv.port, '127.0.0.1');
    sock.send(encodeQuery('a.example', 'A'), srv.port, '127.0.0.1');
    await waitFor('the reply', () => replies.length === 1);
    expect(seen(decode(replies[0]!))).toBe('198.51.100.77');
    sock.close();
    // Another source has no session.
    expect(seen(decode(await udpExchange(srv.port, encodeQuery('a.example', 'A'))))).toBe('127.0.0.1');
  });
});
