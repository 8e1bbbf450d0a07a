import * as http2 from 'node:http2';
import * as net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers/wait.js';
import {
  HpackDecoder,
  type HpackResult,
  staticStatusIndex,
  writeIndexed,
  writeLiteralWithoutIndexing,
} from './hpack.js';
import { HUFFMAN_CODES, HUFFMAN_LENGTHS, huffmanDecode, huffmanDecodedMax } from './hpackhuffman.js';
import { seededRandom } from '../util/prng.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const NO_LIMIT = Number.MAX_SAFE_INTEGER;

function decode(d: HpackDecoder, block: Buffer, max = NO_LIMIT): { result: HpackResult; fields: string[][] } {
  const out: string[] = [];
  const result = d.decode(block, out, max);
  const fields: string[][] = [];
  for (let i = 0; i < out.length; i += 2) fields.push([out[i]!, out[i + 1]!]);
  return { result, fields };
}

/**
 * The dynamic table, newest first, read back through indexed fields 62, 63, … (a block of indexed
 * fields changes no table state); the index one past the end must be refused.
 */
function dynamicTable(d: HpackDecoder, expectedCount: number): string[][] {
  const entries: string[][] = [];
  for (let i = 0; i < expectedCount; i++) {
    const { result, fields } = decode(d, indexed(62 + i));
    expect(result).toBe('ok');
    entries.push(fields[0]!);
  }
  expect(decode(d, indexed(62 + expectedCount)).result).toBe('compression-error');
  return entries;
}

/** A literal field with incremental indexing and a literal name (§6.2.1): the writer's form with 01 in front. */
function withIndexing(name: string, value: string): Buffer {
  const buf = Buffer.alloc(16 + name.length + value.length);
  const end = writeLiteralWithoutIndexing(buf, 0, 0, name, value);
  buf[0] = 0x40;
  return buf.subarray(0, end);
}

/** Huffman-encode a latin1 string bit by bit from the code table: the decoder's table walk checked against the code itself. */
function huffmanEncode(s: string): Buffer {
  const out: number[] = [];
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const sym = s.charCodeAt(i) & 0xff;
    const code = HUFFMAN_CODES[sym]!;
    const len = HUFFMAN_LENGTHS[sym]!;
    for (let bit = len - 1; bit >= 0; bit--) {
      acc = (acc << 1) | (Math.floor(code / 2 ** bit) % 2);
      if (++bits === 8) {
        out.push(acc);
        acc = 0;
        bits = 0;
      }
    }
  }
  if (bits > 0) out.push(((acc << (8 - bits)) | (0xff >> bits)) & 0xff);
  return Buffer.from(out);
}

function indexed(index: number): Buffer {
  const buf = Buffer.alloc(8);
  return buf.subarray(0, writeIndexed(buf, 0, index));
}

describe('HPACK decoder: RFC 7541 Appendix C', () => {
  it('C.2 single fields', () => {
    let d = new HpackDecoder();
    expect(decode(d, hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572'))).toEqual({
      result: 'ok',
      fields: [['custom-key', 'custom-header']],
    });
    expect(dynamicTable(d, 1)).toEqual([['custom-key', 'custom-header']]);

    d = new HpackDecoder();
    expect(decode(d, hex('040c 2f73 616d 706c 652f 7061 7468'))).toEqual({
      result: 'ok',
      fields: [[':path', '/sample/path']],
    });
    expect(dynamicTable(d, 0)).toEqual([]);

    d = new HpackDecoder();
    expect(decode(d, hex('1008 7061 7373 776f 7264 0673 6563 7265 74'))).toEqual({
      result: 'ok',
      fields: [['password', 'secret']],
    });
    expect(dynamicTable(d, 0)).toEqual([]);

    d = new HpackDecoder();
    expect(decode(d, hex('82'))).toEqual({ result: 'ok', fields: [[':method', 'GET']] });
    expect(dynamicTable(d, 0)).toEqual([]);
  });

  const requests = [
    [
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/'],
      [':authority', 'www.example.com'],
    ],
    [
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/'],
      [':authority', 'www.example.com'],
      ['cache-control', 'no-cache'],
    ],
    [
      [':method', 'GET'],
      [':scheme', 'https'],
      [':path', '/index.html'],
      [':authority', 'www.example.com'],
      ['custom-key', 'custom-value'],
    ],
  ];
  const requestTables = [
    [[':authority', 'www.example.com']],
    [
      ['cache-control', 'no-cache'],
      [':authority', 'www.example.com'],
    ],
    [
      ['custom-key', 'custom-value'],
      ['cache-control', 'no-cache'],
      [':authority', 'www.example.com'],
    ],
  ];

  it('C.3 requests without Huffman coding, one dynamic table across three blocks', () => {
    const d = new HpackDecoder();
    const blocks = [
      '8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
      '8286 84be 5808 6e6f 2d63 6163 6865',
      '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65',
    ];
    blocks.forEach((block, i) => {
      expect(decode(d, hex(block))).toEqual({ result: 'ok', fields: requests[i] });
      expect(dynamicTable(d, requestTables[i]!.length)).toEqual(requestTables[i]);
    });
  });

  it('C.4 requests with Huffman coding', () => {
    const d = new HpackDecoder();
    const blocks = [
      '8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff',
      '8286 84be 5886 a8eb 1064 9cbf',
      '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf',
    ];
    blocks.forEach((block, i) => {
      expect(decode(d, hex(block))).toEqual({ result: 'ok', fields: requests[i] });
      expect(dynamicTable(d, requestTables[i]!.length)).toEqual(requestTables[i]);
    });
  });

  const date1 = 'Mon, 21 Oct 2013 20:13:21 GMT';
  const date2 = 'Mon, 21 Oct 2013 20:13:22 GMT';
  const location = 'https://www.example.com';
  const cookie = 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1';
  const responses = [
    [
      [':status', '302'],
      ['cache-control', 'private'],
      ['date', date1],
      ['location', location],
    ],
    [
      [':status', '307'],
      ['cache-control', 'private'],
      ['date', date1],
      ['location', location],
    ],
    [
      [':status', '200'],
      ['cache-control', 'private'],
      ['date', date2],
      ['location', location],
      ['content-encoding', 'gzip'],
      ['set-cookie', cookie],
    ],
  ];
  // Table size 256: the second block evicts ":status: 302", the third evicts three entries.
  const responseTables = [
    [
      ['location', location],
      ['date', date1],
      ['cache-control', 'private'],
      [':status', '302'],
    ],
    [
      [':status', '307'],
      ['location', location],
      ['date', date1],
      ['cache-control', 'private'],
    ],
    [
      ['set-cookie', cookie],
      ['content-encoding', 'gzip'],
      ['date', date2],
    ],
  ];

  it('C.5 responses without Huffman coding, evictions at table size 256', () => {
    const d = new HpackDecoder(256);
    const blocks = [
      `4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
       2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
       6c65 2e63 6f6d`,
      '4803 3330 37c1 c0bf',
      `88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
       54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
       5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
       3d31`,
    ];
    blocks.forEach((block, i) => {
      expect(decode(d, hex(block))).toEqual({ result: 'ok', fields: responses[i] });
      expect(dynamicTable(d, responseTables[i]!.length)).toEqual(responseTables[i]);
    });
  });

  it('C.6 responses with Huffman coding, evictions at table size 256', () => {
    const d = new HpackDecoder(256);
    const blocks = [
      `4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
       2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3`,
      '4883 640e ffc1 c0bf',
      `88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
       77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
       9587 3160 65c0 03ed 4ee5 b106 3d50 07`,
    ];
    blocks.forEach((block, i) => {
      expect(decode(d, hex(block))).toEqual({ result: 'ok', fields: responses[i] });
      expect(dynamicTable(d, responseTables[i]!.length)).toEqual(responseTables[i]);
    });
  });
});

describe('HPACK decoder: malformed blocks', () => {
  const err = (block: Buffer, d = new HpackDecoder()): void => {
    expect(decode(d, block).result).toBe('compression-error');
  };

  it('refuses index 0 and indexes past the tables', () => {
    err(hex('80'));
    err(indexed(62)); // empty dynamic table
    err(hex('7e 01 61')); // literal with indexing, name index 62
    err(hex('0f 2f 01 61')); // literal without indexing, name index 15 + 47 = 62
    const d = new HpackDecoder();
    expect(decode(d, hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572')).result).toBe('ok');
    expect(decode(d, indexed(62)).result).toBe('ok');
    err(indexed(63), d);
  });

  it('refuses truncated and oversized integers', () => {
    err(hex('ff')); // 7-bit prefix full, continuation missing
    err(hex('ff 80')); // continuation bit set on the last byte
    err(hex('ff ff ff ff ff ff 00')); // six continuation bytes
    err(hex('ff 80 80 80 80 08')); // 127 + 2^31
    // The largest accepted: 127 + 0x7fffff80 = 2^31 - 1, an index past the table but a valid integer.
    expect(decode(new HpackDecoder(), hex('ff ff ff ff ff 07')).result).toBe('compression-error');
    // Zero-valued continuation bytes are a valid encoding of a small value, up to five of them.
    expect(decode(new HpackDecoder(), hex('3f 80 80 80 80 00')).result).toBe('ok'); // size update to 31
    err(hex('3f 80 80 80 80 80 00')); // the same with six continuation bytes
  });

  it('refuses truncated strings', () => {
    err(hex('40')); // name length missing
    err(hex('40 05 61 62')); // name shorter than its length
    err(hex('40 01 61')); // value missing
    err(hex('04 03 61 62')); // value shorter than its length
    err(hex('40 01 61 7f')); // value length integer truncated
    err(hex('00 81')); // Huffman name of one octet missing
  });

  it('refuses invalid Huffman padding and EOS', () => {
    // 'a' is 00011: padded with ones it is 0x1f.
    expect(decode(new HpackDecoder(), hex('00 81 1f 81 1f')).fields).toEqual([['a', 'a']]);
    err(hex('00 81 18 81 1f')); // padding 000, not ones
    err(hex('00 81 1f 82 1f ff')); // 11 bits of padding
    err(hex('00 81 1f 81 ff')); // 8 bits of padding (an empty string in one byte)
    // The longest valid padding, 7 bits: 'aaaaa' is 25 bits, then 1111111.
    expect(decode(new HpackDecoder(), hex('00 81 1f 84 18 c6 31 ff')).fields).toEqual([['a', 'aaaaa']]);

    err(hex('00 81 1f 84 ff ff ff ff')); // 30 ones are EOS
    err(hex('00 81 1f 84 ff ff ff fc')); // EOS followed by zero padding
    // Every byte string decodes only where its padding is valid: the empty Huffman string is fine.
    expect(decode(new HpackDecoder(), hex('00 81 1f 80')).fields).toEqual([['a', '']]);
  });

  it('accepts size updates only at the start of a block and up to the maximum', () => {
    err(hex('82 20')); // after a field
    err(hex('3f e2 01'), new HpackDecoder(256)); // 257 > 256
    expect(decode(new HpackDecoder(256), hex('3f e1 01 82')).result).toBe('ok'); // 256
    expect(decode(new HpackDecoder(), hex('20 3f e1 1f 82')).result).toBe('ok'); // two updates, then a field
    // An update to 0 empties the table; a later update may grow it again.
    const d = new HpackDecoder();
    expect(decode(d, hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572')).result).toBe('ok');
    expect(decode(d, hex('20 3f e1 1f')).result).toBe('ok');
    expect(dynamicTable(d, 0)).toEqual([]);
  });

  it('empties the table for an entry larger than the table, and evicts by octets', () => {
    const d = new HpackDecoder(100);
    // Two entries of 32 + 1 + 1 = 34 octets fit in 100, a third evicts the oldest.
    expect(decode(d, hex('40 01 61 01 31  40 01 62 01 32')).result).toBe('ok');
    expect(dynamicTable(d, 2)).toEqual([
      ['b', '2'],
      ['a', '1'],
    ]);
    expect(decode(d, hex('40 01 63 01 33')).result).toBe('ok');
    expect(dynamicTable(d, 2)).toEqual([
      ['c', '3'],
      ['b', '2'],
    ]);
    // Latin1 octets count one each: 'é' (0xe9) is one octet, 32 + 1 + 67 = 100 fits exactly.
    const value = Buffer.alloc(67, 0xe9);
    expect(decode(d, Buffer.concat([hex('40 01 64 43'), value])).result).toBe('ok');
    expect(dynamicTable(d, 1)).toEqual([['d', value.toString('latin1')]]);
    // 101 octets: the table empties and the field is still emitted.
    const big = decode(d, Buffer.concat([hex('40 01 64 44'), value, hex('e9')]));
    expect(big.result).toBe('ok');
    expect(big.fields[0]![1]!.length).toBe(68);
    expect(dynamicTable(d, 0)).toEqual([]);
  });

  it('keeps the ring consistent across many insertions and evictions', () => {
    const d = new HpackDecoder(4096);
    const rand = seededRandom(7);
    const model: string[][] = [];
    let size = 0;
    for (let round = 0; round < 2000; round++) {
      const name = `x-${Math.floor(rand() * 1000)}`;
      const value = 'v'.repeat(Math.floor(rand() * 300));
      const block = withIndexing(name, value);
      expect(decode(d, block).result).toBe('ok');
      model.unshift([name, value]);
      size += name.length + value.length + 32;
      while (size > 4096) {
        const old = model.pop()!;
        size -= old[0]!.length + old[1]!.length + 32;
      }
      if (round % 97 === 0) expect(dynamicTable(d, model.length)).toEqual(model);
    }
    expect(dynamicTable(d, model.length)).toEqual(model);
  });
});

describe('HPACK decoder: header list size limit', () => {
  it('stops returning fields past the limit but still indexes the whole block', () => {
    const d = new HpackDecoder();
    // custom-key: custom-header (10 + 13 + 32 = 55), then :method GET (7 + 3 + 32 = 42: 97 so far),
    // then x: y with indexing (34: 131, past the limit of 100).
    const block = hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572 82 40 01 78 01 79');
    const { result, fields } = decode(d, block, 100);
    expect(result).toBe('too-large');
    expect(fields).toEqual([
      ['custom-key', 'custom-header'],
      [':method', 'GET'],
    ]);
    expect(dynamicTable(d, 2)).toEqual([
      ['x', 'y'],
      ['custom-key', 'custom-header'],
    ]);
    // The next block decodes against the table the peer's encoder has.
    expect(decode(d, hex('be bf'), 131)).toEqual({
      result: 'ok',
      fields: [
        ['x', 'y'],
        ['custom-key', 'custom-header'],
      ],
    });
    // Exactly at the limit is allowed.
    expect(decode(new HpackDecoder(), block, 131).result).toBe('ok');
    expect(decode(new HpackDecoder(), block, 130).result).toBe('too-large');
  });

  it('reports a compression error found after the limit was passed', () => {
    expect(decode(new HpackDecoder(), hex('82 82 80'), 50).result).toBe('compression-error');
  });
});

describe('HPACK Huffman code', () => {
  it('round-trips every octet value', () => {
    const all = Buffer.alloc(256);
    for (let i = 0; i < 256; i++) all[i] = i;
    const s = all.toString('latin1');
    const enc = huffmanEncode(s);
    const dst = Buffer.alloc(huffmanDecodedMax(enc.length));
    const n = huffmanDecode(enc, 0, enc.length, dst);
    expect(dst.subarray(0, n).toString('latin1')).toBe(s);
  });

  it('round-trips random strings of every short length', () => {
    const rand = seededRandom(28);
    for (let len = 0; len < 200; len++) {
      const bytes = Buffer.alloc(len);
      for (let i = 0; i < len; i++) bytes[i] = rand() < 0.8 ? 0x61 + Math.floor(rand() * 26) : Math.floor(rand() * 256);
      const enc = huffmanEncode(bytes.toString('latin1'));
      const dst = Buffer.alloc(huffmanDecodedMax(enc.length));
      const n = huffmanDecode(enc, 0, enc.length, dst);
      expect(n).toBe(len);
      expect(dst.subarray(0, n).equals(bytes)).toBe(true);
    }
  });
});

describe('HPACK writers', () => {
  it('writes fields that decode to what was written, without touching the table', () => {
    const buf = Buffer.alloc(4096);
    const long = 'L'.repeat(300);
    let off = writeIndexed(buf, 0, staticStatusIndex(200));
    off = writeLiteralWithoutIndexing(buf, off, 31, 'content-type', 'application/dns-message');
    off = writeLiteralWithoutIndexing(buf, off, 28, 'content-length', '512');
    off = writeLiteralWithoutIndexing(buf, off, 24, 'cache-control', 'max-age=30');
    off = writeLiteralWithoutIndexing(buf, off, 0, 'x-custom', long);
    off = writeLiteralWithoutIndexing(buf, off, 0, 'x-latin1', 'caf\u00e9');
    off = writeIndexed(buf, off, 61);
    const d = new HpackDecoder();
    expect(decode(d, buf.subarray(0, off))).toEqual({
      result: 'ok',
      fields: [
        [':status', '200'],
        ['content-type', 'application/dns-message'],
        ['content-length', '512'],
        ['cache-control', 'max-age=30'],
        ['x-custom', long],
        ['x-latin1', 'caf\u00e9'],
        ['www-authenticate', ''],
      ],
    });
    expect(dynamicTable(d, 0)).toEqual([]);
    // Multi-byte integers: a 4-bit name index of 28 is 0f 0d; a length of 300 is 7f ad 01.
    expect(buf.subarray(0, 4).toString('hex')).toBe('880f1017');
    expect(Buffer.from(buf.subarray(0, off)).includes(hex('7f ad 01'))).toBe(true);
  });

  it('maps the static :status values and nothing else', () => {
    const d = new HpackDecoder();
    for (const status of [200, 204, 206, 304, 400, 404, 500]) {
      const index = staticStatusIndex(status);
      expect(decode(d, indexed(index)).fields).toEqual([[':status', String(status)]]);
    }
    for (const status of [0, 100, 201, 302, 403, 413, 415, 503]) expect(staticStatusIndex(status)).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
// Against Node's own HPACK: a raw HTTP/2 peer on a local TCP connection, Node's http2 client on
// the other end.

interface RawPeer {
  /** Header blocks (HEADERS + CONTINUATION joined, padding and priority removed) by stream. */
  readonly blocks: { stream: number; block: Buffer }[];
  readonly socket: () => net.Socket | null;
  readonly port: number;
  close(): Promise<void>;
}

const FRAME_DATA = 0;
const FRAME_HEADERS = 1;
const FRAME_SETTINGS = 4;
const FRAME_CONTINUATION = 9;
const FLAG_END_STREAM = 0x1;
const FLAG_ACK = 0x1;
const FLAG_END_HEADERS = 0x4;
const FLAG_PADDED = 0x8;
const FLAG_PRIORITY = 0x20;
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

/** A minimal HTTP/2 server side: sends `settings`, acks the client's, collects header blocks. */
async function rawPeer(
  settings: Buffer,
  onBlock?: (socket: net.Socket, stream: number, block: Buffer) => void,
): Promise<RawPeer> {
  const blocks: { stream: number; block: Buffer }[] = [];
  let conn: net.Socket | null = null;
  const server = net.createServer((socket) => {
    conn = socket;
    socket.write(frame(FRAME_SETTINGS, 0, 0, settings));
    let pending = Buffer.alloc(0);
    let prefaceSeen = false;
    let headerStream = 0;
    let headerParts: Buffer[] = [];
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      if (!prefaceSeen) {
        if (pending.length < PREFACE.length) return;
        expect(pending.subarray(0, PREFACE.length).equals(PREFACE)).toBe(true);
        pending = pending.subarray(PREFACE.length);
        prefaceSeen = true;
      }
      while (pending.length >= 9) {
        const length = pending.readUIntBE(0, 3);
        if (pending.length < 9 + length) return;
        const type = pending[3]!;
        const flags = pending[4]!;
        const stream = pending.readUInt32BE(5) & 0x7fffffff;
        let payload = pending.subarray(9, 9 + length);
        pending = pending.subarray(9 + length);
        if (type === FRAME_SETTINGS && (flags & FLAG_ACK) === 0)
          socket.write(frame(FRAME_SETTINGS, FLAG_ACK, 0, Buffer.alloc(0)));
        if (type === FRAME_HEADERS) {
          if (flags & FLAG_PADDED) {
            const pad = payload[0]!;
            payload = payload.subarray(1, payload.length - pad);
          }
          if (flags & FLAG_PRIORITY) payload = payload.subarray(5);
          headerStream = stream;
          headerParts = [payload];
        } else if (type === FRAME_CONTINUATION) {
          expect(stream).toBe(headerStream);
          headerParts.push(payload);
        } else {
          continue;
        }
        if (flags & FLAG_END_HEADERS) {
          const block = Buffer.concat(headerParts);
          blocks.push({ stream: headerStream, block });
          onBlock?.(socket, headerStream, block);
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    blocks,
    port,
    socket: () => conn,
    close: () =>
      new Promise<void>((resolve) => {
        conn?.destroy();
        server.close(() => resolve());
      }),
  };
}

function connectClient(port: number): http2.ClientHttp2Session {
  const client = http2.connect(`http://127.0.0.1:${port}`, {
    createConnection: () => net.connect(port, '127.0.0.1'),
  });
  client.on('error', () => {});
  return client;
}

/** The fields a request with `headers` puts on the wire, in Node's order for one name. */
function expectedFields(port: number, headers: Record<string, string | string[]>): string[][] {
  const fields: string[][] = [
    [':scheme', 'http'],
    [':authority', `127.0.0.1:${port}`],
  ];
  for (const [name, value] of Object.entries(headers)) {
    for (const v of Array.isArray(value) ? value : [value]) fields.push([name, v]);
  }
  return fields;
}

const byName = (a: string[], b: string[]): number => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0);

describe('HPACK decoder against Node http2 client', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  for (const tableSize of [4096, 256]) {
    it(`decodes what Node's client sends (our header table size ${tableSize})`, async () => {
      // SETTINGS_HEADER_TABLE_SIZE (1) when not the default, so that Node's encoder sends a size update.
      const settings = Buffer.alloc(tableSize === 4096 ? 0 : 6);
      if (tableSize !== 4096) {
        settings.writeUInt16BE(1, 0);
        settings.writeUInt32BE(tableSize, 2);
      }
      const peer = await rawPeer(settings);
      cleanups.push(() => peer.close());
      const client = connectClient(peer.port);
      cleanups.push(() => void client.destroy());
      await new Promise<void>((resolve) => client.once('remoteSettings', () => resolve()));

      const rand = seededRandom(tableSize);
      const longValue = Array.from({ length: 3000 }, () => String.fromCharCode(0x21 + Math.floor(rand() * 90))).join(
        '',
      );
      const requests: Record<string, string | string[]>[] = [
        {
          ':method': 'POST',
          ':path': '/dns-query',
          'content-type': 'application/dns-message',
          accept: 'application/dns-message',
        },
        {
          ':method': 'POST',
          ':path': '/dns-query',
          'content-type': 'application/dns-message',
          accept: 'application/dns-message',
        },
        { ':method': 'POST', ':path': '/dns-query?x=1', 'x-long': longValue, 'x-repeat': ['one', 'two', 'three'] },
        {
          ':method': 'GET',
          ':path': `/dns-query?dns=${'AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB'}`,
          ...Object.fromEntries(
            Array.from({ length: 40 }, (_, i) => [`x-custom-${i}`, `value-${i}-${'z'.repeat(i * 7)}`]),
          ),
        },
        // Over 16 KiB even Huffman-coded (6 bits an 'h'): Node splits the block into HEADERS and CONTINUATION frames.
        { ':method': 'POST', ':path': '/dns-query', 'x-huge': 'h'.repeat(30000), 'x-bytes': 'caf\u00e9 \u00ff' },
        { ':method': 'POST', ':path': '/dns-query', 'x-long': longValue, 'x-repeat': ['one', 'two', 'three'] },
        { ':method': 'POST', ':path': '/dns-query', authorization: 'Bearer secret', cookie: 'a=b; c=d' },
      ];
      for (const headers of requests) {
        const req = client.request(headers, { endStream: true });
        req.on('error', () => {});
      }
      await waitFor(`${requests.length} header blocks from Node's client`, () => peer.blocks.length >= requests.length);

      const d = new HpackDecoder(tableSize);
      const streams = peer.blocks.map((b) => b.stream);
      expect(streams).toEqual([...streams].sort((a, b) => a - b));
      peer.blocks.forEach(({ block }, i) => {
        const { result, fields } = decode(d, block);
        expect(result, `request ${i}`).toBe('ok');
        // Node may order different names its own way (pseudo-headers first); values of one name keep their order.
        expect([...fields].sort(byName), `request ${i}`).toEqual(expectedFields(peer.port, requests[i]!).sort(byName));
      });
      // The client did index: later requests are shorter than the first identical one.
      expect(peer.blocks[1]!.block.length).toBeLessThan(peer.blocks[0]!.block.length);
      expect(peer.blocks.some((b) => b.block.length > 16384)).toBe(true);
    });
  }

  it("answers Node's client with headers written by our writers", async () => {
    const body = Buffer.from('answer');
    const peer = await rawPeer(Buffer.alloc(0), (socket, stream) => {
      const buf = Buffer.alloc(512);
      let off = writeIndexed(buf, 0, staticStatusIndex(200));
      off = writeLiteralWithoutIndexing(buf, off, 31, 'content-type', 'application/dns-message');
      off = writeLiteralWithoutIndexing(buf, off, 28, 'content-length', String(body.length));
      off = writeLiteralWithoutIndexing(buf, off, 24, 'cache-control', 'max-age=30');
      off = writeLiteralWithoutIndexing(buf, off, 0, 'x-served-by', 'hpack-test');
      socket.write(frame(FRAME_HEADERS, FLAG_END_HEADERS, stream, buf.subarray(0, off)));
      socket.write(frame(FRAME_DATA, FLAG_END_STREAM, stream, body));
    });
    cleanups.push(() => peer.close());
    const client = connectClient(peer.port);
    cleanups.push(() => void client.destroy());
    for (let i = 0; i < 3; i++) {
      const req = client.request({ ':method': 'POST', ':path': '/dns-query' }, { endStream: true });
      const response = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
        req.once('response', resolve);
        req.once('error', reject);
      });
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      expect(response[':status']).toBe(200);
      expect(response['content-type']).toBe('application/dns-message');
      expect(response['content-length']).toBe(String(body.length));
      expect(response['cache-control']).toBe('max-age=30');
      expect(response['x-served-by']).toBe('hpack-test');
      expect(Buffer.concat(chunks).equals(body)).toBe(true);
    }
  });
});
