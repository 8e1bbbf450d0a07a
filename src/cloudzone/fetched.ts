/**
 * A cloud zone as one listing built it: the file plugin's `ZoneData` that also keeps the records
 * it took, in the order it took them, so the main thread can send the query threads the records
 * (not the API's responses) and each thread builds the same zone from them (replicate.ts).
 */
import type { ZoneRecord } from '../dns/zonefile/record.js';
import { ZoneData } from '../zone/zone.js';

export class FetchedZone extends ZoneData {
  /** Every record `insert` accepted (one it throws on, an NSEC3 record, is not kept). */
  readonly records: ZoneRecord[] = [];

  override insert(rec: ZoneRecord): void {
    super.insert(rec);
    this.records.push(rec);
  }
}

/** The records a zone was built from: none for a zone no listing filled yet (it answers SERVFAIL). */
export function recordsOf(z: ZoneData): readonly ZoneRecord[] {
  return z instanceof FetchedZone ? z.records : [];
}
