/**
 * siit: A answers synthesized from a zone's AAAA records (file plugin below siit), the cases where
 * the A reply stays, the translated-requests counter, RFC 6052 extraction for every prefix length,
 * and CoreDNS's setup errors.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractIPv4, siit, toIPv4 } from './index.js';
import * as metrics from './metrics.js';
import { parseSiit } from './setup.js';
import { ipv6ToBytes } from '../../src/dns/name.js';
import { runCorefile, type CorefileRun } from '../../test/helpers/corefile.js';
import { rrLines } from '../../test/helpers/records.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';

const ZONE = fileURLToPath(new URL('./testdata/db.example.org', import.meta.url));

function setupErr(text: string): string {
  return configError(() => siit.setup(dispenserFor(text, 'siit'), setupContext()), text).describe();
}

async function translatedCount(): Promise<number> {
  return (await metrics.translated.get()).values.find((v) => v.labels.server === 'dns://:53')?.value ?? 0;
}

describe('siit: answers', () => {
  let run: CorefileRun;
  beforeAll(async () => {
    run = await runCorefile(
      `example.org {\n  siit {\n    eam 192.0.2.10 2001:db8::10\n  }\n  file ${ZONE}\n}\nexample.net {\n  siit\n  file ${ZONE} example.net\n}\n`,
    );
  });
  afterAll(() => run.stop());

  it('maps a prefix address; TTL the smaller of the AAAA TTL and the SOA TTL of the A reply', async () => {
    const before = await translatedCount();
    const m = await run.ask('v6.example.org.', 'A');
    expect(rrLines(m.answers)).toEqual(['v6.example.org. 3600 IN A 192.0.2.33']);
    expect(m.flags! & 0x0400).toBe(0x0400);
    expect(rrLines(m.authorities)).toEqual(['example.org. 3600 IN NS ns.example.org.']);
    expect(await translatedCount()).toBe(before + 1);
  });

  it('maps by eam first; drops the addresses it cannot map', async () => {
    expect(rrLines((await run.ask('eam.example.org.', 'A')).answers)).toEqual(['eam.example.org. 600 IN A 192.0.2.10']);
    expect(rrLines((await run.ask('mixed.example.org.', 'A')).answers)).toEqual([
      'mixed.example.org. 3600 IN A 198.51.100.1',
    ]);
  });

  it('keeps a CNAME and maps the AAAA it leads to', async () => {
    // The A reply (CNAME, no A) carries no SOA, so the TTL is capped at 600.
    expect(rrLines((await run.ask('alias.example.org.', 'A')).answers)).toEqual([
      'alias.example.org. 3600 IN CNAME v6.example.org.',
      'v6.example.org. 600 IN A 192.0.2.33',
    ]);
  });

  it('leaves the A reply alone: A present, nothing mappable, NXDOMAIN, other types', async () => {
    const before = await translatedCount();
    expect(rrLines((await run.ask('hasa.example.org.', 'A')).answers)).toEqual([
      'hasa.example.org. 3600 IN A 192.0.2.1',
    ]);
    const nomap = await run.ask('nomap.example.org.', 'A');
    expect(nomap.answers).toEqual([]);
    expect(rrLines(nomap.authorities)).toEqual([
      'example.org. 3600 IN SOA ns.example.org. hostmaster.example.org. 1 7200 3600 1209600 300',
    ]);
    const nx = await run.ask('missing.example.org.', 'A');
    expect(nx.flags! & 0xf).toBe(3);
    expect(nx.answers).toEqual([]);
    expect(rrLines((await run.ask('v6.example.org.', 'AAAA')).answers)).toEqual([
      'v6.example.org. 7200 IN AAAA 64:ff9b::c000:221',
    ]);
    expect(await translatedCount()).toBe(before);
  });

  it('without eam only the prefix maps', async () => {
    expect((await run.ask('eam.example.net.', 'A')).answers).toEqual([]);
    expect(rrLines((await run.ask('v6.example.net.', 'A')).answers)).toEqual(['v6.example.net. 3600 IN A 192.0.2.33']);
  });
});

describe('siit: RFC 6052 §2.4 addresses back to IPv4', () => {
  it.each([
    ['2001:db8::/32', '2001:db8:c000:221::'],
    ['2001:db8:100::/40', '2001:db8:1c0:2:21::'],
    ['2001:db8:122::/48', '2001:db8:122:c000:2:2100::'],
    ['2001:db8:122:300::/56', '2001:db8:122:3c0:0:221::'],
    ['2001:db8:122:344::/64', '2001:db8:122:344:c0:2:2100:0'],
    ['2001:db8:122:344::/96', '2001:db8:122:344::c000:221'],
  ])('%s', (prefix, address) => {
    const cfg = parseSiit(dispenserFor(`siit {\n ipv6_prefix ${prefix}\n}`, 'siit'));
    expect(extractIPv4(ipv6ToBytes(address)!, cfg.length)).toBe('192.0.2.33');
    expect(toIPv4(cfg, address)).toBe('192.0.2.33');
  });

  it('refuses a non-zero byte 8 in the address, addresses outside the prefix and IPv4-mapped ones', () => {
    const cfg = parseSiit(dispenserFor('siit {\n ipv6_prefix 2001:db8::/32\n}', 'siit'));
    expect(toIPv4(cfg, '2001:db8:c000:221:100::')).toBeNull();
    expect(toIPv4(cfg, '2001:db9:c000:221::')).toBeNull();
    expect(toIPv4(parseSiit(dispenserFor('siit', 'siit')), '::ffff:192.0.2.1')).toBeNull();
  });
});

describe('siit: setup errors, as CoreDNS words them', () => {
  it.each([
    [
      'siit foo',
      "plugin/siit: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'foo'",
    ],
    ['siit {\n bogus\n}', "plugin/siit: Corefile:2 - Error during parsing: unknown property 'bogus'"],
    [
      'siit {\n ipv6_prefix\n}',
      "plugin/siit: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after 'ipv6_prefix'",
    ],
    ['siit {\n ipv6_prefix foo\n}', 'plugin/siit: invalid CIDR address: foo'],
    [
      'siit {\n ipv6_prefix 10.1.0.0/16\n}',
      'plugin/siit: Corefile:2 - Error during parsing: invalid netmask 32 IPv6 address: "10.1.0.0/16"',
    ],
    [
      'siit {\n ipv6_prefix 64:ff9b::/80\n}',
      'plugin/siit: Corefile:2 - Error during parsing: invalid prefix length "64:ff9b::/80": must be one of /32, /40, /48, /56, /64, /96',
    ],
    [
      'siit {\n ipv6_prefix 64:ff9b:0:0:100::/96\n}',
      'plugin/siit: Corefile:2 - Error during parsing: invalid prefix "64:ff9b:0:0:100::/96": reserved octet (byte 8) must be zero',
    ],
    [
      'siit {\n eam 192.0.2.1\n}',
      "plugin/siit: Corefile:2 - Error during parsing: Wrong argument count or unexpected line ending after '192.0.2.1'",
    ],
    ['siit {\n eam x 2001:db8::1\n}', 'plugin/siit: Corefile:2 - Error during parsing: invalid IP address: "<nil>"'],
    [
      'siit {\n eam 2001:db8::2 2001:db8::1\n}',
      'plugin/siit: Corefile:2 - Error during parsing: invalid IPv4 address: "2001:db8::2"',
    ],
    [
      'siit {\n eam 192.0.2.1 192.0.2.2\n}',
      'plugin/siit: Corefile:2 - Error during parsing: invalid IPv6 address: "192.0.2.2"',
    ],
  ])('%j', (text, message) => {
    expect(setupErr(text)).toBe(message);
  });
});
