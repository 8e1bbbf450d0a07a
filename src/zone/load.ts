/**
 * Reading a zone file into a ZoneData, as CoreDNS 1.15.0's `file.Parse` does (docs/plugins.md,
 * file): every record of the file (and its `$INCLUDE`s) in order, the SOA owner checked against the
 * zone, an unchanged SOA serial reported as such on reload, a syntax error or a missing SOA an error.
 */
import { readFileSync } from 'node:fs';
import { lowerName } from '../dns/name.js';
import { T } from '../dns/zonefile/mnemonics.js';
import { canonicalName } from '../dns/zonefile/names.js';
import { parseZoneRecords } from '../dns/zonefile/parser.js';
import { ZoneData } from './zone.js';

/** Reload found the same SOA serial: nothing to do (not an error worth logging). */
export class UnchangedSerial extends Error {}

/** Go's text for a failed open (`open db.example.org: no such file or directory`). */
export function openErrorText(path: string, e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  const why: Record<string, string> = {
    ENOENT: 'no such file or directory',
    EACCES: 'permission denied',
    EISDIR: 'is a directory',
    ENOTDIR: 'not a directory',
    ELOOP: 'too many levels of symbolic links',
  };
  return `open ${path}: ${(err.code && why[err.code]) ?? err.message}`;
}

/**
 * Parse `text` (the zone file's bytes as latin1) for `origin`. With `serial` >= 0, a file whose first
 * SOA has that serial throws UnchangedSerial. Other problems throw an Error worded as CoreDNS's.
 */
export function loadZone(text: string, origin: string, fileName: string, serial: number): ZoneData {
  const { records, error } = parseZoneRecords(text, {
    origin,
    file: fileName,
    include: (p) => readFileSync(p, 'latin1'),
  });
  const z = new ZoneData(origin);
  let seenSOA = false;
  for (const rec of records) {
    if (rec.type === T.SOA) {
      if (lowerName(canonicalName(rec.name) ?? rec.name) !== origin) {
        throw new Error(
          `file ${JSON.stringify(fileName)} has SOA owner ${rec.name} that does not match origin ${origin}`,
        );
      }
      if (!seenSOA) {
        seenSOA = true;
        if (serial >= 0 && rec.serial === serial)
          throw new UnchangedSerial(
            `no change in SOA serial for origin ${origin} in file ${fileName}, with ${serial} SOA serial`,
          );
      }
    }
    z.insert(rec);
  }
  if (error)
    throw new Error(
      `failed to parse file ${JSON.stringify(fileName)} for origin ${origin} with error ${error.message}`,
    );
  if (!seenSOA) throw new Error(`file ${JSON.stringify(fileName)} has no SOA record for origin ${origin}`);
  z.seal();
  return z;
}
