/**
 * Route 53 record sets into a zone, as CoreDNS 1.15.0's `updateZoneFromRRS`: the owner name and
 * each value unescaped (`maybeUnescape`: Route 53 returns characters outside a-z, 0-9, `-` and `_`
 * as `\NNN` octal escapes), one presentation line per value read with the zone-file reader.
 */
import { recordFromText } from '../../src/cloudzone/records.js';
import type { ZoneData } from '../../src/zone/zone.js';
import type { RecordSet } from './api.js';

const ESC = '\\';

/**
 * CoreDNS's maybeUnescape: `\NNN` back to the character for a-z, 0-9, `-`, `.` and a leading `*`
 * (a wildcard); any other escaped character is an error.
 */
export function maybeUnescape(s: string): string {
  let out = '';
  for (;;) {
    const i = s.indexOf(ESC);
    if (i < 0) return out + s;
    out += s.slice(0, i);
    const li = i + 1;
    const ri = li + 3;
    if (ri > s.length) throw new Error(`invalid escape sequence: '${ESC}${s.slice(li)}'`);
    const digits = s.slice(li, ri);
    // strconv.ParseInt(digits, 8, 8): three octal digits that fit an int8.
    if (!/^[0-7]{3}$/.test(digits) || Number.parseInt(digits, 8) > 127)
      throw new Error(`invalid escape sequence: '${ESC}${digits}'`);
    const c = String.fromCharCode(Number.parseInt(digits, 8));
    if (c === '*') {
      if (out.length !== 0) throw new Error("`*' only supported as wildcard (leftmost label)");
    } else if (!/[a-z0-9\-.]/.test(c)) {
      throw new Error(`invalid character: ${ESC}${goOctal(c.charCodeAt(0))}`);
    }
    out += c;
    s = s.slice(ri);
  }
}

/** Go's `%#03o`: a leading 0, at least three characters. */
function goOctal(n: number): string {
  return `0${n.toString(8)}`.padStart(3, '0');
}

/**
 * Insert one record set's records; throws (with CoreDNS's words) at the first value that cannot be
 * read, after inserting the ones before it — CoreDNS logs that and carries on with the next set.
 */
export function insertRecordSet(set: RecordSet, z: ZoneData): void {
  for (const value of set.values) {
    let n: string;
    let v: string;
    try {
      n = maybeUnescape(set.name);
    } catch (e) {
      throw new Error(`failed to unescape \`${set.name}' name: ${(e as Error).message}`);
    }
    try {
      v = maybeUnescape(value);
    } catch (e) {
      throw new Error(`failed to unescape \`${value}' value: ${(e as Error).message}`);
    }
    let rec;
    try {
      rec = recordFromText(`${n} ${set.ttl} IN ${set.type} ${v}`);
    } catch (e) {
      throw new Error(`failed to parse resource record: ${(e as Error).message}`);
    }
    if (rec === null) continue;
    try {
      z.insert(rec);
    } catch {
      // file.Zone.Insert's error (an NSEC3 record) is ignored by route53.
    }
  }
}
