/**
 * A minimal UDP+TCP responder for the benchmarks: `respond(query)` returns the reply bytes (or
 * null to stay silent). TCP uses DNS two-byte length framing and answers pipelined queries in order.
 */
import * as dgram from 'node:dgram';
import * as net from 'node:net';

export function serveResponder(port: number, name: string, respond: (query: Buffer) => Buffer | null): void {
  const udp = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20, sendBufferSize: 4 << 20 });
  udp.on('message', (msg, rinfo) => {
    const a = respond(msg);
    if (a) udp.send(a, rinfo.port, rinfo.address);
  });
  udp.bind(port, '127.0.0.1', () => {
    const tcp = net.createServer((c) => {
      let pending: Buffer = Buffer.alloc(0);
      c.on('data', (chunk: Buffer) => {
        pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        let off = 0;
        c.cork(); // replies to one read leave in one write, as clusterdns does

        while (pending.length - off >= 2) {
          const len = pending.readUInt16BE(off);
          if (pending.length - off < 2 + len) break;
          const a = respond(Buffer.from(pending.subarray(off + 2, off + 2 + len)));
          if (a) {
            const frame = Buffer.allocUnsafe(2 + a.length);
            frame.writeUInt16BE(a.length, 0);
            a.copy(frame, 2);
            c.write(frame);
          }
          off += 2 + len;
        }
        c.uncork();
        pending = pending.subarray(off);
      });
      c.on('error', () => c.destroy());
    });
    tcp.listen(udp.address().port, '127.0.0.1', () =>
      process.stdout.write(`${name} listening on ${udp.address().port}\n`),
    );
  });
}
