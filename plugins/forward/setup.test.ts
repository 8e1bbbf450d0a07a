import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/corefile/types.js';
import { parseDuration } from '../../src/util/duration.js';
import { setupWarnings, parseForward, parseResolvConf, type ToSpec } from './setup.js';
import { configError, dispenserFor } from '../../test/helpers/setup.js';

const dir = mkdtempSync(join(tmpdir(), 'forward-setup-'));
const resolv = join(dir, 'resolv.conf');
writeFileSync(
  resolv,
  '# comment\nsearch default.svc.cluster.local\nnameserver 10.0.0.10\nnameserver fe80::1%eth0\noptions ndots:5\nnameserver 10.0.0.10\n',
);
const empty = join(dir, 'empty.conf');
writeFileSync(empty, 'search x\n');

function addrs(to: ToSpec[]): string[] {
  return to.map((t) =>
    t.kind === 'addr'
      ? `${t.scheme}://${t.host}:${t.port}${t.serverName ? `%${t.serverName}` : ''}`
      : `${t.scheme}://${t.name}:${t.port}`,
  );
}

function parse(text: string) {
  return parseForward(dispenserFor(text, 'forward'));
}

function parseErr(text: string): ConfigError {
  return configError(() => parse(text), text);
}

describe('forward setup: accepted', () => {
  const cases: [string, string, string[]][] = [
    ['forward . 1.2.3.4', '.', ['dns://1.2.3.4:53']],
    ['forward example.org 1.2.3.4:5353 dns://5.6.7.8', 'example.org.', ['dns://1.2.3.4:5353', 'dns://5.6.7.8:53']],
    ['forward . [::1]:53 ::2', '.', ['dns://::1:53', 'dns://::2:53']],
    ['forward . tls://9.9.9.9', '.', ['tls://9.9.9.9:853']],
    ['forward . https://1.1.1.1 https://8.8.8.8:8443', '.', ['https://1.1.1.1:443', 'https://8.8.8.8:8443']],
    ['forward . tls://1.1.1.1%cloudflare-dns.com:8853', '.', ['tls://1.1.1.1:8853%cloudflare-dns.com']],
    ['forward . 1.2.3.4 1.2.3.4:53', '.', ['dns://1.2.3.4:53']],
    [`forward . ${resolv}`, '.', ['dns://10.0.0.10:53', 'dns://fe80::1:53']],
    [`forward . ${empty} 1.1.1.1`, '.', ['dns://1.1.1.1:53']],
    ['forward 10.0.0.0/8 1.2.3.4', '10.in-addr.arpa.', ['dns://1.2.3.4:53']],
    ['forward . dns.example.net', '.', ['dns://dns.example.net.:53']],
    ['forward EXAMPLE.org. 1.2.3.4', 'example.org.', ['dns://1.2.3.4:53']],
  ];
  for (const [text, from, to] of cases) {
    it(text, () => {
      const [cfg] = parse(text);
      expect(cfg!.from).toBe(from);
      expect(addrs(cfg!.to)).toEqual(to);
    });
  }

  it('defaults', () => {
    const [cfg] = parse('forward . 1.2.3.4');
    expect(cfg).toMatchObject({
      forceTcp: false,
      preferUdp: false,
      expireMs: 10_000,
      maxFails: 2,
      maxConnectAttempts: null,
      policy: 'random',
      maxConcurrent: 0,
      readTimeoutMs: 2000,
      healthCheck: { intervalMs: 500, recursionDesired: true, domain: '.' },
    });
  });

  it('every option of the block', () => {
    const [cfg] = parse(`forward . 1.2.3.4 5.6.7.8 {
      except example.com  Internal.Example.org
      force_tcp
      prefer_udp
      expire 20s
      max_age 1m
      max_idle_conns 4
      read_timeout 1500ms
      max_fails 3
      max_connect_attempts 5
      health_check 1s no_rec domain example.net
      policy round_robin
      max_concurrent 1000
      tls_servername dns.example
      next NXDOMAIN servfail
      next_on_nodata
      failover REFUSED
      failfast_all_unhealthy_upstreams
      source_address 127.0.0.1
      resolver 8.8.8.8 [2001:db8::1]:5353
    }`);
    expect(cfg).toMatchObject({
      except: ['example.com.', 'internal.example.org.'],
      forceTcp: true,
      preferUdp: true,
      expireMs: 20_000,
      maxAgeMs: 60_000,
      maxIdleConns: 4,
      readTimeoutMs: 1500,
      maxFails: 3,
      maxConnectAttempts: 5,
      healthCheck: { intervalMs: 1000, recursionDesired: false, domain: 'example.net.' },
      policy: 'round_robin',
      maxConcurrent: 1000,
      tlsServerName: 'dns.example',
      next: [3, 2],
      nextOnNodata: true,
      failover: [5],
      failfastAllUnhealthy: true,
      sourceAddress: '127.0.0.1',
      resolvers: ['8.8.8.8', '[2001:db8::1]:5353'],
    });
  });

  it('several forward lines give several configs in file order', () => {
    const cfgs = parse('forward example.org 1.1.1.1\nforward . 2.2.2.2 {\n policy sequential\n}');
    expect(cfgs.map((c) => c.from)).toEqual(['example.org.', '.']);
    expect(cfgs[1]!.policy).toBe('sequential');
  });

  it('warns about loopback resolvers from resolv.conf and about forwarding to itself', () => {
    const stub = join(dir, 'stub-resolv.conf');
    writeFileSync(stub, 'nameserver 127.0.0.53\noptions edns0\n');
    const [cfg] = parse(`forward . ${stub} 127.0.0.1:1053 127.0.0.1:5300 10.0.0.1`);
    const w = setupWarnings(cfg!, 1053);
    expect(w).toHaveLength(2);
    expect(w[0]).toMatch(new RegExp(`^${stub} lists nameserver 127\\.0\\.0\\.53, a loopback address: .*--resolv-conf`));
    expect(w[1]).toBe("upstream 127.0.0.1:1053 is this server's own listener: queries forwarded there will loop");
  });

  it('a FROM CIDR expanding to several zones uses the first, with a warning', () => {
    const [cfg] = parse('forward 10.0.0.0/15 1.2.3.4');
    expect(cfg!.from).toBe('0.10.in-addr.arpa.');
    expect(setupWarnings(cfg!, 53)).toEqual([
      '10.0.0.0/15 expands to several reverse zones; only 0.10.in-addr.arpa. is forwarded',
    ]);
  });

  it('warns when resolv.conf files give no upstream at all', () => {
    const [cfg] = parse(`forward . ${empty}`);
    expect(cfg!.to).toEqual([]);
    expect(setupWarnings(cfg!, 53)).toEqual([
      'no upstream for .: the resolv.conf files given list no nameserver, queries will fail with SERVFAIL',
    ]);
  });

  it('parses resolv.conf text', () => {
    expect(parseResolvConf('nameserver 1.1.1.1 # x\nnameserver bogus\n  nameserver   ::1\n')).toEqual([
      '1.1.1.1',
      '::1',
    ]);
  });

  it('parses Go durations', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    expect(parseDuration('2h45m')).toBe(9_900_000);
    expect(parseDuration('0')).toBe(0);
    expect(parseDuration('10')).toBeUndefined();
    expect(parseDuration('1x')).toBeUndefined();
  });
});

describe('forward setup: rejected', () => {
  const cases: [string, string, number][] = [
    ['forward', "Wrong argument count or unexpected line ending after 'forward'", 1],
    ['forward .', "Wrong argument count or unexpected line ending after '.'", 1],
    ['forward . /no/such/file', 'not an IP address or file: "/no/such/file"', 1],
    [
      'forward . https://1.1.1.1/dns-query',
      'DNS over HTTPS upstreams use the fixed path /dns-query, remove the path from "https://1.1.1.1/dns-query"',
      1,
    ],
    [
      'forward . grpc://1.1.1.1',
      'unsupported scheme \'grpc\' in "grpc://1.1.1.1": only dns://, tls:// and https:// are accepted',
      1,
    ],
    // Texts of CoreDNS 1.15.0 (checked against the binary).
    ['forward . https://1.1.1.1 {\n doh_method PUT\n}', 'doh_method must be either POST or GET', 2],
    ['forward . https://1.1.1.1 {\n doh_method get\n}', 'doh_method must be either POST or GET', 2],
    [
      `forward . ${Array.from({ length: 16 }, (_, i) => `10.0.0.${i + 1}`).join(' ')}`,
      'more than 15 TOs configured: 16',
      1,
    ],
    ['forward . 1.2.3.4 {\n policy fastest\n}', "unknown policy 'fastest'", 2],
    ['forward . 1.2.3.4 {\n max_fails -1\n}', 'strconv.ParseUint: parsing "-1": invalid syntax', 2],
    ['forward . 1.2.3.4 {\n max_fails x\n}', 'strconv.ParseUint: parsing "x": invalid syntax', 2],
    ['forward . 1.2.3.4 {\n max_idle_conns -1\n}', "max_idle_conns can't be negative: -1", 2],
    ['forward . 1.2.3.4 {\n health_check -1s\n}', "health_check can't be negative: -1000000000", 2],
    ['forward . 1.2.3.4 {\n source_address x\n}', 'invalid IP address: x', 2],
    ['forward . 1.2.3.4 {\n resolver x\n}', 'resolver must be an IP address or IP:port: "x"', 2],
    ['forward . 1.2.3.4 {\n next 2\n}', '2 is not a valid rcode', 2],
    ['forward . 1.2.3.4 {\n max_concurrent -5\n}', "max_concurrent can't be negative: -5", 2],
    ['forward . 1.2.3.4 {\n expire 10\n}', 'time: missing unit in duration "10"', 2],
    ['forward . 1.2.3.4 {\n expire -1s\n}', "expire can't be negative: -1s", 2],
    ['forward . 1.2.3.4 {\n\n health_check 1s bogus\n}', 'health_check: unknown option bogus', 3],
    ['forward . 1.2.3.4 {\n health_check\n}', "Wrong argument count or unexpected line ending after 'health_check'", 2],
    ['forward . 1.2.3.4 {\n force_tcp yes\n}', "Wrong argument count or unexpected line ending after 'yes'", 2],
    ['forward . 1.2.3.4 {\n next FOO\n}', 'FOO is not a valid rcode', 2],
    ['forward . 1.2.3.4 {\n failover NOERROR\n}', 'NoError cannot be used in failover', 2],
    ['forward . 1.2.3.4 {\n except\n}', "Wrong argument count or unexpected line ending after 'except'", 2],
    ['forward . 1.2.3.4 {\n bogus\n}', "unknown property 'bogus'", 2],
    ['forward . 1.2.3.4 {\n tls a b c d\n}', "Wrong argument count or unexpected line ending after 'd'", 2],
    ['forward . 1.2.3.4 {\n expire 10s\n max_age 5s\n}', 'max_age (5s) must not be less than expire (10s)', 4],
    [
      'forward . tls://1.1.1.1%a.example {\n tls_servername b.example\n}',
      'tls_servername cannot be combined with a per-upstream server name (tls://IP%NAME)',
      3,
    ],
    ['forward . 1.2.3.4 {\n read_timeout 0s\n}', 'read_timeout must be positive: 0s', 2],
  ];
  for (const [text, message, line] of cases) {
    it(`${text.replace(/\n/g, ' ')} → ${message}`, () => {
      const e = parseErr(text);
      expect(e.message).toBe(message);
      expect(e.line).toBe(line);
    });
  }
});
