/**
 * The etcd directive's options and setup errors (setup.go etcdParse), and the pure SkyDNS rules
 * of service.ts (msg package: paths, groups, targetstrip, TXT splitting, value decoding) checked
 * against the cases of CoreDNS's own tests.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configError, dispenserFor } from '../../test/helpers/setup.js';
import {
  decodeService,
  groupServices,
  keyDomain,
  namePath,
  namePathWithWildcard,
  split255,
  targetStrip,
  type Service,
} from './service.js';
import { parseEtcd } from './setup.js';

const parse = (text: string): ReturnType<typeof parseEtcd> => parseEtcd(dispenserFor(text, 'etcd'), ['skydns.local.']);
const err = (text: string): string => {
  const e = configError(() => parse(text), text);
  return `${e.line}: ${e.message}`;
};

describe('etcd setup', () => {
  it('defaults to the block zones, /skydns and localhost:2379', () => {
    expect(parse('etcd')).toMatchObject({
      zones: ['skydns.local.'],
      pathPrefix: 'skydns',
      endpoints: ['http://localhost:2379'],
      credentials: null,
      tls: null,
      fallthrough: null,
      noApexFallback: false,
      minLeaseTtl: 30,
      maxLeaseTtl: 86400,
    });
  });

  it('reads every documented option', () => {
    const cfg = parse(`etcd skydns.local 10.0.0.0/24 {
  path /other
  endpoint http://localhost:2379 http://localhost:4001
  credentials user pw
  fallthrough in-addr.arpa
  no_apex_fallback
  min-lease-ttl 1m
  max-lease-ttl 2h30m
  stubzones
  debug
  upstream 8.8.8.8
}`);
    expect(cfg).toMatchObject({
      zones: ['skydns.local.', '0.0.10.in-addr.arpa.'],
      pathPrefix: '/other',
      endpoints: ['http://localhost:2379', 'http://localhost:4001'],
      credentials: { username: 'user', password: 'pw' },
      fallthrough: ['in-addr.arpa.'],
      noApexFallback: true,
      minLeaseTtl: 60,
      maxLeaseTtl: 9000,
    });
  });

  it('reads the TLS files in the three documented forms', () => {
    const dir = mkdtempSync(join(tmpdir(), 'etcd-tls-'));
    for (const f of ['c.pem', 'k.pem', 'ca.pem']) writeFileSync(join(dir, f), f);
    const p = (f: string): string => join(dir, f);
    expect(parse(`etcd {\n tls ${p('ca.pem')}\n}`).tls).toEqual({ cert: null, key: null, ca: Buffer.from('ca.pem') });
    expect(parse(`etcd {\n tls ${p('c.pem')} ${p('k.pem')}\n}`).tls).toEqual({
      cert: Buffer.from('c.pem'),
      key: Buffer.from('k.pem'),
      ca: null,
    });
    expect(parse(`etcd {\n tls ${p('c.pem')} ${p('k.pem')} ${p('ca.pem')}\n}`).tls?.ca).toEqual(Buffer.from('ca.pem'));
    expect(parse('etcd {\n tls\n}').tls).toEqual({ cert: null, key: null, ca: null });
  });

  it('words errors as CoreDNS, at the line of the option', () => {
    expect(err('etcd {\n  credentials user\n}')).toBe('2: credentials requires 2 arguments, username and password');
    expect(err('etcd {\n  bogus\n}')).toBe("2: unknown property 'bogus'");
    expect(err('etcd {\n  path /a /b\n}')).toBe("2: unknown property '/b'");
    expect(err('etcd {\n  tls a b c d\n}')).toBe('2: maximum of three arguments allowed for TLS config, found 4');
    expect(err('etcd {\n  tls /nonexistent/c /nonexistent/k\n}')).toBe(
      '2: could not load TLS cert: open /nonexistent/c: no such file or directory',
    );
    expect(err('etcd {\n\n  min-lease-ttl soon\n}')).toBe(
      "3: invalid min-lease-ttl value: invalid TTL format, use format like '30', '30s', '5m', '1h', or '2h30m'",
    );
    expect(err('etcd {\n  endpoint\n}')).toMatch(/^2: Wrong argument count or unexpected line ending after 'endpoint'/);
    expect(err('etcd {\n  no_apex_fallback yes\n}')).toMatch(/^2: Wrong argument count/);
  });

  it('reads only the first etcd of a block', () => {
    expect(parse('etcd {\n path /first\n}\netcd {\n path /second\n}').pathPrefix).toBe('/first');
  });
});

const svc = (key: string, group = ''): Service => ({ ...decodeService(key, '{"host":"h"}'), group });

describe('SkyDNS rules (msg package)', () => {
  it('maps names to keys and back', () => {
    expect(namePath('service.staging.skydns.local.', 'skydns')).toBe('/skydns/local/skydns/staging/service');
    expect(namePath('service.staging.skydns.local.', '/mydns/')).toBe('/mydns/local/skydns/staging/service');
    expect(namePathWithWildcard('a.*.skydns.local.', 'skydns')).toEqual({ path: '/skydns/local/skydns', star: true });
    expect(namePathWithWildcard('a.any.skydns.local.', 'skydns').star).toBe(true);
    expect(keyDomain('/skydns/local/cluster/staging/service/')).toBe('service.staging.cluster.local.');
    expect(keyDomain('/skydns/local/cluster/staging/service')).toBe('service.staging.cluster.local.');
  });

  it('groups as msg.Group (its test cases)', () => {
    const keys = (sx: readonly Service[]): string[] => sx.map((s) => s.key);
    expect(keys(groupServices([svc('b/sub/dom1/skydns/test', 'g1'), svc('a/dom1/skydns/test', 'g2')]))).toEqual([
      'a/dom1/skydns/test',
    ]);
    expect(groupServices([svc('region1/skydns/test', 'g1'), svc('region1/skydns/test', 'g2')])).toHaveLength(2);
    expect(
      groupServices([svc('a/dom/region1/skydns/test', 'g1'), svc('a/subdom/dom/region1/skydns/test', 'g2')]),
    ).toHaveLength(1);
    expect(
      groupServices([
        svc('a/dom/region1/skydns/test', 'g1'),
        svc('a/subdom/dom/region1/skydns/test', 'g2'),
        svc('b/subdom/dom/region1/skydns/test'),
      ]),
    ).toHaveLength(2);
    expect(
      groupServices([
        svc('a/dom/region1/skydns/test', 'g1'),
        svc('b/dom/region1/skydns/test'),
        svc('a/subdom/dom/region1/skydns/test', 'g2'),
      ]),
    ).toHaveLength(2);
    expect(
      groupServices([
        svc('a/dom/region1/skydns/test', 'g5'),
        svc('b/dom/region1/skydns/test'),
        svc('a/subdom/dom/region1/skydns/test', 'g5'),
      ]),
    ).toHaveLength(3);
  });

  it('splits TXT at 255 bytes and strips target labels as the Go code', () => {
    expect(split255('abc').map(String)).toEqual(['abc']);
    expect(split255('a'.repeat(255)).map((b) => b.length)).toEqual([255, 0]);
    expect(split255(`${'a'.repeat(255)}b`).map(String)).toEqual(['a'.repeat(255), 'b']);
    expect(targetStrip('b.z1.test.', 1)).toBe('z1.test.');
    expect(targetStrip('b.z1.test.', 2 ** 31)).toBe('b.z1.test.');
  });

  it('decodes values as encoding/json does', () => {
    expect(decodeService('/k', '{"Host":"10.0.0.1","TTL":5,"extra":1}')).toMatchObject({ host: '10.0.0.1', ttl: 5 });
    expect(() => decodeService('/k', '{"host":5}')).toThrow(
      '/k: json: cannot unmarshal number into Go struct field Service.host of type string',
    );
    expect(() => decodeService('/k', '{"ttl":-1}')).toThrow(/Service.ttl of type uint32/);
    expect(() => decodeService('/k', 'not json')).toThrow(/^\/k: /);
  });
});
