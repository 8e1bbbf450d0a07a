/**
 * One record from a cloud DNS API into a zone: the API gives owner, TTL, type and the value as
 * presentation text, which CoreDNS assembles into one RFC 1035 line and reads with miekg/dns's
 * `dns.NewRR` (origin `.`). The same reader as zone files (src/dns/zonefile/), so values parse
 * (and fail, with miekg's words) as they do in CoreDNS.
 */
import { parseZoneText } from '../dns/zonefile/parser.js';
import type { ZoneRecord } from '../dns/zonefile/record.js';

/**
 * The record of one presentation line (`name ttl IN TYPE value`), or throws miekg's ParseError text
 * (`dns: bad A A: "x" at line: 1:20`). A line holding no record (an empty value) is null, as
 * `dns.NewRR` returns a nil record then.
 */
export function recordFromText(line: string): ZoneRecord | null {
  const recs = parseZoneText(Buffer.from(line, 'utf8').toString('latin1'), { origin: '.', file: '' });
  return recs[0] ?? null;
}
