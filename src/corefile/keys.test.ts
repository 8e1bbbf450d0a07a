import { describe, expect, it } from 'vitest';
import { parseServerKey } from './keys.js';
import { parseCorefile } from './parser.js';
import { ConfigError, type Token } from './types.js';

const tok = (text: string, line = 1): Token => ({ text, file: 'Corefile', line, endLine: line, quoted: false });

describe('parseServerKey (docs/corefile.md §6.1)', () => {
  const ok: { key: string; dnsPort?: number; zone: string; port: number; zones?: number }[] = [
    { key: '.', zone: '.', port: 53 },
    { key: '.:1053', zone: '.', port: 1053 },
    { key: 'dns://.:53', zone: '.', port: 53 },
    { key: 'dns://.', zone: '.', port: 53 },
    { key: 'DNS://.', zone: '.', port: 53 },
    { key: 'cluster.local', zone: 'cluster.local.', port: 53 },
    { key: 'cluster.local.', zone: 'cluster.local.', port: 53 },
    { key: 'cluster.local:5353', zone: 'cluster.local.', port: 5353 },
    { key: 'Example.ORG', zone: 'example.org.', port: 53 },
    { key: 'Example.ORG:1053', zone: 'example.org.', port: 1053 },
    // The -dns.port value is only the default (§9 #32: `. {` follows -dns.port).
    { key: '.', dnsPort: 1053, zone: '.', port: 1053 },
    { key: '.:53', dnsPort: 1053, zone: '.', port: 53 },
    { key: 'example.org:053', zone: 'example.org.', port: 53 },
    { key: 'a.org:0', zone: 'a.org.', port: 0 },
    // Text after the last colon that is not a number belongs to the zone.
    { key: 'a:b.org', zone: 'a:b.org.', port: 53 },
    // §9 #14: the zone of a stray `}` key.
    { key: '}', zone: '}.', port: 53 },
    { key: '10.0.0.0/8', zone: '10.in-addr.arpa.', port: 53 },
    { key: '192.168.1.0/24:1053', zone: '1.168.192.in-addr.arpa.', port: 1053 },
    { key: 'dns://10.0.0.0/15', zone: '0.10.in-addr.arpa.', port: 53, zones: 2 },
    { key: '10.0.0.0/17', zone: '0.0.10.in-addr.arpa.', port: 53, zones: 128 },
    { key: '10.0.0.0/27', zone: '0.0.0.10.in-addr.arpa.', port: 53, zones: 32 },
    { key: '10.9.3.0/18', zone: '0.9.10.in-addr.arpa.', port: 53, zones: 64 },
    { key: '2001:db8::/32', zone: '8.b.d.0.1.0.0.2.ip6.arpa.', port: 53 },
    { key: '2001:DB8::/30', zone: '8.b.d.0.1.0.0.2.ip6.arpa.', port: 53, zones: 4 },
    { key: '2001:db8::/32:1053', zone: '8.b.d.0.1.0.0.2.ip6.arpa.', port: 1053 },
    { key: 'fd00:10:96::/112', zone: '0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa.', port: 53 },
  ];
  it.each(ok)('$key → $zone port $port', ({ key, dnsPort, zone, port, zones }) => {
    const t = tok(key);
    const k = parseServerKey(t, dnsPort ?? 53);
    expect(k.scheme).toBe('dns');
    expect(k.zone).toBe(zone);
    expect(k.port).toBe(port);
    expect(k.zones).toHaveLength(zones ?? 1);
    expect(k.zones[0]).toBe(zone);
    expect(k.text).toBe(key);
    expect(k.token).toBe(t);
  });

  it('grpc:// keys default to port 443, as CoreDNS transport.GRPCPort (§6.1)', () => {
    expect(parseServerKey(tok('grpc://.'), 53)).toMatchObject({ scheme: 'grpc', zone: '.', port: 443 });
    expect(parseServerKey(tok('grpc://Example.org:8053'), 53)).toMatchObject({
      scheme: 'grpc',
      zone: 'example.org.',
      port: 8053,
    });
  });

  it.each([
    { key: 'tls://.', scheme: 'tls', port: 853 },
    { key: 'tls://example.org:5553', scheme: 'tls', port: 5553 },
    { key: 'https://.', scheme: 'https', port: 443 },
    { key: 'quic://.', scheme: 'quic', port: 853 },
    { key: 'https3://.:8443', scheme: 'https3', port: 8443 },
  ])('$key is served as $scheme on port $port (§6.1, not -dns.port)', ({ key, scheme, port }) => {
    const k = parseServerKey(tok(key), 1053);
    expect(k.scheme).toBe(scheme);
    expect(k.port).toBe(port);
  });

  it('CIDR keys expand to every covered reverse zone (§6.3)', () => {
    expect(parseServerKey(tok('10.0.0.0/15'), 53).zones).toEqual(['0.10.in-addr.arpa.', '1.10.in-addr.arpa.']);
    expect(parseServerKey(tok('2001:db8::/30'), 53).zones).toEqual([
      '8.b.d.0.1.0.0.2.ip6.arpa.',
      '9.b.d.0.1.0.0.2.ip6.arpa.',
      'a.b.d.0.1.0.0.2.ip6.arpa.',
      'b.b.d.0.1.0.0.2.ip6.arpa.',
    ]);
    const z = parseServerKey(tok('10.9.3.0/18'), 53).zones;
    expect([z[0], z[63]]).toEqual(['0.9.10.in-addr.arpa.', '63.9.10.in-addr.arpa.']);
  });

  const long = `${'a'.repeat(63)}.`.repeat(4) + 'abc'; // 259 characters
  const bad: { key: string; err: string }[] = [
    { key: 'TLS://.', err: 'unknown scheme TLS://' },
    { key: 'udp://.', err: 'unknown scheme udp://' },
    { key: '.:', err: 'expecting data after last colon: ".:"' },
    { key: 'dns://example.org:', err: 'expecting data after last colon: "example.org:"' },
    { key: '2001:db8::', err: 'expecting data after last colon: "2001:db8::"' },
    { key: long, err: `specified zone is too long: ${long.length} > 255` },
    { key: `${'a'.repeat(64)}.org`, err: 'zone is not a valid domain name: ' },
    { key: 'a..org', err: 'zone is not a valid domain name: a..org' },
    { key: '.example.org', err: 'zone is not a valid domain name: .example.org' },
    { key: 'dns://', err: 'zone is not a valid domain name: ' },
    { key: ':53', err: 'zone is not a valid domain name: ' },
    // §9 #27: deliberate divergence from CoreDNS.
    { key: 'example.org{', err: 'zone is not a valid domain name: example.org{' },
    { key: 'example.org{:53', err: 'zone is not a valid domain name: example.org{' },
    { key: 'example.org:99999', err: 'invalid port "99999"' },
    { key: 'example.org:-1', err: 'invalid port "-1"' },
    { key: '::1/128', err: 'invalid CIDR ::1/128' },
    { key: '0:0:0:0:0:0:0:1/128', err: 'invalid CIDR' },
    { key: '10.0.0.0/33', err: 'invalid CIDR 10.0.0.0/33' },
  ];
  it.each(bad)('$key is rejected', ({ key, err }) => {
    let caught: unknown;
    try {
      parseServerKey(tok(key, 7), 53);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const c = caught as ConfigError;
    expect(c.message).toContain(err);
    expect([c.file, c.line]).toEqual(['Corefile', 7]);
  });

  it('a 255-character zone is not "too long" (but may still be invalid on the wire)', () => {
    const z = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`; // 253 chars
    expect(parseServerKey(tok(z), 53).zone).toBe(`${z}.`);
  });
});

describe('keys from parsed Corefiles (§9 rows about keys)', () => {
  const keysOf = (text: string, dnsPort = 53): [string, number][] =>
    parseCorefile(text, 'Corefile', { isDirective: () => true, env: {} }).flatMap((b) =>
      b.keys.flatMap((k) => {
        const sk = parseServerKey(k, dnsPort);
        return sk.zones.map((z): [string, number] => [z, sk.port]);
      }),
    );

  it('#26 each key has its own port; the CIDR expands to 128 zones', () => {
    const got = keysOf('Example.ORG:1053 10.0.0.0/17 {\n}');
    expect(got).toHaveLength(129);
    expect(got[0]).toEqual(['example.org.', 1053]);
    expect(got[1]).toEqual(['0.0.10.in-addr.arpa.', 53]);
    expect(got[128]).toEqual(['127.0.10.in-addr.arpa.', 53]);
  });

  it('#27 a brace glued to the key is rejected as an invalid zone', () => {
    const [b] = parseCorefile('example.org{\n whoami\n}', 'Corefile', { isDirective: () => true, env: {} });
    expect(() => parseServerKey(b!.keys[0]!, 53)).toThrow('zone is not a valid domain name: example.org{');
  });

  it('#30 `.:` is rejected', () => {
    expect(() => keysOf('.:')).toThrow('expecting data after last colon');
  });

  it('#32 dns://.:53, .:53 and . are equivalent; `.` follows -dns.port', () => {
    expect(keysOf('dns://.:53 {\n}\n.:53 {\n}\n. {\n}')).toEqual([
      ['.', 53],
      ['.', 53],
      ['.', 53],
    ]);
    expect(keysOf('dns://.:53 {\n}\n.:53 {\n}\n. {\n}', 1053)).toEqual([
      ['.', 53],
      ['.', 53],
      ['.', 1053],
    ]);
  });

  it('#7 all three key forms give the same zones', () => {
    const want: [string, number][] = [
      ['a.org.', 53],
      ['b.org.', 53],
    ];
    expect(keysOf('a.org, b.org {\n}')).toEqual(want);
    expect(keysOf('a.org b.org {\n}')).toEqual(want);
    expect(keysOf('a.org,\nb.org {\n}')).toEqual(want);
  });
});
