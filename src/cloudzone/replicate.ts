/**
 * Cloud zones listed once per process (docs/multicore.md §2): with query threads, only the main
 * thread resolves credentials and calls the cloud API (route53, clouddns, azure), at start and every
 * `refresh`; after each listing it sends every query thread the records of its hosted zones on a
 * replication channel (src/server/replication.ts), and each thread builds the same zones from them.
 * A cloud API then sees one listing per refresh whatever the thread count, as with CoreDNS's one
 * process (Route 53 allows 5 requests per second per account).
 *
 * A query thread's setup waits for the main thread's copy: the main thread offers its zones once
 * its start has done what CoreDNS's setup does (route53 and clouddns: after the first listing,
 * whose failure fails the start; azure: at once, its zones empty and answering SERVFAIL until its
 * background listing is in), so a thread starts serving what the main thread serves at that moment.
 * A reload's new configuration offers again and replaces the old offer; a thread's second
 * subscription (its new configuration beside the old one) gets its own snapshot.
 */
import { createHash } from 'node:crypto';
import type { ZoneRecord } from '../dns/zonefile/record.js';
import type { Offer, ReplicationChannel, ReplicationReplica, ReplicationSource } from '../server/replication.js';
import { isObj } from '../util/json.js';
import { ZoneData } from '../zone/zone.js';
import { recordsOf } from './fetched.js';
import type { HostedZones } from './hosted.js';

/** The records of every hosted zone of one plugin occurrence, in `HostedZones.all()` order. */
export interface ZonesFeed {
  readonly op: 'zones';
  readonly zones: readonly (readonly ZoneRecord[])[];
}

function feedError(why: string): Error {
  return new Error(`cloud zone feed: ${why}`);
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0;
}

/** One record as it arrives (a structured clone: its RDATA a Uint8Array), checked. */
function parseRecord(m: unknown): ZoneRecord {
  if (
    !isObj(m) ||
    typeof m['name'] !== 'string' ||
    !isCount(m['type']) ||
    !isCount(m['class']) ||
    !isCount(m['ttl']) ||
    !(m['rdata'] instanceof Uint8Array) ||
    typeof m['file'] !== 'string' ||
    !isCount(m['line'])
  )
    throw feedError('a record is not a zone record');
  const rdata = m['rdata'];
  const rec: { -readonly [K in keyof ZoneRecord]: ZoneRecord[K] } = {
    name: m['name'],
    type: m['type'],
    class: m['class'],
    ttl: m['ttl'],
    rdata: Buffer.from(rdata.buffer, rdata.byteOffset, rdata.byteLength),
    file: m['file'],
    line: m['line'],
  };
  const { target, covered, serial } = m;
  if (target !== undefined) {
    if (typeof target !== 'string') throw feedError('a record target is not a name');
    rec.target = target;
  }
  if (covered !== undefined) {
    if (!isCount(covered)) throw feedError('a covered type is not a number');
    rec.covered = covered;
  }
  if (serial !== undefined) {
    if (!isCount(serial)) throw feedError('a serial is not a number');
    rec.serial = serial;
  }
  return rec;
}

export function parseZonesFeed(m: unknown): ZonesFeed {
  if (!isObj(m) || m['op'] !== 'zones' || !Array.isArray(m['zones'])) throw feedError('message is not zones');
  const zones = (m['zones'] as unknown[]).map((z) => {
    if (!Array.isArray(z)) throw feedError('a zone is not a record list');
    return (z as unknown[]).map(parseRecord);
  });
  return { op: 'zones', zones };
}

/** The channel of one plugin occurrence's zones (`key`: the same in every thread, from the configuration). */
export function zonesChannel(key: string): ReplicationChannel<ZonesFeed> {
  return { key, parse: parseZonesFeed };
}

/**
 * The channel key of one occurrence: the plugin, the server block (its keys and port), the
 * occurrence's place in the block and its configuration, so that two occurrences never share one
 * and a reload that changes the configuration offers a new key. A digest: the configuration holds
 * secrets (access keys, client secrets), which a key must not carry into an error text.
 */
export function zonesKey(plugin: string, block: readonly unknown[], index: number, config: unknown): string {
  return `${plugin}:${createHash('sha256')
    .update(JSON.stringify([block, index, config]))
    .digest('hex')}`;
}

/** The hosted zones' names and ids, for a channel key. */
export function zoneIds(zones: HostedZones): string[][] {
  return zones.all().map((h) => [h.name, h.id]);
}

function feedOf(zones: HostedZones): ZonesFeed {
  return { op: 'zones', zones: zones.all().map((h) => recordsOf(h.data)) };
}

/** The zone a thread builds from the main thread's records (insert order kept: the same zone). */
function build(origin: string, records: readonly ZoneRecord[]): ZoneData {
  const z = new ZoneData(origin);
  for (const r of records) z.insert(r);
  z.seal();
  return z;
}

/** The main thread's offer of one occurrence's zones. */
export interface ZonesOffer {
  /** After a listing (also one that failed part way: the hosted zones it did list changed). */
  publish(): void;
  withdraw(): void;
}

/** Offer `zones` as they are now and after each `publish` (the main thread, when it has threads). */
export function offerZones(source: ReplicationSource, key: string, zones: HostedZones): ZonesOffer {
  const offer: Offer<ZonesFeed> = source.offer(zonesChannel(key), () => [feedOf(zones)]);
  return {
    publish: () => offer.publish(feedOf(zones)),
    withdraw: () => offer.withdraw(),
  };
}

/**
 * A query thread's zones: resolves, with the unsubscribe, once the main thread's records are in
 * `zones`; every later message replaces them.
 */
export function followZones(replica: ReplicationReplica, key: string, zones: HostedZones): Promise<() => void> {
  const hosted = zones.all();
  return new Promise((resolve, reject) => {
    let first = true;
    const unsubscribe = replica.subscribe(zonesChannel(key), (m) => {
      if (m.zones.length !== hosted.length) {
        // Not reached: both threads read the same configuration under this key.
        if (first) reject(feedError(`${m.zones.length} zones for ${hosted.length}`));
        return;
      }
      hosted.forEach((h, i) => {
        h.data = build(h.name, m.zones[i]!);
      });
      if (!first) return;
      first = false;
      resolve(unsubscribe);
    });
  });
}
