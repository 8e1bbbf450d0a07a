/**
 * When a signed zone must be signed again (plugin/sign/signer.go `resign`): the file is missing or
 * unreadable, a SOA RRSIG among the first 100 records was made more than 6 days ago, its inception
 * is in the future, or it expires within 7 days. The reason is worded as CoreDNS words it, for the
 * "Signing ... because ..." line.
 */
import { readFileSync } from 'node:fs';
import { parseZoneRecords } from '../../src/dns/zonefile/parser.js';
import { formatGoDuration } from '../../src/util/duration.js';

const RESIGN_MS = 6 * 86400_000;
const EXPIRE_MS = 7 * 86400_000;

/** Go's `2006-01-02T15:04:05.000Z07:00` of a UTC time. */
export function timeFmt(ms: number): string {
  return new Date(ms).toISOString();
}

/** Go's `open PATH: reason` for a failed read. */
export function openError(path: string, e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  const why =
    code === 'ENOENT' ? 'no such file or directory' : code === 'EACCES' ? 'permission denied' : (e as Error).message;
  return `open ${path}: ${why}`;
}

/** miekg's RRSIG time fields read in the 2^32 s window nearest `nowMs` would be 68-year math; dates here are near. */
function fieldMs(v: number, nowMs: number): number {
  const nowS = Math.floor(nowMs / 1000);
  const year68 = 2 ** 31;
  return (v + Math.trunc((v - nowS) / year68) * year68) * 1000;
}

/** Why the signed file at `path` must be signed again, or null when its signatures are good. */
export function resignReason(path: string, nowMs: number): string | null {
  let text: string;
  try {
    text = readFileSync(path, 'latin1');
  } catch (e) {
    return openError(path, e);
  }
  const { records, error } = parseZoneRecords(text, { origin: '.', file: 'resign' });
  let i = 0;
  for (const r of records) {
    if (r.type === 46 && r.rdata.readUInt16BE(0) === 6) {
      const incep = fieldMs(r.rdata.readUInt32BE(12), nowMs);
      const since = nowMs - incep;
      if (since >= 0 && since > RESIGN_MS)
        return `inception ${JSON.stringify(timeFmt(incep))} was more than: ${formatGoDuration(RESIGN_MS)} ago from ${timeFmt(nowMs)}: ${formatGoDuration(since)}`;
      if (since < 0)
        return `inception ${JSON.stringify(timeFmt(incep))} date is in the future: ${formatGoDuration(since)}`;
      const expire = fieldMs(r.rdata.readUInt32BE(8), nowMs);
      if (expire - nowMs < EXPIRE_MS)
        return `expiration ${JSON.stringify(timeFmt(expire))} is less than: ${formatGoDuration(EXPIRE_MS)} away from ${timeFmt(nowMs)}: ${formatGoDuration(expire - nowMs)}`;
    }
    i++;
    if (i > 100) return 'no SOA RRSIG found in first 100 records';
  }
  return error === null ? null : error.message;
}
