/**
 * The dynamic zone's records: read from the seed file, and — with `database` — kept in a local
 * file that every accepted UPDATE rewrites (written to a temporary file, synced and renamed over
 * the old one, so a crash leaves the last committed zone) before the new records answer queries.
 * CoreDNS 1.15.0 keeps the same records, as uncompressed wire RRs, in a bbolt database; clusterdns
 * keeps them as one uncompressed DNS message in a plain file (docs/plugins.md, dynupdate): a
 * database written by one cannot be read by the other.
 */
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { Qtype } from '../../src/dns/constants.js';
import { answerRecords } from '../../src/dns/wirerecords.js';
import { parseZoneRecords } from '../../src/dns/zonefile/parser.js';
import { nameLabels } from '../../src/dns/zonefile/names.js';
import type { ZoneRecord } from '../../src/dns/zonefile/record.js';
import { lowerName } from '../../src/dns/name.js';
import { openErrorText } from '../../src/zone/load.js';
import { checkLimits, validateRecords, type Limits } from './engine.js';

/** Marks a database file (first line) and the zone it holds (second line). */
const MAGIC = 'clusterdns-dynupdate-v1';

/** readZoneLimited (setup.go): the seed's records, within the limits, apex first. */
export function readSeed(path: string, origin: string, limits: Limits): ZoneRecord[] {
  let text: string;
  try {
    text = readFileSync(path, 'latin1');
  } catch (e) {
    throw new Error(`opening zone file ${JSON.stringify(path)}: ${openErrorText(path, e)}`);
  }
  const { records, error } = parseZoneRecords(text, {
    origin,
    file: path,
    include: (p) => readFileSync(p, 'latin1'),
  });
  if (records.length > limits.records || checkLimits(records, { ...limits, records: Infinity }) !== null)
    throw new Error(`zone file ${JSON.stringify(path)} exceeds configured limits`);
  if (error) throw new Error(`parsing zone file ${JSON.stringify(path)}: ${error.message}`);
  const soas = records.filter((r) => r.type === Qtype.SOA).length;
  if (soas === 0) throw new Error(`zone ${JSON.stringify(origin)} has no SOA`);
  if (soas !== 1) throw new Error(`zone ${JSON.stringify(origin)} contains more than one SOA`);
  const apex = records.filter((r) => lowerName(r.name) === origin);
  const rest = records.filter((r) => lowerName(r.name) !== origin);
  const ordered = [...apex.filter((r) => r.type === Qtype.SOA), ...apex.filter((r) => r.type !== Qtype.SOA), ...rest];
  const invalid = validateRecords(ordered, origin);
  if (invalid !== null) throw new Error(`invalid zone ${JSON.stringify(origin)}: ${invalid}`);
  return ordered;
}

function recordWire(r: ZoneRecord): Buffer {
  const labels = nameLabels(r.name) ?? [];
  const parts: Buffer[] = [];
  for (const l of labels) parts.push(Buffer.of(l.length), l);
  const head = Buffer.alloc(11);
  head.writeUInt16BE(r.type, 1);
  head.writeUInt16BE(r.class, 3);
  head.writeUInt32BE(r.ttl, 5);
  head.writeUInt16BE(r.rdata.length, 9);
  parts.push(head, r.rdata);
  return Buffer.concat(parts);
}

/** The database's records; null when it does not exist yet. Throws when it is not this zone's. */
export function readDatabase(path: string, origin: string, limits: Limits): ZoneRecord[] | null {
  if (!existsSync(path)) return null;
  const data = readFileSync(path);
  const nl1 = data.indexOf(10);
  const nl2 = nl1 < 0 ? -1 : data.indexOf(10, nl1 + 1);
  if (nl2 < 0 || data.toString('latin1', 0, nl1) !== MAGIC)
    throw new Error(`loading database ${JSON.stringify(path)}: unrecognized database format`);
  if (data.toString('latin1', nl1 + 1, nl2) !== origin)
    throw new Error(`loading database ${JSON.stringify(path)}: database belongs to a different zone`);
  const records = answerRecords(data.subarray(nl2 + 1), path);
  const over = checkLimits(records, limits);
  if (over !== null) throw new Error(`loading database ${JSON.stringify(path)}: ${over}`);
  return records;
}

/** One uncompressed DNS message with `records` as its answers (at most 65,535). */
function recordsMessage(records: readonly ZoneRecord[]): Buffer {
  const head = Buffer.alloc(12);
  head.writeUInt16BE(records.length, 6);
  return Buffer.concat([head, ...records.map(recordWire)]);
}

/**
 * The records as DNS messages of at most 65,535 answers each: how the main thread sends the zone
 * to the query threads (feed.ts), read back by {@link recordsFromMessages}.
 */
export function recordsToMessages(records: readonly ZoneRecord[]): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < records.length || i === 0; i += 0xffff) out.push(recordsMessage(records.slice(i, i + 0xffff)));
  return out;
}

export function recordsFromMessages(messages: readonly Uint8Array[]): ZoneRecord[] {
  const out: ZoneRecord[] = [];
  for (const m of messages) {
    for (const r of answerRecords(Buffer.from(m.buffer, m.byteOffset, m.byteLength), 'main thread')) out.push(r);
  }
  return out;
}

/** Commit the records: a temporary file, synced, renamed over the database. */
export function writeDatabase(path: string, origin: string, records: readonly ZoneRecord[]): void {
  if (records.length > 0xffff) throw new Error('zone has more records than a database message holds');
  const body = Buffer.concat([Buffer.from(`${MAGIC}\n${origin}\n`, 'latin1'), recordsMessage(records)]);
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, body);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}
