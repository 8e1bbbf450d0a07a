/** The master-file parser: grammar, directives, record types, escapes and miekg/dns's error wording. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ZoneFileError } from './error.js';
import { canonicalName } from './names.js';
import { parseZoneRecords, parseZoneText } from './parser.js';
import type { ZoneRecord } from './record.js';

const ORIGIN = 'example.org.';

function parse(text: string, include?: (p: string) => string): ZoneRecord[] {
  return parseZoneText(text, { origin: ORIGIN, file: 'db.test', ...(include ? { include } : {}) });
}

function errorOf(text: string, include?: (p: string) => string): string {
  try {
    parse(text, include);
  } catch (e) {
    if (e instanceof ZoneFileError) return e.message;
    throw e;
  }
  throw new Error('no error');
}

/** owner ttl class type hex-rdata */
function show(r: ZoneRecord): string {
  return `${r.name} ${r.ttl} ${r.class} ${r.type} ${r.rdata.toString('hex')}`;
}

const SOA = '@ 3600 IN SOA ns1 hostmaster 1 7200 3600 1209600 300\n';

describe('zone file grammar', () => {
  it('reads $ORIGIN, $TTL, @, relative and absolute names, and parentheses with comments', () => {
    const rrs = parse(`$ORIGIN example.org.
$TTL 1h
@ IN SOA ns1 hostmaster.example.org. ( ; the SOA
   2024 ; serial
   2h 15m 1w
   300 )
www A 192.0.2.1
$ORIGIN sub.example.org.
host A 192.0.2.2
abs.example.net. A 192.0.2.3
`);
    expect(rrs.map((r) => `${r.name} ${r.ttl} ${r.type}`)).toEqual([
      'example.org. 3600 6',
      'www.example.org. 3600 1',
      'host.sub.example.org. 3600 1',
      'abs.example.net. 3600 1',
    ]);
    expect(rrs[0]!.serial).toBe(2024);
    // ns1.example.org. hostmaster.example.org. 2024 7200 900 604800 300
    expect(rrs[0]!.rdata.subarray(-20).toString('hex')).toBe('000007e800001c200000038400093a800000012c');
  });

  it('keeps the previous owner, TTL and class when they are left out; TTL and class in either order', () => {
    const rrs = parse(`${SOA}www 60 IN A 192.0.2.1
    AAAA 2001:db8::1
 IN 120 TXT "x"
www2 IN 30 A 192.0.2.2
www3 A 192.0.2.3
`);
    expect(rrs.slice(1).map((r) => `${r.name} ${r.ttl} ${r.type}`)).toEqual([
      'www.example.org. 60 1',
      'www.example.org. 60 28',
      'www.example.org. 120 16',
      'www2.example.org. 30 1',
      'www3.example.org. 30 1',
    ]);
  });

  it('lets $TTL win over the last explicit TTL for records without one', () => {
    const rrs = parse(`$TTL 300\n${SOA}a 60 A 192.0.2.1\nb A 192.0.2.2\n`);
    expect(rrs.map((r) => r.ttl)).toEqual([3600, 60, 300]);
  });

  it('reads TTL units and CLASSnnn/TYPEnnn', () => {
    const rrs = parse(
      `${SOA}a 1w2d3h4m5s CLASS1 A 192.0.2.1\nb 10 IN TYPE1 \\# 4 C0000202\nc 10 IN TYPE65280 \\# 3 010203\n`,
    );
    expect(rrs.slice(1).map(show)).toEqual([
      `a.example.org. ${7 * 86400 + 2 * 86400 + 3 * 3600 + 4 * 60 + 5} 1 1 c0000201`,
      'b.example.org. 10 1 1 c0000202',
      'c.example.org. 10 1 65280 010203',
    ]);
  });

  it('reads TXT with several strings, quotes, escapes and long strings split at 255 octets', () => {
    const rrs = parse(
      `${SOA}t TXT "a b" "semi;colon" "q\\"uote" back\\\\slash "\\255\\001" ""\nl TXT ${'x'.repeat(300)}\n`,
    );
    const t = rrs[1]!.rdata;
    expect(t.toString('latin1')).toBe('\x03a b\x0asemi;colon\x06q"uote\x0aback\\slash\x02\xff\x01\x00');
    const l = rrs[2]!.rdata;
    expect([l[0], l[256]]).toEqual([255, 45]);
  });

  it('reads MX, SRV, CAA, PTR, CNAME, DNAME, NS and the DNSSEC types', () => {
    const rrs = parse(`${SOA}@ MX 10 mail
_sip._tcp SRV 10 60 5060 sip.example.org.
@ CAA 128 issue "ca.example.net; account=1"
p PTR host
c CNAME www
d DNAME example.net.
sub NS ns.sub
sub DS 60485 RSASHA1 1 2BB183AF5F22588179A53B0A98631FAD1A292118
@ DNSKEY 257 3 13 AQID
@ RRSIG A 13 2 3600 20300101000000 1700000000 12345 example.org. AQID
@ NSEC www.example.org. A NS SOA RRSIG NSEC DNSKEY TYPE65280
`);
    const by = (t: number): ZoneRecord => rrs.find((r) => r.type === t)!;
    expect(by(15).rdata.toString('hex')).toBe('000a046d61696c076578616d706c65036f726700');
    expect(by(15).target).toBe('mail.example.org.');
    expect(by(33).target).toBe('sip.example.org.');
    expect(by(33).rdata.subarray(0, 6).toString('hex')).toBe('000a003c13c4');
    expect(by(257).rdata.toString('latin1')).toBe('\x80\x05issueca.example.net; account=1');
    expect(by(12).target).toBe('host.example.org.');
    expect(by(5).target).toBe('www.example.org.');
    expect(by(39).target).toBe('example.net.');
    expect(by(2).target).toBe('ns.sub.example.org.');
    expect(by(43).rdata.toString('hex')).toBe('ec4505012bb183af5f22588179a53b0a98631fad1a292118');
    expect(by(48).rdata.toString('hex')).toBe('0101030d010203');
    expect(by(46).covered).toBe(1);
    // 2030-01-01T00:00:00Z = 1893456000
    expect(by(46).rdata.subarray(0, 18).toString('hex')).toBe(
      `00010d0200000e10${(1893456000).toString(16)}${(1700000000).toString(16)}3039`,
    );
    // www.example.org. + window 0 (7 octets): A NS SOA RRSIG NSEC DNSKEY; window 255: TYPE65280
    expect(by(47).rdata.toString('hex')).toBe('03777777076578616d706c65036f726700000762000000000380ff0180');
  });

  it('reads SVCB and HTTPS parameters (RFC 9460) into wire form, sorted by key', () => {
    const rrs = parse(
      `${SOA}s HTTPS 1 Web port=8443 alpn=h2,h3 ipv4hint=192.0.2.1 no-default-alpn mandatory=port,alpn key65000="a\\032b"\n`,
    );
    const r = rrs[1]!;
    expect(r.type).toBe(65);
    expect(r.target).toBe('Web.example.org.');
    // priority, target, then mandatory(0)=alpn,port alpn(1)=h2,h3 no-default-alpn(2) port(3)=8443 ipv4hint(4) key65000="a b"
    expect(r.rdata.toString('hex')).toBe(
      '0001' +
        '03576562076578616d706c65036f726700' +
        '000000040001' +
        '0003' +
        '0001000602683202683' +
        '3' +
        '00020000' +
        '000300022' +
        '0fb' +
        '00040004c0000201' +
        'fde800036120' +
        '62',
    );
    expect(errorOf(`${SOA}s HTTPS 1 . port=x\n`)).toBe('db.test: dns: : "port=x" at line: 2:18');
  });

  it('canonicalises escaped owner names as they read from the wire', () => {
    const rrs = parse(`${SOA}has\\046dot A 192.0.2.1\nsp\\032ace A 192.0.2.2\n`);
    expect(rrs.slice(1).map((r) => r.name)).toEqual(['has\\.dot.example.org.', 'sp\\032ace.example.org.']);
    expect(canonicalName('A\\066C.')).toBe('ABC.');
  });

  it('reads a record without RDATA as miekg/dns does (an empty RDATA)', () => {
    const rrs = parse(`${SOA}www A\n`);
    expect(rrs[1]!.rdata.length).toBe(0);
  });

  it('follows $INCLUDE relative to the including file, with an optional origin and its own $TTL', () => {
    const dir = mkdtempSync(join(tmpdir(), 'zonefile-'));
    writeFileSync(join(dir, 'inc1'), '$TTL 5\nhost A 10.0.0.1\n');
    writeFileSync(join(dir, 'inc2'), '@ A 10.0.0.2\nnode A 10.0.0.3\n');
    const rrs = parseZoneText(`$TTL 100\n${SOA}$INCLUDE inc1\n$INCLUDE inc2 lab.example.org.\nafter A 10.0.0.4\n`, {
      origin: ORIGIN,
      file: join(dir, 'db'),
      include: (p) => readFileSync(p, 'latin1'),
    });
    expect(rrs.slice(1).map((r) => `${r.name} ${r.ttl}`)).toEqual([
      'host.example.org. 5',
      'lab.example.org. 100',
      'node.lab.example.org. 100',
      'after.example.org. 100',
    ]);
    expect(rrs[1]!.file).toBe(join(dir, 'inc1'));
  });

  it('expands $GENERATE with offsets, widths and bases', () => {
    const rrs = parse(`${SOA}$GENERATE 1-3 host-\${10,3} A 10.0.0.$\n$GENERATE 10-14/2 \${0,2,x}.rev PTR h$$\n`);
    expect(rrs.slice(1).map((r) => `${r.name} ${r.type} ${r.target ?? r.rdata.join('.')}`)).toEqual([
      'host-011.example.org. 1 10.0.0.1',
      'host-012.example.org. 1 10.0.0.2',
      'host-013.example.org. 1 10.0.0.3',
      '0a.rev.example.org. 12 h\\$.example.org.',
      '0c.rev.example.org. 12 h\\$.example.org.',
      '0e.rev.example.org. 12 h\\$.example.org.',
    ]);
  });
});

describe('zone file errors (miekg/dns wording: file, reason, token, line:column)', () => {
  it.each([
    [`${SOA}www IN A 1.2.3\n`, 'db.test: dns: bad A A: "1.2.3" at line: 2:14'],
    [`${SOA}www IN AAAA 1.2.3.4\n`, 'db.test: dns: bad AAAA AAAA: "1.2.3.4" at line: 2:19'],
    [`${SOA}www MX x mail\n`, 'db.test: dns: bad MX Pref: "x" at line: 2:9'],
    [`${SOA}www TXT "open\n`, 'db.test: dns: bad TXT Txt: " " at line: 2:8'],
    [`${SOA}www A 1.2.3.4 extra\n`, 'db.test: dns: garbage after rdata: "extra" at line: 2:19'],
    ['@ 3600 IN SOA ns1 admin 1 2 3 4 5 )\n', 'db.test: dns: garbage after rdata: "extra closing brace" at line: 1:35'],
    ['@ 3600 IN SOA ns1 admin ( 1 2 3 4 5\n', 'db.test: dns: garbage after rdata: "unbalanced brace" at line: 1:35'],
    [`${SOA}www IN BOGUS 1.2.3.4\n`, 'db.test: dns: not a TTL: "BOGUS" at line: 2:13'],
    ['www A 192.0.2.1\n', 'db.test: dns: missing TTL with no previous value: "A" at line: 1:6'],
    [`${SOA}bad..name A 1.2.3.4\n`, 'db.test: dns: bad owner name: "bad..name" at line: 2:10'],
    [`${SOA}www TYPE999 \\# 3 0102\n`, 'db.test: dns: bad RFC3597 Rdata: "3" at line: 2:17'],
    [`${SOA}www CAA 0 issue "a" "b"\n`, 'db.test: dns: bad CAA Value: "issue" at line: 2:16'],
    ['$TTL x\n', 'db.test: dns: expecting $TTL value, not this...: "x" at line: 1:6'],
    [`${SOA}$INCLUDE other\n`, 'db.test: dns: $INCLUDE directive not allowed: "other" at line: 2:14'],
    [`${SOA}$GENERATE 5-3 h$ A 10.0.0.$\n`, 'db.test: dns: bad range in $GENERATE range: "5-3" at line: 2:14'],
    [`${SOA}www A\nx`, 'db.test: dns: unexpected newline: "\\n" at line: 2:5'],
  ])('%j', (text, message) => {
    expect(errorOf(text)).toBe(message);
  });

  it('names the included file, and refuses to nest $INCLUDE deeper than 7', () => {
    const inc = (p: string): string => (p.endsWith('bad') ? 'x A 1.2.3\n' : '$INCLUDE loop\n');
    expect(errorOf(`${SOA}$INCLUDE bad\n`, inc)).toBe('bad: dns: bad A A: "1.2.3" at line: 1:9');
    expect(errorOf(`${SOA}$INCLUDE loop\n`, inc)).toBe('loop: dns: too deeply nested $INCLUDE: "loop" at line: 1:13');
    const missing = (p: string): string => {
      throw Object.assign(new Error(`ENOENT: ${p}`), { code: 'ENOENT' });
    };
    expect(errorOf(`${SOA}$INCLUDE nosuch\n`, missing)).toBe(
      'db.test: dns: failed to open `nosuch\': open nosuch: no such file or directory: "nosuch" at line: 2:15',
    );
  });

  it('hands out the records before the first error with it', () => {
    const { records, error } = parseZoneRecords(`${SOA}a A 192.0.2.1\nb A x\nc A 192.0.2.3\n`, {
      origin: ORIGIN,
      file: 'db',
    });
    expect(records.map((r) => r.name)).toEqual(['example.org.', 'a.example.org.']);
    expect(error?.line).toBe(3);
    expect(error?.reason).toBe('bad A A');
  });
});
