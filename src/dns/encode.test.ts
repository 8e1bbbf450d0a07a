import type * as dnsPacket from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { encodeFitted } from './encode.js';
import { decode, type Message } from './message.js';

const SVC = 'headless.default.svc.cluster.local';

function srvReply(n: number): Message {
  const m: Message = {
    type: 'response',
    id: 1,
    flags: 0x0400,
    questions: [{ name: `_http._tcp.${SVC}`, type: 'SRV', class: 'IN' }],
    answers: [],
    authorities: [],
    additionals: [],
  };
  for (let i = 0; i < n; i++) {
    const target = `10-244-1-${i + 10}.${SVC}`;
    m.answers.push({
      name: `_http._tcp.${SVC}`,
      type: 'SRV',
      ttl: 5,
      data: { priority: 0, weight: Math.floor(100 / n), port: 80, target },
    } as dnsPacket.Answer);
    m.additionals.push({ name: target, type: 'A', ttl: 5, data: `10.244.1.${i + 10}` } as dnsPacket.Answer);
  }
  return m;
}

/** Offsets of the compression pointers and the names they resolve to, walking the wire form. */
function pointerAt(buf: Buffer, off: number): number | null {
  return (buf[off]! & 0xc0) === 0xc0 ? buf.readUInt16BE(off) & 0x3fff : null;
}

describe('name compression (miekg/dns rules)', () => {
  it('registers SRV targets: the additional owners point at them, the targets stay uncompressed', () => {
    // Each additional A owner is a 2-byte pointer to an SRV target, so an A record is 16 bytes.
    const a = encodeFitted(srvReply(6)).buf;
    const lastA = a.length - 16;
    expect(pointerAt(a, lastA)).not.toBeNull();
    // The pointer lands inside the answer section (at the last SRV target), not in the question.
    const q = 12 + `_http._tcp.${SVC}`.length + 2 + 4;
    expect(pointerAt(a, lastA)!).toBeGreaterThan(q);
    // Every SRV target is written in full (RFC 2782): no pointer right after the SRV's 6 fixed bytes.
    let off = q;
    for (let i = 0; i < 6; i++) {
      expect(pointerAt(a, off)).not.toBeNull(); // owner = question name
      const rdlen = a.readUInt16BE(off + 10);
      const target = off + 12 + 6;
      expect(pointerAt(a, target)).toBeNull();
      // The whole target is written in full, even its suffix that the question already holds.
      expect(a[target]).toBe(`10-244-1-${i + 10}`.length);
      expect(rdlen).toBe(6 + `10-244-1-${i + 10}.${SVC}`.length + 2);
      off += 12 + rdlen;
    }
  });

  it('without EDNS, registered targets let three times as many additionals fit in 512 bytes', () => {
    const { buf, truncated } = encodeFitted(srvReply(6), 512);
    const m = decode(buf);
    // 12 header + 51 question + 6 × 66 SRV (2 owner + 10 + 6 + 48 target) = 459; then 16-byte A
    // records (pointer owners): 3 fit (507). With only the question registered an A owner costs
    // 14 bytes (first label + pointer) and only one fitted.
    // Additional records were left out: TC, as CoreDNS sets it.
    expect(truncated).toBe(true);
    expect(m.flag_tc).toBe(true);
    expect(m.answers).toHaveLength(6);
    expect(m.additionals).toHaveLength(3);
    expect(buf.length).toBe(12 + 51 + 6 * 66 + 3 * 16);
    // Shorter targets: all six SRV and all six A fit.
    const short = srvReply(6);
    for (const [i, rr] of short.answers.entries()) (rr as dnsPacket.SrvAnswer).data.target = `e${i}.${SVC}`;
    for (const [i, rr] of short.additionals.entries()) rr.name = `e${i}.${SVC}`;
    const fitted = encodeFitted(short, 512);
    expect(fitted.truncated).toBe(false);
    expect(decode(fitted.buf).additionals).toHaveLength(6);
    expect(fitted.buf.length).toBe(12 + 51 + 6 * (2 + 10 + 6 + 3 + 36) + 6 * 16);
  });

  it('a name is registered only once, and a compressed RDATA name still points at an earlier one', () => {
    const m: Message = {
      type: 'response',
      id: 2,
      flags: 0,
      questions: [{ name: 'x.example.org', type: 'MX', class: 'IN' }],
      answers: [
        {
          name: 'x.example.org',
          type: 'MX',
          ttl: 1,
          data: { preference: 1, exchange: 'mail.example.org' },
        } as dnsPacket.Answer,
        {
          name: 'x.example.org',
          type: 'MX',
          ttl: 1,
          data: { preference: 2, exchange: 'mail.example.org' },
        } as dnsPacket.Answer,
      ],
      authorities: [],
      additionals: [{ name: 'mail.example.org', type: 'A', ttl: 1, data: '192.0.2.1' } as dnsPacket.Answer],
    };
    const buf = encodeMessage2(m);
    const d = decode(buf);
    expect(d.answers.map((r) => (r as unknown as { data: { exchange: string } }).data.exchange)).toEqual([
      'mail.example.org',
      'mail.example.org',
    ]);
    expect(d.additionals[0]!.name).toBe('mail.example.org');
    // second MX exchange is one pointer: RDLENGTH = 2 (pref) + 2 (pointer)
    const second = buf.length - 16 - (12 + 4);
    expect(buf.readUInt16BE(second + 10)).toBe(4);
    expect(pointerAt(buf, buf.length - 16)).not.toBeNull();
  });
});

function encodeMessage2(m: Message): Buffer {
  return encodeFitted(m).buf;
}
