import { describe, expect, it } from 'vitest';
import * as dnsPacket from 'dns-packet';
import type { Answer, Packet } from 'dns-packet';
import {
  compareReplies,
  differenceKinds,
  parseMessage,
  renderDiff,
  TOLERANCE_RULES,
  type ToleranceRule,
} from './index.js';

const Q = dnsPacket.encode({
  id: 7,
  type: 'query',
  flags: dnsPacket.RECURSION_DESIRED,
  questions: [{ name: 'web.default.svc.cluster.local', type: 'A', class: 'IN' }],
});

function reply(o: Partial<Packet> & { answers?: Answer[] } = {}): Buffer {
  return dnsPacket.encode({
    id: 7,
    type: 'response',
    flags: dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.RECURSION_DESIRED,
    questions: [{ name: 'web.default.svc.cluster.local', type: 'A', class: 'IN' }],
    answers: [{ name: 'web.default.svc.cluster.local', type: 'A', ttl: 5, data: '10.96.0.10' }],
    ...o,
  });
}

const a = (ip: string, ttl = 5): Answer => ({ name: 'web.default.svc.cluster.local', type: 'A', ttl, data: ip });

describe('compareReplies', () => {
  it('finds nothing for identical replies, even with another id', () => {
    const c = compareReplies(Q, reply(), reply({ id: 9 }));
    expect(c.differences).toEqual([]);
    expect(renderDiff(c)).toContain('identical');
  });

  it('reports rcode, flags, records and edns as typed differences', () => {
    const ref = reply({ additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 1232 } as Answer] });
    const cand = reply({ flags: dnsPacket.RECURSION_DESIRED | 3, answers: [a('10.96.0.11')] });
    const c = compareReplies(Q, ref, cand);
    expect(differenceKinds(c)).toEqual(['rcode', 'flags', 'answer', 'edns']);
    const text = renderDiff(c);
    expect(text).toContain('rcode: reference NOERROR, candidate NXDOMAIN');
    expect(text).toContain('flags: AA: reference 1, candidate 0');
    expect(text).toContain('answer: reference only: web.default.svc.cluster.local.\t5\tIN\tA\t10.96.0.10');
    expect(text).toContain('answer: candidate only: web.default.svc.cluster.local.\t5\tIN\tA\t10.96.0.11');
    expect(text).toContain('edns: OPT record: reference present, candidate absent');
    expect(text).toContain('--- reference (CoreDNS)');
  });

  it('compares sections as multisets, then order, then TTLs', () => {
    const ref = reply({ answers: [a('10.0.0.1'), a('10.0.0.2')] });
    expect(differenceKinds(compareReplies(Q, ref, reply({ answers: [a('10.0.0.2'), a('10.0.0.1')] })))).toEqual([
      'order',
    ]);
    expect(
      differenceKinds(compareReplies(Q, ref, reply({ answers: [a('10.0.0.1'), a('10.0.0.2'), a('10.0.0.2')] }))),
    ).toEqual(['answer', 'size']);
    const ttl = compareReplies(Q, ref, reply({ answers: [a('10.0.0.1', 4), a('10.0.0.2')] }));
    expect(ttl.differences).toMatchObject([{ kind: 'ttl', reference: 5, candidate: 4, section: 'answer' }]);
  });

  it('applies tolerance rules by kind, plugin and window', () => {
    const ref = reply({ answers: [a('10.0.0.1', 30), a('10.0.0.2', 30)] });
    const shuffled = reply({ answers: [a('10.0.0.2', 29), a('10.0.0.1', 29)] });
    const plain = compareReplies(Q, ref, shuffled, { rules: TOLERANCE_RULES });
    expect(differenceKinds(plain)).toEqual(['order', 'ttl']);
    const lb = compareReplies(Q, ref, shuffled, {
      rules: TOLERANCE_RULES,
      context: { plugins: ['cache', 'loadbalance'] },
    });
    expect(lb.differences).toEqual([]);
    expect(lb.tolerated.map((t) => t.rule)).toEqual(['cache-ttl-aging', 'cache-ttl-aging', 'loadbalance-shuffle']);
    const far = compareReplies(Q, ref, reply({ answers: [a('10.0.0.1', 20), a('10.0.0.2', 30)] }), {
      rules: TOLERANCE_RULES,
      context: { plugins: ['cache'] },
    });
    expect(differenceKinds(far)).toEqual(['ttl']);
    const byName: ToleranceRule = {
      id: 'x',
      reason: 'test',
      match: { kinds: ['answer'], qname: /^web\.default\./, qtypes: ['A'], side: 'candidate' },
    };
    const extra = compareReplies(Q, reply(), reply({ answers: [a('10.96.0.10'), a('10.0.0.9')] }), { rules: [byName] });
    expect(differenceKinds(extra)).toEqual(['size']);
    expect(extra.tolerated[0]!.rule).toBe('x');
  });

  it('flags a larger candidate, TC and EDNS options', () => {
    const opt = (options: { code: number; data: Buffer }[]): Answer =>
      ({ type: 'OPT', name: '.', udpPayloadSize: 1232, options }) as unknown as Answer;
    const ref = reply({ flags: dnsPacket.TRUNCATED_RESPONSE, answers: [], additionals: [opt([])] });
    const cand = reply({
      answers: [],
      additionals: [opt([{ code: 10, data: Buffer.from('0102030405060708', 'hex') }])],
    });
    const c = compareReplies(Q, ref, cand);
    expect(differenceKinds(c)).toEqual(['flags', 'edns', 'truncated', 'size']);
    expect(c.differences.find((d) => d.kind === 'edns')!.detail).toBe(
      'edns: options: reference [], candidate [10:0102030405060708]',
    );
  });

  it('reports letter-case-only and SOA-serial differences as their own kinds', () => {
    const soa = (serial: number, mname = 'ns.dns.cluster.local'): Answer => ({
      name: 'cluster.local',
      type: 'SOA',
      ttl: 5,
      data: { mname, rname: 'hostmaster.cluster.local', serial, refresh: 7200, retry: 1800, expire: 86400, minimum: 5 },
    });
    const ref = reply({ answers: [], authorities: [soa(100)] });
    const c = compareReplies(Q, ref, reply({ answers: [], authorities: [soa(101, 'NS.dns.cluster.local')] }), {
      rules: TOLERANCE_RULES,
      context: { plugins: ['kubernetes'] },
    });
    expect(c.differences.map((d) => d.kind)).toEqual(['case']); // serial tolerated, case not (lower-case question)
    expect(c.tolerated.map((t) => t.rule)).toEqual(['soa-serial-clock']);
    const mixed = compareReplies(Q, ref, reply({ answers: [], authorities: [soa(101, 'NS.dns.cluster.local')] }), {
      rules: TOLERANCE_RULES,
      context: { plugins: ['kubernetes'], qname: 'Web.default.svc.cluster.local.' },
    });
    expect(mixed.differences).toEqual([]);
  });

  it('matches rules on the candidate RCODE and tags', () => {
    const formerr = reply({ flags: 1, answers: [] });
    const rule: ToleranceRule = {
      id: 'f',
      reason: 'test',
      match: { kinds: ['rcode', 'flags', 'answer'], tags: ['malformed'], candidateRcode: 'FORMERR' },
    };
    expect(
      compareReplies(Q, reply(), formerr, { rules: [rule], context: { tags: ['malformed'] } }).differences,
    ).toEqual([]);
    expect(differenceKinds(compareReplies(Q, reply(), formerr, { rules: [rule] }))).toEqual([
      'rcode',
      'flags',
      'answer',
    ]);
  });

  it('never throws on garbage: malformed and missing replies are differences', () => {
    const good = reply();
    const garbage = [
      Buffer.alloc(0),
      Buffer.from([1, 2, 3]),
      Buffer.from('ffffffffffffffffffffffff', 'hex'),
      good.subarray(0, good.length - 3),
      Buffer.concat([good, Buffer.from([0])]),
    ];
    // Compression loop: a name that points at itself.
    const loop = Buffer.from(good);
    loop.writeUInt16BE(0xc00c, 12);
    garbage.push(loop);
    for (let seed = 1; seed < 300; seed++) {
      const b = Buffer.from(good);
      for (let i = 0; i < 4; i++) b[(seed * 7919 + i * 104729) % b.length] = (seed * 31 + i) & 0xff;
      garbage.push(b);
    }
    for (const g of garbage) {
      const c = compareReplies(Q, g, good);
      expect(() => renderDiff(c)).not.toThrow();
      if (!parseMessage(g).ok)
        expect(c.differences.some((d) => d.kind === 'malformed' && d.side === 'reference')).toBe(true);
    }
    expect(differenceKinds(compareReplies(Q, null, good))).toEqual(['noreply']);
    expect(compareReplies(Q, null, good).differences[0]!.side).toBe('reference');
    expect(compareReplies(Q, null, null).differences).toEqual([]);
  });

  it('renders names with compression, SRV, SOA, TXT and unknown types', () => {
    const m = dnsPacket.encode({
      id: 1,
      type: 'response',
      flags: 0,
      questions: [{ name: 'x.example', type: 'A', class: 'IN' }],
      answers: [
        { name: 'x.example', type: 'SRV', ttl: 1, data: { priority: 0, weight: 100, port: 80, target: 'a.x.example' } },
        { name: 'x.example', type: 'TXT', ttl: 1, data: ['hi "there"'] },
        { name: 'x.example', type: 'AAAA', ttl: 1, data: 'fd00::1' },
        { name: 'x.example', type: 'HINFO', ttl: 1, data: { cpu: 'c', os: 'o' } },
      ],
      authorities: [
        {
          name: 'example',
          type: 'SOA',
          ttl: 1,
          data: {
            mname: 'ns.dns.example',
            rname: 'hostmaster.example',
            serial: 1,
            refresh: 2,
            retry: 3,
            expire: 4,
            minimum: 5,
          },
        },
      ],
    });
    const p = parseMessage(m);
    expect(p.ok).toBe(true);
    if (!p.ok) return;
    expect(p.msg.answer.map((r) => r.rdata)).toEqual([
      '0 100 80 a.x.example.',
      '"hi \\"there\\""',
      'fd00::1',
      '\\# 4 0163016f',
    ]);
    expect(p.msg.authority[0]!.rdata).toBe('ns.dns.example. hostmaster.example. 1 2 3 4 5');
  });
});
