/**
 * The ceiling for any Node.js DNS server on this machine: a UDP (and TCP) server that sends every
 * packet straight back with only the QR bit set. No DNS server written in Node can beat it.
 * Usage: node dist/bench/echo.js PORT
 */
import * as dgram from 'node:dgram';
import * as net from 'node:net';

const port = Number(process.argv[2] ?? 0);
const udp = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20, sendBufferSize: 4 << 20 });
udp.on('message', (msg, rinfo) => {
  msg[2]! |= 0x80;
  udp.send(msg, rinfo.port, rinfo.address);
});
udp.bind(port, '127.0.0.1', () => {
  const tcp = net.createServer((c) => {
    let pending: Buffer = Buffer.alloc(0);
    c.on('data', (chunk: Buffer) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      let off = 0;
      while (pending.length - off >= 2) {
        const len = pending.readUInt16BE(off);
        if (pending.length - off < 2 + len) break;
        const frame = Buffer.from(pending.subarray(off, off + 2 + len));
        frame[4]! |= 0x80;
        c.write(frame);
        off += 2 + len;
      }
      pending = pending.subarray(off);
    });
    c.on('error', () => c.destroy());
  });
  tcp.listen(udp.address().port, '127.0.0.1', () => process.stdout.write(`echo listening on ${udp.address().port}\n`));
});
