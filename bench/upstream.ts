/**
 * A fast authoritative responder used as the upstream of the forward benchmarks: answers every
 * A query with one A record (192.0.2.1, TTL 300) and everything else with NODATA, built from the
 * query bytes. Usage: node dist/bench/upstream.js PORT
 */
import { serveResponder } from './responder.js';

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

serveResponder(port, 'upstream', answer);
