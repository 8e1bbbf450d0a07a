/**
 * geoip: labels from CoreDNS's own test databases (testdata/), read back through the metadata
 * plugin by template (`.Meta`), view (`metadata()`) and log (`{/LABEL}`), for the client's address
 * and the EDNS Client Subnet address; CoreDNS's setup errors.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { asnLabels, cityLabels, formatFloatF, GeoDatabase } from './database.js';
import { ecsAddress, geoip } from './index.js';
import { runCorefile, type CorefileRun } from '../../test/helpers/corefile.js';
import { captureLogs } from '../../test/helpers/logs.js';
import { configError, dispenserFor, setupContext } from '../../test/helpers/setup.js';

const DATA = fileURLToPath(new URL('./testdata/', import.meta.url));
const CITY = `${DATA}GeoLite2-City.mmdb`;
const ASN = `${DATA}GeoLite2-ASN.mmdb`;
const KNOWN = '81.2.69.142';

/** An ECS option (RFC 7871) for an IPv4 address with source prefix `bits`, bytes cut to the prefix. */
function ecs(ip: string, bits = 32): { code: number; data: Buffer } {
  const octets = ip
    .split('.')
    .map(Number)
    .slice(0, Math.ceil(bits / 8));
  return { code: 8, data: Buffer.from([0, 1, bits, 0, ...octets]) };
}

function setupErr(text: string): string {
  return configError(() => geoip.setup(dispenserFor(text, 'geoip'), setupContext()), text).describe();
}

/** TXT answers of `labels` as template writes them. */
function txtCorefile(db: string, labels: readonly string[], extra = ''): string {
  const answers = labels.map((l) => `    answer "{{ .Name }} 60 IN TXT \\"${l}={{ .Meta \\"${l}\\" }}\\""`).join('\n');
  return `. {\n  metadata\n  geoip ${db}${extra}\n  template IN TXT . {\n${answers}\n  }\n}\n`;
}

const CITY_LABELS = cityLabels(null).map(([l]) => l);
const ASN_LABELS = asnLabels(null).map(([l]) => l);

let run: CorefileRun | null = null;
afterEach(async () => {
  await run?.stop();
  run = null;
});

async function texts(
  corefile: string,
  o: { remoteAddress?: string; options?: { code: number; data: Buffer }[] },
): Promise<string[]> {
  run ??= await runCorefile(corefile);
  const m = await run.ask('example.org.', 'TXT', { ...o, edns: o.options ? 1232 : undefined });
  return m.answers.map((a) => (a.type === 'TXT' ? (a.data as Buffer[]).map((b) => b.toString()).join('') : ''));
}

describe('geoip: metadata labels', () => {
  it('City database: every label CoreDNS sets, for the client address', async () => {
    expect(await texts(txtCorefile(CITY, CITY_LABELS), { remoteAddress: KNOWN })).toEqual([
      'geoip/city/name=Cambridge',
      'geoip/country/name=United Kingdom',
      'geoip/continent/name=Europe',
      'geoip/country/code=GB',
      'geoip/subdivisions/code=ENG,CAM',
      'geoip/country/is_in_european_union=true',
      'geoip/continent/code=EU',
      'geoip/latitude=52.2242',
      'geoip/longitude=0.1315',
      'geoip/timezone=Europe/London',
      'geoip/postalcode=CB4',
    ]);
  });

  it('an address in no network gets the zero values, as geoip2-golang decodes nothing', async () => {
    expect(await texts(txtCorefile(CITY, CITY_LABELS), { remoteAddress: '127.0.0.1' })).toEqual([
      'geoip/city/name=',
      'geoip/country/name=',
      'geoip/continent/name=',
      'geoip/country/code=',
      'geoip/subdivisions/code=',
      'geoip/country/is_in_european_union=false',
      'geoip/continent/code=',
      'geoip/latitude=',
      'geoip/longitude=',
      'geoip/timezone=',
      'geoip/postalcode=',
    ]);
  });

  it('ASN database: number and organisation, "Not routed" 0 for 10/8', async () => {
    const text = txtCorefile(ASN, ASN_LABELS);
    expect(await texts(text, { remoteAddress: KNOWN })).toEqual([
      'geoip/asn/number=12345',
      'geoip/asn/org=Test ASN Organization',
    ]);
    expect(await texts(text, { remoteAddress: '10.9.8.7' })).toEqual([
      'geoip/asn/number=0',
      'geoip/asn/org=Not routed',
    ]);
  });

  it('edns-subnet: the ECS address when the query has one, the client address otherwise', async () => {
    const text = txtCorefile(CITY, ['geoip/city/name'], ' {\n    edns-subnet\n  }');
    expect(await texts(text, { remoteAddress: '127.0.0.1', options: [ecs(KNOWN)] })).toEqual([
      'geoip/city/name=Cambridge',
    ]);
    expect(await texts(text, { remoteAddress: KNOWN })).toEqual(['geoip/city/name=Cambridge']);
    // A /24 subnet is looked up at its masked address, which is in no network here.
    expect(await texts(text, { remoteAddress: KNOWN, options: [ecs(KNOWN, 24)] })).toEqual(['geoip/city/name=']);
  });

  it('without edns-subnet the ECS option is ignored', async () => {
    const text = txtCorefile(CITY, ['geoip/city/name']);
    expect(await texts(text, { remoteAddress: '127.0.0.1', options: [ecs(KNOWN)] })).toEqual(['geoip/city/name=']);
  });

  it('view selects a block by geoip metadata, and log prints a label', async () => {
    const logs = captureLogs();
    try {
      run = await runCorefile(
        [
          'example.org {',
          '  view cambridge {',
          "    expr metadata('geoip/city/name') == 'Cambridge'",
          '  }',
          '  metadata',
          `  geoip ${CITY}`,
          '  log . "{/geoip/country/code} {/geoip/city/name}"',
          '  template IN A example.org {',
          '    answer "{{ .Name }} 60 IN A 192.0.2.1"',
          '  }',
          '}',
          'example.org {',
          '  template IN A example.org {',
          '    answer "{{ .Name }} 60 IN A 192.0.2.2"',
          '  }',
          '}',
        ].join('\n'),
      );
      const a = async (remoteAddress: string): Promise<unknown> =>
        (await run!.ask('example.org.', 'A', { remoteAddress })).answers.map((r) => (r.type === 'A' ? r.data : null));
      expect(await a(KNOWN)).toEqual(['192.0.2.1']);
      expect(await a('127.0.0.1')).toEqual(['192.0.2.2']);
      expect(logs.lines).toContain('[INFO] GB Cambridge');
    } finally {
      logs.restore();
    }
  });
});

describe('geoip: database', () => {
  it('a repeat client gets the same (kept) labels', () => {
    const db = new GeoDatabase(CITY);
    expect(db.lookup(KNOWN)).toBe(db.lookup(KNOWN));
  });

  it("floats as Go formats them with FormatFloat(f, 'f', -1, 64)", () => {
    expect(formatFloatF(52.2242)).toBe('52.2242');
    expect(formatFloatF(-0.0000001)).toBe('-0.0000001');
    expect(formatFloatF(1.5e-7)).toBe('0.00000015');
    expect(formatFloatF(0)).toBe('0');
    expect(formatFloatF(1e21)).toBe('1000000000000000000000');
  });

  it('ECS addresses as miekg/dns unpacks them', () => {
    expect(ecsAddress(Buffer.from([0, 8, 0, 7, 0, 1, 24, 0, 81, 2, 69]))).toBe('81.2.69.0');
    expect(ecsAddress(Buffer.from([0, 8, 0, 6, 0, 2, 16, 0, 0x20, 0x01]))).toBe('2001:0:0:0:0:0:0:0');
    expect(ecsAddress(Buffer.from([0, 10, 0, 0]))).toBeNull();
  });
});

describe('geoip: setup errors, as CoreDNS words them', () => {
  it.each([
    [
      'geoip',
      "plugin/geoip: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'geoip'",
    ],
    [
      `geoip ${CITY} extra`,
      "plugin/geoip: Corefile:1 - Error during parsing: Wrong argument count or unexpected line ending after 'extra'",
    ],
    [`geoip ${CITY} {\n  bogus\n}`, 'plugin/geoip: Corefile:2 - Error during parsing: unknown property "bogus"'],
    [
      `geoip ${CITY}\ngeoip ${ASN}`,
      'plugin/geoip: Corefile:2 - Error during parsing: configuring multiple databases is not supported',
    ],
    [
      'geoip /nonexistent/db.mmdb',
      'plugin/geoip: Corefile:1 - Error during parsing: failed to open database file: open /nonexistent/db.mmdb: no such file or directory',
    ],
    [
      `geoip ${DATA}GeoLite2-UnknownDbType.mmdb`,
      'plugin/geoip: Corefile:1 - Error during parsing: failed to open database file: geoip2: reader does not support the "UnknownDbType" database type',
    ],
    [
      `geoip ${DATA}README.md`,
      'plugin/geoip: Corefile:1 - Error during parsing: failed to open database file: error opening database: invalid MaxMind DB file',
    ],
  ])('%j', (text, message) => {
    expect(setupErr(text)).toBe(message);
  });
});
