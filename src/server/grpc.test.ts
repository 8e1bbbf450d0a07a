/**
 * The grpc:// listener (docs/corefile.md §6.5) with a client of the tests' own over node:http2
 * (test/helpers/grpc.ts): answers through the block's chain, the gRPC errors grpc-go gives, the
 * `grpc_server` limits, TLS, and reloads that keep the socket.
 */
import { readFileSync } from 'node:fs';
import * as dnsPacket from 'dns-packet';
import { afterEach, describe, expect, it } from 'vitest';
import { frameDnsPacket, GrpcStatus } from '../grpc/wire.js';
import { encodeQuery } from '../../test/helpers/dns.js';
import { grpcCall, grpcConnect, grpcQuery } from '../../test/helpers/grpc.js';
import { sampleValue } from '../../test/helpers/http.js';
import { freePort } from '../../test/helpers/net.js';
import { startServer, type TestServer } from '../../test/helpers/server.js';
import { waitFor } from '../../test/helpers/wait.js';
import { GrpcListener } from './grpc.js';
import { makeDispatch, listenerDispatchOptions } from './dispatch.js';
import { RouteTable } from './routes.js';
import type { Handler } from '../plugin.js';
import type { Query } from '../query.js';

const TESTDATA = new URL('../../plugins/forward/testdata/', import.meta.url);

let s: TestServer | null = null;
afterEach(async () => {
  await s?.stop();
  s = null;
});

async function grpcServer(body: (port: number) => string): Promise<{ port: number; name: string }> {
  const port = await freePort();
  s = await startServer(body(port));
  return { port, name: `grpc://:${port}` };
}

describe('grpc:// listener', () => {
  it("answers DnsService/Query through the block's chain, as a TCP query of server grpc://:PORT", async () => {
    const { port, name } = await grpcServer(
      (p) => `grpc://example.org:${p} {\n  prometheus 127.0.0.1:0\n  whoami\n}\n`,
    );
    expect(s!.server.servers()).toContain(name);
    const r = await grpcQuery(port, encodeQuery('www.example.org', 'A', { id: 777 }));
    expect([r.httpStatus, r.grpcStatus]).toEqual([200, GrpcStatus.OK]);
    const m = dnsPacket.decode(r.reply!);
    expect(m.id).toBe(777);
    expect(m.flag_qr).toBe(true);
    const a = m.additionals?.find((x) => x.type === 'A') as dnsPacket.StringAnswer;
    expect(a.data).toBe('127.0.0.1');
    // whoami's SRV names the transport: gRPC comes over TCP.
    expect(m.additionals?.some((x) => x.type === 'SRV' && x.name.startsWith('_tcp.'))).toBe(true);
    const labels = { server: name, zone: 'example.org.', view: '', proto: 'tcp', family: 1, type: 'A' };
    expect(await sampleValue('coredns_dns_requests_total', 'coredns_dns_requests_total', labels)).toBe(1);
    // Outside the block's zones: REFUSED, as on a plain listener.
    const refused = await grpcQuery(port, encodeQuery('other.test', 'A'));
    expect(refused.reply![3]! & 0xf).toBe(5);
  });

  it('answers an unknown method or service, another content type and oversized messages as grpc-go does', async () => {
    const { port } = await grpcServer((p) => `grpc://.:${p} {\n  whoami\n}\n`);
    const c = grpcConnect(port);
    try {
      const q = frameDnsPacket(encodeQuery('example.org', 'A'));
      const method = await grpcCall(c, q, { path: '/coredns.dns.DnsService/Other' });
      expect([method.grpcStatus, method.grpcMessage]).toEqual([
        GrpcStatus.UNIMPLEMENTED,
        'unknown method Other for service coredns.dns.DnsService',
      ]);
      const service = await grpcCall(c, q, { path: '/x.Y/Query' });
      expect([service.grpcStatus, service.grpcMessage]).toEqual([GrpcStatus.UNIMPLEMENTED, 'unknown service x.Y']);
      expect((await grpcCall(c, q, { contentType: 'application/json' })).httpStatus).toBe(415);
      const big = Buffer.alloc(5 + 70_000);
      big.writeUInt32BE(70_000, 1);
      const tooBig = await grpcCall(c, big);
      expect([tooBig.grpcStatus, tooBig.grpcMessage]).toEqual([
        GrpcStatus.RESOURCE_EXHAUSTED,
        'grpc: received message larger than max (70000 vs. 65539)',
      ]);
      // The connection still serves after each failed call.
      expect((await grpcCall(c, q)).grpcStatus).toBe(GrpcStatus.OK);
    } finally {
      c.close();
    }
  });

  it('advertises max_streams and serves at most max_connections, the next waiting for a free slot', async () => {
    const { port, name } = await grpcServer(
      (p) => `grpc://.:${p} {\n  grpc_server {\n    max_streams 3\n    max_connections 1\n  }\n  whoami\n}\n`,
    );
    const first = grpcConnect(port);
    await grpcCall(first, frameDnsPacket(encodeQuery('a.test', 'A')));
    expect(first.remoteSettings.maxConcurrentStreams).toBe(3);
    const second = grpcConnect(port);
    const pending = grpcCall(second, frameDnsPacket(encodeQuery('b.test', 'A')));
    const l = s!.server.grpcListeners.get(name)!;
    await waitFor('the second connection to wait', () => l.connectionCount.waiting === 1);
    first.close();
    expect((await pending).grpcStatus).toBe(GrpcStatus.OK);
    second.close();
  });

  it('reloads: the socket stays, the new chain answers and new limits reach new connections', async () => {
    const { port, name } = await grpcServer((p) => `grpc://.:${p} {\n  whoami\n}\n`);
    const before = s!.server.grpcListeners.get(name);
    expect(await s!.reload(`grpc://.:${port} {\n  grpc_server {\n    max_streams 7\n  }\n  chaos\n}\n`)).toBe(true);
    expect(s!.server.grpcListeners.get(name)).toBe(before);
    const c = grpcConnect(port);
    try {
      const r = await grpcCall(c, frameDnsPacket(encodeQuery('version.bind', 'TXT', { class: 'CH' })));
      expect(dnsPacket.decode(r.reply!).answers?.[0]?.type).toBe('TXT');
      expect(c.remoteSettings.maxConcurrentStreams).toBe(7);
    } finally {
      c.close();
    }
  });

  it('sends the request back when the chain writes nothing, as CoreDNS does', async () => {
    const { port } = await grpcServer((p) => `grpc://.:${p} {\n  acl {\n    drop\n  }\n  whoami\n}\n`);
    const q = encodeQuery('example.org', 'A', { id: 99 });
    const r = await grpcQuery(port, q);
    expect(r.grpcStatus).toBe(GrpcStatus.OK);
    expect(r.reply).toEqual(q);
  });
});

describe('grpc:// over TLS', () => {
  it('serves with the certificate it is given, and a reload swaps it for new connections', async () => {
    const cert = readFileSync(new URL('dot.crt', TESTDATA));
    const key = readFileSync(new URL('dot.key', TESTDATA));
    const table = new RouteTable();
    const echo: Handler = {
      name: 'echo',
      serve(q: Query) {
        const out = Buffer.from(q.raw);
        out[2]! |= 0x80;
        q.writeWire(out, 'echo');
        return 0;
      },
    };
    table.add({ zone: '.', chain: echo, view: null });
    const l = new GrpcListener(
      'grpc://127.0.0.1:0',
      '127.0.0.1',
      0,
      makeDispatch(table, listenerDispatchOptions({ debug: false })),
    );
    l.configure({}, { cert, key, ca: null, clientAuth: 'nocert', keyLog: null });
    await l.open();
    try {
      const q = encodeQuery('tls.test', 'A', { id: 5 });
      const r = await grpcQuery(l.port, q, { ca: cert });
      expect(r.grpcStatus).toBe(GrpcStatus.OK);
      expect(r.reply!.readUInt16BE(0)).toBe(5);
      // A plain HTTP/2 client cannot talk to it.
      const plain = grpcConnect(l.port);
      const status = await grpcCall(plain, frameDnsPacket(q)).then(
        (res) => res.grpcStatus,
        () => 'connection failed',
      );
      plain.destroy();
      expect(status).not.toBe(GrpcStatus.OK);
      // Without TLS after a reload, new connections are plain HTTP/2.
      l.configure({}, null);
      expect((await grpcQuery(l.port, q)).grpcStatus).toBe(GrpcStatus.OK);
    } finally {
      await l.close(0);
    }
  });
});
