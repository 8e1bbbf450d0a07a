/**
 * A MaxMind DB (`.mmdb`) opened as CoreDNS's geoip plugin opens it (oschwald/geoip2-golang/v2 over
 * maxminddb-golang): the file read once, its database type mapped to the schemas it answers (City,
 * ASN) with geoip2's table, and each lookup turned into the plugin's metadata labels. The reader is
 * mmdb-lib (pure JavaScript, no native code). Label pairs are computed once per data record and
 * kept, and so are each address's, so a query from an address seen before costs one map lookup.
 */
import { readFileSync } from 'node:fs';
import type { Reader as ReaderType, Response } from 'mmdb-lib';
import { requireCjs } from '../../src/util/require.js';
import { openErrorText } from '../../src/zone/load.js';

const { Reader } = requireCjs('mmdb-lib') as { Reader: typeof ReaderType };

const CITY = 1;
const ASN = 2;

/** geoip2-golang v2's getDBType, reduced to the two schemas the plugin reads. */
const DB_TYPES: Readonly<Record<string, number>> = {
  'GeoIP-Anonymous-Plus': 0,
  'GeoIP2-Anonymous-IP': 0,
  'DBIP-ASN-Lite (compat=GeoLite2-ASN)': ASN,
  'GeoLite2-ASN': ASN,
  'DBIP-City-Lite': CITY,
  'DBIP-Country-Lite': CITY,
  'DBIP-Country': CITY,
  'DBIP-Location (compat=City)': CITY,
  'GeoLite2-City': CITY,
  'GeoIP-City-Redacted-US': CITY,
  'GeoIP2-City': CITY,
  'GeoIP2-City-Africa': CITY,
  'GeoIP2-City-Asia-Pacific': CITY,
  'GeoIP2-City-Europe': CITY,
  'GeoIP2-City-North-America': CITY,
  'GeoIP2-City-South-America': CITY,
  'GeoIP2-Precision-City': CITY,
  'GeoLite2-Country': CITY,
  'GeoIP2-Country': CITY,
  'GeoIP2-Connection-Type': 0,
  'GeoIP2-Domain': 0,
  'DBIP-ISP (compat=Enterprise)': CITY,
  'DBIP-Location-ISP (compat=Enterprise)': CITY,
  'GeoIP-Enterprise-Redacted-US': CITY,
  'GeoIP2-Enterprise': CITY,
  'GeoIP2-ISP': ASN,
  'GeoIP2-Precision-ISP': ASN,
};

/** One label and its value, as CoreDNS stores it (a string whatever the field's type). */
export type Label = readonly [string, string];

type Rec = Record<string, unknown>;

function obj(v: unknown): Rec {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Rec) : {};
}
function text(v: unknown): string {
  return typeof v === 'string' ? v : '';
}
/** An unsigned integer field (mmdb-lib decodes uint64 as a BigInt), 0 when absent. */
function uint(v: unknown): string {
  return typeof v === 'bigint' || typeof v === 'number' ? String(v) : '0';
}

/** Go's strconv.FormatFloat(f, 'f', -1, 64): the shortest digits that read back, never an exponent. */
export function formatFloatF(f: number): string {
  const s = String(f);
  const e = s.indexOf('e');
  if (e < 0) return s;
  const neg = s.startsWith('-');
  const mant = s.slice(neg ? 1 : 0, e).replace('.', '');
  const intLen = (s.slice(neg ? 1 : 0, e).split('.')[0] ?? '').length;
  const point = intLen + Number(s.slice(e + 1));
  const digits =
    point <= 0
      ? `0.${'0'.repeat(-point)}${mant}`
      : point >= mant.length
        ? mant + '0'.repeat(point - mant.length)
        : `${mant.slice(0, point)}.${mant.slice(point)}`;
  return (neg ? '-' : '') + digits;
}

/** The city labels of one record (geoip2's City struct; a missing record is all zero values). */
export function cityLabels(r: Rec | null): Label[] {
  const rec = r ?? {};
  const city = obj(rec['city']);
  const country = obj(rec['country']);
  const continent = obj(rec['continent']);
  const location = obj(rec['location']);
  const subs = Array.isArray(rec['subdivisions']) ? (rec['subdivisions'] as unknown[]) : [];
  const lat = location['latitude'];
  const lon = location['longitude'];
  return [
    ['geoip/city/name', text(obj(city['names'])['en'])],
    ['geoip/country/name', text(obj(country['names'])['en'])],
    ['geoip/continent/name', text(obj(continent['names'])['en'])],
    ['geoip/country/code', text(country['iso_code'])],
    ['geoip/subdivisions/code', subs.map((s) => text(obj(s)['iso_code'])).join(',')],
    ['geoip/country/is_in_european_union', country['is_in_european_union'] === true ? 'true' : 'false'],
    ['geoip/continent/code', text(continent['code'])],
    // Missing coordinates are '' (geoip2-golang v2's nil pointers), not 0.
    ['geoip/latitude', typeof lat === 'number' ? formatFloatF(lat) : ''],
    ['geoip/longitude', typeof lon === 'number' ? formatFloatF(lon) : ''],
    ['geoip/timezone', text(location['time_zone'])],
    ['geoip/postalcode', text(obj(rec['postal'])['code'])],
  ];
}

/** The ASN labels of one record. */
export function asnLabels(r: Rec | null): Label[] {
  const rec = r ?? {};
  return [
    ['geoip/asn/number', uint(rec['autonomous_system_number'])],
    ['geoip/asn/org', text(rec['autonomous_system_organization'])],
  ];
}

/** Most decoded records (and their labels) kept; past it the memo starts again. */
const MEMO_LIMIT = 4096;

export class GeoDatabase {
  private readonly reader: ReaderType<Response>;
  private readonly schemas: number;
  /** CoreDNS's name of the schema the database answers, for its debug line. */
  get schema(): 'city' | 'asn' {
    return this.schemas === CITY ? 'city' : 'asn';
  }
  /** Labels by decoded record: mmdb-lib's cache hands back the same object for the same record. */
  private readonly labels = new WeakMap<object, readonly Label[]>();
  private readonly decoded = new Map<string | number, unknown>();
  /** Labels by client address (the database never changes while this configuration serves). */
  private readonly byAddress = new Map<string, readonly Label[]>();
  /** The labels of an address that is in no network of the database (all zero values). */
  private readonly missing: readonly Label[];

  /** Opens `path`; throws with CoreDNS's text (`failed to open database file: …`, no schema). */
  constructor(path: string) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch (e) {
      throw new Error(`failed to open database file: ${openErrorText(path, e)}`);
    }
    const decoded = this.decoded;
    const cache = {
      get: (k: string | number): unknown => decoded.get(k),
      set: (k: string | number, v: unknown): void => {
        if (decoded.size >= MEMO_LIMIT) decoded.clear();
        decoded.set(k, v);
      },
    };
    try {
      this.reader = new Reader(bytes, { cache });
    } catch {
      throw new Error('failed to open database file: error opening database: invalid MaxMind DB file');
    }
    const type = this.reader.metadata.databaseType;
    const schemas = DB_TYPES[type];
    if (schemas === undefined)
      throw new Error(
        `failed to open database file: geoip2: reader does not support the ${JSON.stringify(type)} database type`,
      );
    if (schemas === 0) throw new Error('database does not provide any supported schema (city, asn)');
    this.schemas = schemas;
    this.missing = this.schemas === CITY ? cityLabels(null) : asnLabels(null);
  }

  /**
   * The labels for address `ip` (IPv4 or IPv6 text); throws on a lookup the database cannot do.
   * A cluster's clients are few and ask often: an address seen before costs one map lookup (the
   * tree walk with mmdb-lib's address parsing is ~4 µs).
   */
  lookup(ip: string): readonly Label[] {
    const seen = this.byAddress.get(ip);
    if (seen !== undefined) return seen;
    const labels = this.walk(ip);
    if (this.byAddress.size >= MEMO_LIMIT) this.byAddress.clear();
    this.byAddress.set(ip, labels);
    return labels;
  }

  private walk(ip: string): readonly Label[] {
    const rec = this.reader.get(ip) as Rec | null;
    if (rec === null) return this.missing;
    let l = this.labels.get(rec);
    if (l === undefined) {
      l = this.schemas === CITY ? cityLabels(rec) : asnLabels(rec);
      this.labels.set(rec, l);
    }
    return l;
  }
}
