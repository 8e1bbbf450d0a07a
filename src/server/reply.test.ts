import * as dnsPacket from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { encodeMessage } from '../dns/encode.js';
import { decode, replyTo, type Message } from '../dns/message.js';
import { parseRequest, type ParsedRequest } from '../dns/wire.js';
import { Query, Reply } from '../query.js';
import { encodeQuery, TEST_TRANSPORT } from '../../test/helpers/dns.js';
import { bareReply, finalizeReply, sizeLimit } from './reply.js';

function req(
  name: string,
  type: string,
  o: Parameters<typeof encodeQuery>[2] = {},
): { raw: Buffer; req: ParsedRequest } {
  const raw = encodeQuery(name, type, o);
  const p = parseRequest(raw);
  if (p.kind !== 'query') throw new Error('bad');
  return { raw, req: p.req };
}

function bigAnswer(r: { raw: Buffer }, n: number): Message {
  const m = replyTo(decode(r.raw), 0, true);
  for (let i = 0; i < n; i++)
    m.answers.push({
      name: 'many.example.org',
      type: 'A',
      ttl: 30,
      data: `10.0.${i >> 8}.${i & 255}`,
    } as dnsPacket.Answer);
  return m;
}

describe('reply size and truncation', () => {
  it('limits: 512 without EDNS, client size capped by ours with EDNS, 65535 over TCP', () => {
    expect(sizeLimit(req('a.org', 'A').req, 'udp')).toBe(512);
    expect(sizeLimit(req('a.org', 'A', { edns: 4096 }).req, 'udp')).toBe(1232);
    expect(sizeLimit(req('a.org', 'A', { edns: 800 }).req, 'udp')).toBe(800);
    expect(sizeLimit(req('a.org', 'A', { edns: 100 }).req, 'udp')).toBe(512);
    expect(sizeLimit(req('a.org', 'A', { edns: 4096 }).req, 'tcp')).toBe(65535);
  });

  it('truncates with TC when the answer does not fit in 512 bytes, keeping whole records', () => {
    const r = req('many.example.org', 'A', { id: 77 });
    const out = finalizeReply(new Reply(null, bigAnswer(r, 100), 'test'), r.req, 'udp');
    expect(out.length).toBeLessThanOrEqual(512);
    const m = decode(out);
    expect(m.id).toBe(77);
    expect(m.flag_tc).toBe(true);
    expect(m.answers.length).toBeGreaterThan(10);
    expect(m.answers.length).toBeLessThan(100);
  });

  it('uses name compression so more records fit; no TC when all fit', () => {
    const r = req('many.example.org', 'A');
    const m = decode(finalizeReply(new Reply(null, bigAnswer(r, 28), 'test'), r.req, 'udp'));
    // 28 compressed A records: 12 + 22 + 28*16 = 482 bytes, would be 28*30 uncompressed.
    expect(m.flag_tc).toBe(false);
    expect(m.answers).toHaveLength(28);
  });

  it('sends everything over TCP and with a large EDNS buffer', () => {
    const t = req('many.example.org', 'A');
    expect(decode(finalizeReply(new Reply(null, bigAnswer(t, 100), 'test'), t.req, 'tcp')).answers).toHaveLength(100);
    const e = req('many.example.org', 'A', { edns: 4096 });
    const m = decode(finalizeReply(new Reply(null, bigAnswer(e, 70), 'test'), e.req, 'udp'));
    expect(m.answers).toHaveLength(70);
    expect(m.additionals.some((a) => a.type === 'OPT')).toBe(true);
  });

  it('truncates oversize wire replies too', () => {
    const r = req('many.example.org', 'A');
    const wire = encodeMessage(bigAnswer(r, 100));
    const m = decode(finalizeReply(new Reply(wire, null, 'test'), r.req, 'udp'));
    expect(m.flag_tc).toBe(true);
  });

  it('appends an OPT to a wire reply for an EDNS query, echoing no options (CoreDNS 1.15.0) and the high flag byte', () => {
    const r = req('a.example.org', 'A', {
      edns: 1400,
      do: true,
      options: [
        { code: 10, data: Buffer.from('0102030405060708', 'hex') },
        { code: 8, data: Buffer.from([0, 1, 24, 0, 10, 0, 0]) },
      ],
    });
    const wire = encodeMessage(replyTo(decode(r.raw), 0, true));
    const m = decode(finalizeReply(new Reply(wire, null, 'test'), r.req, 'udp'));
    const opt = m.additionals.find((a) => a.type === 'OPT') as unknown as {
      udpPayloadSize: number;
      flag_do: boolean;
      options: { code: number }[];
    };
    expect(opt.udpPayloadSize).toBe(1400);
    expect(opt.flag_do).toBe(true);
    expect(opt.options.map((o) => o.code)).toEqual([]);
    // Z bits of the high flag byte come back, the low byte is cleared (request.SizeAndDo).
    const z = req('a.example.org', 'A', { edns: 1232 });
    const raw = Buffer.from(z.raw);
    raw.writeUInt16BE(0x40ff, raw.length - 4);
    const parsed = parseRequest(raw);
    if (parsed.kind !== 'query') throw new Error('query rejected');
    const out = finalizeReply(new Reply(encodeMessage(replyTo(decode(raw), 0, true)), null, 'test'), parsed.req, 'udp');
    expect(out.readUInt16BE(out.length - 4)).toBe(0x4000);
  });

  it('answers BADVERS with a fresh OPT: no UDP size, no flags', () => {
    const r = req('a.example.org', 'A', { edns: 1400, do: true });
    const out = bareReply(r.raw, r.req.questionEnd, 16, r.req.edns);
    const optAt = out.length - 11;
    expect(out.readUInt16BE(optAt + 1)).toBe(41);
    expect(out.readUInt16BE(optAt + 3)).toBe(0);
    expect(out[optAt + 5]).toBe(1);
    expect(out.readUInt16BE(optAt + 7)).toBe(0);
  });

  it('does not add OPT when the query had none', () => {
    const r = req('a.example.org', 'A');
    const m = decode(finalizeReply(new Reply(null, replyTo(decode(r.raw)), 'test'), r.req, 'udp'));
    expect(m.additionals).toHaveLength(0);
  });

  it('a bare reply to NOTIFY keeps the opcode but not RD or CD (miekg/dns SetReply)', () => {
    const r = req('example.org', 'SOA', { id: 7, cd: true });
    const raw = Buffer.from(r.raw);
    raw.writeUInt16BE((raw.readUInt16BE(2) & ~0x7800) | (4 << 11), 2);
    const m = decode(bareReply(raw, r.req.questionEnd, 4, null));
    expect(((m.flags ?? 0) >> 11) & 0xf).toBe(4);
    expect(m.flag_rd).toBe(false);
    expect(m.flag_cd).toBe(false);
    expect(m.flag_qr).toBe(true);
  });

  it('bare replies copy id, opcode, RD and CD and carry the question', () => {
    const r = req('Q.Example.org', 'MX', { id: 9, cd: true });
    const m = decode(bareReply(r.raw, r.req.questionEnd, 5, null));
    expect(m.id).toBe(9);
    expect((m.flags ?? 0) & 0xf).toBe(5);
    expect(m.flag_rd).toBe(true);
    expect(m.flag_cd).toBe(true);
    expect(m.flag_qr).toBe(true);
    expect(m.flag_aa).toBe(false);
    expect(m.questions[0]).toMatchObject({ name: 'Q.Example.org', type: 'MX' });
  });
});

describe("reply OPT: the reply's own flags and options a plugin attached", () => {
  interface Opt {
    udpPayloadSize: number;
    flags: number;
    options: { code: number; data: Buffer }[];
  }
  const optOf = (b: Buffer): Opt => decode(b).additionals.find((r) => r.type === 'OPT') as unknown as Opt;
  const withOpt = (r: { raw: Buffer }, flags: number, options: { code: number; data: Buffer }[] = []): Message => {
    const m = replyTo(decode(r.raw));
    m.additionals.push({ type: 'OPT', name: '.', udpPayloadSize: 4096, flags, options } as unknown as dnsPacket.Answer);
    return m;
  };

  it("keeps a DO the reply's OPT set (wire and decoded), adds the client's DO, takes the client's size", () => {
    const r = req('a.org', 'A', { edns: 1400 });
    for (const wire of [true, false]) {
      const m = withOpt(r, 0x8000, [{ code: 15, data: Buffer.from([0, 15]) }]);
      const reply = wire ? new Reply(encodeMessage(m), null, 't') : new Reply(null, m, 't');
      const opt = optOf(finalizeReply(reply, r.req, 'udp'));
      expect(opt.udpPayloadSize).toBe(1400);
      expect(opt.flags).toBe(0x8000);
      expect(opt.options.map((o) => o.code)).toEqual([15]);
    }
    const rd = req('a.org', 'A', { edns: 1400, do: true });
    expect(optOf(finalizeReply(new Reply(encodeMessage(withOpt(rd, 0)), null, 't'), rd.req, 'udp')).flags).toBe(0x8000);
  });

  it('merges Reply.ednsOptions into the OPT: replaces the same code, appends others, creates an OPT with DO', () => {
    const r = req('a.org', 'A', { edns: 1232 });
    const reply = new Reply(
      encodeMessage(
        withOpt(r, 0, [
          { code: 3, data: Buffer.from('old') },
          { code: 10, data: Buffer.alloc(8) },
        ]),
      ),
      null,
      't',
    );
    reply.ednsOptions = [
      { code: 3, data: Buffer.from('new') },
      { code: 12, data: Buffer.alloc(0) },
    ];
    expect(optOf(finalizeReply(reply, r.req, 'udp')).options.map((o) => [o.code, o.data.toString('hex')])).toEqual([
      [3, '6e6577'],
      [10, '0000000000000000'],
      [12, ''],
    ]);
    const bare = new Reply(null, replyTo(decode(r.raw)), 't');
    bare.ednsOptions = [{ code: 3, data: Buffer.from('x') }];
    const opt = optOf(finalizeReply(bare, r.req, 'udp'));
    expect(opt.flags).toBe(0x8000);
    expect(opt.udpPayloadSize).toBe(1232);
    expect(opt.options.map((o) => o.code)).toEqual([3]);
  });

  it('ignores Reply.ednsOptions for a query without EDNS', () => {
    const r = req('a.org', 'A');
    const reply = new Reply(null, replyTo(decode(r.raw)), 't');
    reply.ednsOptions = [{ code: 3, data: Buffer.from('x') }];
    expect(decode(finalizeReply(reply, r.req, 'udp')).additionals).toEqual([]);
  });
});

describe('reply ownership (docs/ARCHITECTURE.md, "The reply contract")', () => {
  /** A wire reply to `r` carrying an OPT of its own (as an upstream's) and another id. */
  function withOwnOpt(r: { raw: Buffer }, id: number): Buffer {
    const m = replyTo(decode(r.raw), 0, true);
    m.id = id;
    m.additionals.push({
      type: 'OPT',
      name: '.',
      udpPayloadSize: 4096,
      flags: 0,
    } as unknown as Message['additionals'][number]);
    return encodeMessage(m);
  }

  it('patches id and OPT of handed-over bytes in place, without a copy', () => {
    const r = req('a.example.org', 'A', { id: 5, edns: 1400 });
    const wire = withOwnOpt(r, 99);
    const out = finalizeReply(new Reply(wire, null, 'test'), r.req, 'udp');
    expect(out).toBe(wire);
    expect(out.readUInt16BE(0)).toBe(5);
    expect((decode(out).additionals[0] as unknown as { udpPayloadSize: number }).udpPayloadSize).toBe(1400);
  });

  it('never changes shared bytes: finalize and mutableWire copy them once', () => {
    const r = req('a.example.org', 'A', { id: 5, edns: 1400 });
    const wire = withOwnOpt(r, 99);
    const before = Buffer.from(wire);
    const reply = new Reply(wire, null, 'test', true);
    expect(reply.isShared).toBe(true);
    const out = finalizeReply(reply, r.req, 'udp');
    expect(out).not.toBe(wire);
    expect(wire.equals(before)).toBe(true);
    expect(out.readUInt16BE(0)).toBe(5);
    // The copy now belongs to the reply: a second change is in place.
    expect(reply.isShared).toBe(false);
    expect(reply.mutableWire()).toBe(out);
  });

  it('Query.writeWire hands bytes over unless {shared: true}; the 2-argument form still works', () => {
    const r = req('a.example.org', 'A');
    const q = new Query(r.raw, r.req, TEST_TRANSPORT);
    const wire = withOwnOpt(r, 1);
    q.writeWire(wire, 'test');
    expect(q.reply!.isShared).toBe(false);
    expect(q.reply!.mutableWire()).toBe(wire);
    q.writeWire(wire, 'test', { shared: true });
    const copy = q.reply!.mutableWire();
    expect(copy).not.toBe(wire);
    expect(copy.equals(wire)).toBe(true);
  });

  it('mutableWire drops a decoded form that would go stale, and encodes a message reply', () => {
    const r = req('a.example.org', 'A', { id: 3 });
    const reply = new Reply(withOwnOpt(r, 3), null, 'test');
    expect(reply.peek().id).toBe(3);
    reply.mutableWire().writeUInt16BE(4, 0);
    expect(reply.peek().id).toBe(4);
    const fromMsg = new Reply(null, replyTo(decode(r.raw)), 'test');
    expect(decode(fromMsg.mutableWire()).id).toBe(decode(r.raw).id);
    expect(fromMsg.isWire).toBe(true);
  });
});
