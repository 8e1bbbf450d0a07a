import { describe, expect, it } from 'vitest';
import { FrameReader, framed } from './tcpframes.js';

describe('tcp frames', () => {
  it('cuts a stream into messages wherever the chunks end', () => {
    const a = Buffer.from('first message');
    const b = Buffer.alloc(300, 7);
    const c = Buffer.alloc(0);
    const stream = Buffer.concat([framed(a), framed(b), framed(c)]);
    for (let cut1 = 0; cut1 <= stream.length; cut1 += 7) {
      for (let cut2 = cut1; cut2 <= stream.length; cut2 += 61) {
        const r = new FrameReader();
        const got: Buffer[] = [];
        for (const chunk of [stream.subarray(0, cut1), stream.subarray(cut1, cut2), stream.subarray(cut2)])
          r.push(chunk, (f) => got.push(Buffer.from(f)));
        expect(got).toEqual([a, b, c]);
      }
    }
  });

  it('writes the length in front', () => {
    expect(framed(Buffer.from([1, 2, 3]))).toEqual(Buffer.from([0, 3, 1, 2, 3]));
  });
});
