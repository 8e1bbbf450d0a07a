/**
 * `npm run build:bench && node dist/bench/hpack.js`: nanoseconds per decoded header block of the
 * HPACK decoder (src/server/hpack.ts), on the blocks Node's own http2 client sends for a DoH POST.
 *
 * The blocks are captured, not hand-made: a real `http2` client talks to a raw HTTP/2 peer on
 * 127.0.0.1 that records its HEADERS payloads. Two cases:
 * - first: a connection's first request, mostly Huffman-coded literals with incremental indexing
 *   (each round decodes it on a fresh decoder, created outside the timed loop);
 * - repeat: the same request again on the same connection, mostly indexed fields.
 * Each case runs ROUNDS rounds of N blocks; the best round is reported (a loaded machine only
 * ever makes a round slower).
 */
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { HpackDecoder } from '../src/server/hpack.js';

const N = Number(process.env.N ?? 200_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const PREFACE_LENGTH = 24;
const FRAME_HEADERS = 1;
const FRAME_SETTINGS = 4;
const FLAG_END_HEADERS = 0x4;
const FLAG_PADDED = 0x8;
const FLAG_PRIORITY = 0x20;

/** The header blocks of `count` identical DoH POSTs from Node's http2 client, in order. */
async function captureBlocks(count: number): Promise<Buffer[]> {
  const blocks: Buffer[] = [];
  let done: () => void = () => {};
  const allSeen = new Promise<void>((resolve) => (done = resolve));
  const server = net.createServer((socket) => {
    socket.on('error', () => {});
    // Our (empty) SETTINGS, then an ack of the client's.
    socket.write(Buffer.from([0, 0, 0, FRAME_SETTINGS, 0, 0, 0, 0, 0]));
    let pending = Buffer.alloc(0);
    let prefaceLeft = PREFACE_LENGTH;
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      if (prefaceLeft > 0) {
        const skip = Math.min(prefaceLeft, pending.length);
        pending = pending.subarray(skip);
        prefaceLeft -= skip;
      }
      while (pending.length >= 9) {
        const length = pending.readUIntBE(0, 3);
        if (pending.length < 9 + length) break;
        const type = pending[3]!;
        const flags = pending[4]!;
        let payload = pending.subarray(9, 9 + length);
        pending = pending.subarray(9 + length);
        if (type === FRAME_SETTINGS && (flags & 1) === 0)
          socket.write(Buffer.from([0, 0, 0, FRAME_SETTINGS, 1, 0, 0, 0, 0]));
        if (type !== FRAME_HEADERS) continue;
        if ((flags & FLAG_END_HEADERS) === 0) throw new Error('bench: the header block does not fit one frame');
        if (flags & FLAG_PADDED) payload = payload.subarray(1, payload.length - payload[0]!);
        if (flags & FLAG_PRIORITY) payload = payload.subarray(5);
        blocks.push(Buffer.from(payload));
        if (blocks.length === count) done();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const client = http2.connect(`http://127.0.0.1:${port}`, { createConnection: () => net.connect(port, '127.0.0.1') });
  client.on('error', () => {});
  for (let i = 0; i < count; i++) {
    const req = client.request(
      {
        ':method': 'POST',
        ':path': '/dns-query',
        'content-type': 'application/dns-message',
        accept: 'application/dns-message',
        'content-length': '33',
        'user-agent': 'clusterdns-bench/1',
      },
      { endStream: true },
    );
    req.on('error', () => {});
  }
  await allSeen;
  client.destroy();
  server.close();
  return blocks;
}

const BATCH = 1000;

/**
 * Best round's ns per block. `prepare` gives the decoders of one batch (decode i uses i mod their
 * count); batches are prepared outside the timed part.
 */
function measure(label: string, block: Buffer, prepare: () => HpackDecoder[]): void {
  const out: string[] = [];
  let best = Infinity;
  for (let round = 0; round < ROUNDS; round++) {
    let elapsed = 0n;
    for (let done = 0; done < N; done += BATCH) {
      const ds = prepare();
      const start = process.hrtime.bigint();
      for (let i = 0; i < BATCH; i++) {
        out.length = 0;
        if (ds[i % ds.length]!.decode(block, out, 65536) !== 'ok') throw new Error(`bench: ${label} did not decode`);
      }
      elapsed += process.hrtime.bigint() - start;
    }
    best = Math.min(best, Number(elapsed) / N);
  }
  console.log(
    `${label.padEnd(7)} ${String(block.length).padStart(4)} octets, ${out.length / 2} fields: ${best.toFixed(0)} ns/block`,
  );
}

console.log(`hpack: capturing header blocks from Node's http2 client…`);
const [first, repeat] = await captureBlocks(2);
console.log(`hpack: ${ROUNDS} rounds of ${N} blocks each, best round:`);
// First request: every decode must start from an empty table, so each gets its own decoder.
measure('first', first!, () => Array.from({ length: BATCH }, () => new HpackDecoder()));
// Repeat: one decoder that has seen the first request, decoding the second over and over.
const seen = new HpackDecoder();
seen.decode(first!, [], 65536);
measure('repeat', repeat!, () => [seen]);
