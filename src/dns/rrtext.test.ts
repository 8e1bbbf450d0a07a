import { describe, expect, it } from 'vitest';
import { parseRR, parseTTL, RRTextError } from './rrtext.js';

describe('parseRR (miekg/dns NewRR text)', () => {
  it('reads the record types templates produce', () => {
    expect(parseRR('ip-1-2-3-4.example. 60 IN A 1.2.3.4')).toEqual({
      name: 'ip-1-2-3-4.example',
      ttl: 60,
      class: 'IN',
      type: 'A',
      data: '1.2.3.4',
    });
    expect(parseRR('a.example. 60 IN AAAA 2001:db8::1')).toMatchObject({ type: 'AAAA', data: '2001:db8::1' });
    expect(parseRR('foogle.com 60 IN CNAME google.com')).toEqual({
      name: 'foogle.com',
      ttl: 60,
      class: 'IN',
      type: 'CNAME',
      data: 'google.com',
    });
    expect(parseRR('4.3.2.1.in-addr.arpa. 60 IN PTR ip-1-2-3-4.example.')).toMatchObject({
      type: 'PTR',
      data: 'ip-1-2-3-4.example',
    });
    expect(parseRR('example. 60 IN NS ns0.example.')).toMatchObject({ type: 'NS', data: 'ns0.example' });
    expect(parseRR('x. 60 IN DNAME y.')).toMatchObject({ type: 'DNAME', data: 'y' });
    expect(parseRR('x. 60 IN MX 10 mx.x.')).toMatchObject({ type: 'MX', data: { preference: 10, exchange: 'mx.x' } });
    expect(parseRR('_http._tcp.x. 60 IN SRV 0 5 80 web.x.')).toMatchObject({
      type: 'SRV',
      data: { priority: 0, weight: 5, port: 80, target: 'web.x' },
    });
    expect(parseRR('invalid. 60 IN SOA ns.invalid. hostmaster.invalid. (1 60 60 60 60)')).toMatchObject({
      type: 'SOA',
      data: {
        mname: 'ns.invalid',
        rname: 'hostmaster.invalid',
        serial: 1,
        refresh: 60,
        retry: 60,
        expire: 60,
        minimum: 60,
      },
    });
    expect(parseRR('x. 60 IN SOA ns hm (\n 2024010101 ; serial\n 1h 15m 1w 1d )')).toMatchObject({
      data: { mname: 'ns', serial: 2024010101, refresh: 3600, retry: 900, expire: 604800, minimum: 86400 },
    });
    expect(parseRR('x. IN CAA 0 issue "ca.example"')).toMatchObject({
      type: 'CAA',
      data: { flags: 0, tag: 'issue', value: 'ca.example' },
    });
  });

  it('TXT: quoted and bare strings, escapes, 255-octet pieces', () => {
    const rr = parseRR('a. 60 TXT "hello world" bare "q\\"x" "\\065"') as { data: Buffer[] };
    expect(rr.data.map((b) => b.toString())).toEqual(['hello world', 'bare', 'q"x', 'A']);
    const long = parseRR(`a. TXT "${'x'.repeat(300)}"`) as { data: Buffer[] };
    expect(long.data.map((b) => b.length)).toEqual([255, 45]);
  });

  it('defaults and orders as NewRR: root origin, TTL 3600, class IN, TTL/class in either order', () => {
    expect(parseRR('a.example IN A 1.2.3.4')).toMatchObject({ name: 'a.example', ttl: 3600, class: 'IN' });
    expect(parseRR('x. IN 60 AAAA ::1')).toMatchObject({ ttl: 60, class: 'IN' });
    expect(parseRR('x. CH TXT "t"')).toMatchObject({ class: 'CH', ttl: 3600 });
    expect(parseRR('@ 60 A 1.2.3.4')).toMatchObject({ name: '.' });
    expect(parseRR('x. 1h30m A 1.2.3.4')).toMatchObject({ ttl: 5400 });
    expect(parseRR('x. 60 a 1.2.3.4 ; comment\nnext. A 2.2.2.2')).toMatchObject({ type: 'A', data: '1.2.3.4' });
  });

  const bad: [string, RegExp][] = [
    ['', /no record/],
    ['x. 60 IN A 1.2.3', /bad A/],
    ['x. 60 IN A ::1', /bad A/],
    ['x. 60 IN AAAA 1.2.3.4', /bad AAAA/],
    ['x. 60 IN MX mx.x.', /bad MX/],
    ['x. 60 IN MX 70000 mx.', /bad MX/],
    ['x. 60 IN SOA a. b. 1 2 3', /SOA/],
    ['x. 60 IN HINFO a b', /record type HINFO is not supported/],
    ['invalid. 60 ANY SOA ns. hm. 1 2 3 4 5', /record type ANY is not supported/],
    ['x. 60 IN TYPE99 \\# 0', /RFC 3597/],
    [' x. A 1.2.3.4', /owner/],
    ['x. 60 IN FOO bar', /expecting RR type/],
    ['x..y. A 1.2.3.4', /bad owner/],
    ['x. TXT "unterminated', /quotes/],
    ['x. SOA a. b. (1 2 3 4 5', /parenthesis/],
    ['x. A 1.2.3.4 extra', /garbage/],
  ];
  for (const [text, re] of bad) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      expect(() => parseRR(text)).toThrow(RRTextError);
      expect(() => parseRR(text)).toThrow(re);
    });
  }

  it('parseTTL is miekg stringToTTL', () => {
    expect(parseTTL('60')).toBe(60);
    expect(parseTTL('1w2d3h4m5s')).toBe(604800 + 2 * 86400 + 3 * 3600 + 4 * 60 + 5);
    expect(parseTTL('4294967296')).toBeUndefined();
    expect(parseTTL('1x')).toBeUndefined();
  });
});
