/**
 * Differential: geoip against CoreDNS 1.15.0 — CoreDNS's own test databases (City and ASN, from
 * plugins/geoip/testdata, the same files for both servers), every label read back through
 * template's `.Meta`, looked up by EDNS Client Subnet addresses (whole, /24, IPv6, none) and by the
 * client's address.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  assertResult,
  missingBinaries,
  newResult,
  REPO,
  runQueries,
  startPair,
  totalCompared,
  type QuerySpec,
} from './harness.js';

const DATA = join(REPO, 'plugins/geoip/testdata');
const CITY_LABELS = [
  'city/name',
  'country/name',
  'continent/name',
  'country/code',
  'subdivisions/code',
  'country/is_in_european_union',
  'continent/code',
  'latitude',
  'longitude',
  'timezone',
  'postalcode',
];
const ASN_LABELS = ['asn/number', 'asn/org'];

function answers(labels: readonly string[]): string {
  return labels.map((l) => `    answer "{{ .Name }} 60 IN TXT \\"${l}={{ .Meta \\"geoip/${l}\\" }}\\""`).join('\n');
}

const COREFILE = `city.example:{{DNS}} {
  metadata
  geoip ${DATA}/GeoLite2-City.mmdb {
    edns-subnet
  }
  template IN TXT {
${answers(CITY_LABELS)}
  }
}
asn.example:{{DNS}} {
  metadata
  geoip ${DATA}/GeoLite2-ASN.mmdb {
    edns-subnet
  }
  template IN TXT {
${answers(ASN_LABELS)}
  }
}
plain.example:{{DNS}} {
  metadata
  geoip ${DATA}/GeoLite2-City.mmdb
  template IN TXT {
${answers(['city/name', 'country/code'])}
  }
}
`;

function ecs4(ip: string, bits: number): { code: number; data: Buffer } {
  const octets = ip
    .split('.')
    .map(Number)
    .slice(0, Math.ceil(bits / 8));
  return { code: 8, data: Buffer.from([0, 1, bits, 0, ...octets]) };
}
const ECS6 = { code: 8, data: Buffer.from([0, 2, 48, 0, 0x20, 0x01, 0x0d, 0xb8, 0, 1]) };

const SUBNETS: readonly ({ code: number; data: Buffer }[] | undefined)[] = [
  undefined,
  [],
  [ecs4('81.2.69.142', 32)],
  [ecs4('81.2.69.142', 24)],
  [ecs4('10.1.2.3', 32)],
  [ecs4('192.0.2.1', 32)],
  [ECS6],
];

function queries(): QuerySpec[] {
  const out: QuerySpec[] = [];
  let id = 100;
  for (const zone of ['city.example', 'asn.example', 'plain.example']) {
    for (const options of SUBNETS) {
      for (const proto of ['udp', 'tcp'] as const) {
        out.push({
          name: `www.${zone}`,
          type: 'TXT',
          proto,
          id: id++,
          edns: options === undefined ? undefined : 1232,
          ...(options ? { options } : {}),
        });
      }
    }
  }
  return out;
}

describe('differential: geoip', () => {
  const missing = missingBinaries();
  it('has CoreDNS 1.15.0 and a build to compare', () => {
    expect(missing).toBeNull();
  });
  afterAll(() => {
    const t = totalCompared();
    process.stdout.write(`differential geoip: ${t.compared} queries compared in ${t.cases} cases\n`);
  });

  it('geoip-city-asn-edns-subnet', async () => {
    expect(missing).toBeNull();
    const pair = await startPair({ corefile: COREFILE });
    try {
      const result = newResult('geoip-city-asn-edns-subnet');
      const qs = queries();
      await runQueries(pair, result, qs, ['geoip', 'metadata', 'template']);
      assertResult(result, qs.length);
    } finally {
      await pair.stop();
    }
  }, 120_000);
});
