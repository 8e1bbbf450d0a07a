/**
 * Azure record sets into a zone, as CoreDNS 1.15.0's updateZoneFrom{Public,Private}ResourceSet:
 * A, AAAA, MX, PTR, SRV, TXT, NS (public zones), SOA and CNAME, with MX, PTR, SRV and CNAME targets
 * and the SOA mailbox made absolute (a private zone's SOA host too). Other types (CAA) are not
 * served. JSON names are matched without letter case, as Go's decoder does.
 */
import { recordFromText } from '../../src/cloudzone/records.js';
import { fqdn } from '../../src/dns/name.js';
import type { ZoneData } from '../../src/zone/zone.js';
import type { Properties } from './api.js';

function get(o: unknown, key: string): unknown {
  if (o === null || typeof o !== 'object') return undefined;
  const k = key.toLowerCase();
  for (const [name, v] of Object.entries(o)) if (name.toLowerCase() === k) return v;
  return undefined;
}
const str = (o: unknown, k: string): string => String(get(o, k) ?? '');
const num = (o: unknown, k: string): number => Number(get(o, k) ?? 0) >>> 0;
const list = (o: unknown, k: string): unknown[] => {
  const v = get(o, k);
  return Array.isArray(v) ? v : [];
};

/** A TXT string in presentation form. */
function quoted(s: string): string {
  return `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** The presentation lines of one record set. */
export function recordSetLines(p: Properties, isPrivate: boolean): string[] {
  const name = str(p, 'fqdn');
  const head = `${name} ${num(p, 'ttl')} IN`;
  const out: string[] = [];
  for (const r of list(p, 'aRecords')) out.push(`${head} A ${str(r, 'ipv4Address')}`);
  for (const r of list(p, 'aaaaRecords')) out.push(`${head} AAAA ${str(r, 'ipv6Address')}`);
  for (const r of list(p, 'mxRecords'))
    out.push(`${head} MX ${num(r, 'preference') & 0xffff} ${fqdn(str(r, 'exchange'))}`);
  for (const r of list(p, 'ptrRecords')) out.push(`${head} PTR ${fqdn(str(r, 'ptrdname'))}`);
  for (const r of list(p, 'srvRecords'))
    out.push(
      `${head} SRV ${num(r, 'priority') & 0xffff} ${num(r, 'weight') & 0xffff} ${num(r, 'port') & 0xffff} ${fqdn(str(r, 'target'))}`,
    );
  for (const r of list(p, 'txtRecords')) {
    const v = list(r, 'value').map((s) => quoted(String(s)));
    if (v.length > 0) out.push(`${head} TXT ${v.join(' ')}`);
  }
  if (!isPrivate) for (const r of list(p, 'nsRecords')) out.push(`${head} NS ${str(r, 'nsdname')}`);
  const soa = get(p, 'soaRecord');
  if (soa !== undefined && soa !== null) {
    const host = isPrivate ? fqdn(str(soa, 'host')) : str(soa, 'host');
    out.push(
      `${head} SOA ${host} ${fqdn(str(soa, 'email'))} ${num(soa, 'serialNumber')} ${num(soa, 'refreshTime')} ${num(soa, 'retryTime')} ${num(soa, 'expireTime')} ${num(soa, 'minimumTtl')}`,
    );
  }
  const cname = get(p, 'cnameRecord');
  if (cname !== undefined && cname !== null) out.push(`${head} CNAME ${fqdn(str(cname, 'cname'))}`);
  return out;
}

/** Insert a record set's records; a line that does not read is skipped (Go builds the records without parsing). */
export function insertRecordSet(p: Properties, isPrivate: boolean, z: ZoneData): void {
  for (const line of recordSetLines(p, isPrivate)) {
    try {
      const rec = recordFromText(line);
      if (rec !== null) z.insert(rec);
    } catch {
      // e.g. an empty address: CoreDNS would insert a record without one
    }
  }
}
