/**
 * A fast authoritative responder used as the upstream of the forward benchmarks: answers every
 * A query with one A record (192.0.2.1, TTL 300) and everything else with NODATA, built from the
 * query bytes. Usage: node dist/bench/upstream.js PORT
 */
import * as dgram from 'node:dgram';
import * as net from 'node:net';

const port = Number(process.argv[2] ?? 0);

function answer(q: Buffer): Buffer | null {
  if (q.length < 17) return null;
  let off = 12;
  while (off < q.length && q[off] !== 0) off += q[off]! + 1;
  const qEnd = off + 5;
  if (qEnd > q.length) return null;
  const qtype = q.readUInt16BE(off + 1);
  const isA = qtype === 1;
  const out = Buffer.allocUnsafe(qEnd + (isA ? 16 : 0));
  q.copy(out, 0, 0, qEnd);
  out[2] = 0x84 | (q[2]! & 0x01); // QR, AA, keep RD
  out[3] = 0x80; // RA
  out.writeUInt16BE(1, 4);
  out.writeUInt16BE(isA ? 1 : 0, 6);
  out.writeUInt32BE(0, 8);
  if (isA) {
    out.writeUInt16BE(0xc00c, qEnd);
    out.writeUInt16BE(1, qEnd + 2);
    out.writeUInt16BE(1, qEnd + 4);
    out.writeUInt32BE(300, qEnd + 6);
    out.writeUInt16BE(4, qEnd + 10);
    out.set([192, 0, 2, 1], qEnd + 12);
  }
  return out;
}

const udp = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20, sendBufferSize: 4 << 20 });
udp.on('message', (msg, rinfo) => {
  const a = answer(msg);
  if (a) udp.send(a, rinfo.port, rinfo.address);
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
        const a = answer(pending.subarray(off + 2, off + 2 + len));
        if (a) {
          const frame = Buffer.allocUnsafe(2 + a.length);
          frame.writeUInt16BE(a.length, 0);
          a.copy(frame, 2);
          c.write(frame);
        }
        off += 2 + len;
      }
      pending = pending.subarray(off);
    });
    c.on('error', () => c.destroy());
  });
  tcp.listen(udp.address().port, '127.0.0.1', () => process.stdout.write(`upstream listening on ${udp.address().port}\n`));
});
