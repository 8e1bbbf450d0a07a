/**
 * The dynamic zone and who changes it (docs/plugins.md, dynupdate; docs/multicore.md §2).
 *
 * With one thread the zone is this thread's: an UPDATE is applied (engine.ts), written to the
 * database and installed before its reply, as CoreDNS 1.15.0's update.go does.
 *
 * With query threads the main thread owns the zone, as it owns a secondary zone: it alone applies
 * UPDATEs, writes the database and sends NOTIFYs. An UPDATE that the kernel hands a query thread
 * is checked there as far as the request goes (opcode, question, zone, the TSIG key the thread's
 * *tsig* validated: MAC, time, truncation) and passed to the main thread (the channel's
 * `request`: the key's name and the message), which applies it and answers the RCODE; the thread
 * writes the reply, which its *tsig* signs. Every change is sent to every thread as the whole new
 * zone (feed.ts), and the UPDATE's reply, whichever thread sends it, waits until every thread has
 * installed it (`publishApplied`): a query or transfer that a client sends after it got the reply
 * sees the change on any thread. NOTIFYs after a change go out once every thread has it too, so
 * the secondaries' transfers see it wherever they land. A query thread never reads the seed or
 * the database: its setup waits for the main thread's zone.
 */
import { Rcode } from '../../src/dns/constants.js';
import { sectionRecords, WireError } from '../../src/dns/wirerecords.js';
import type { ZoneRecord } from '../../src/dns/zonefile/record.js';
import type { Logger } from '../../src/log.js';
import type { IndexReplication, Offer, ReplicationReplica } from '../../src/server/replication.js';
import { ZoneData } from '../../src/zone/zone.js';
import { DynamicZone } from './engine.js';
import { zoneFeedChannel, type UpdateAsk, type ZoneFeed } from './feed.js';
import type { DynupdateConfig } from './setup.js';
import { recordsFromMessages, recordsToMessages, writeDatabase } from './store.js';

/** The zone's current records and the lookup structure built from them. */
export class ZoneState {
  data: ZoneData;

  constructor(
    readonly origin: string,
    public records: ZoneRecord[],
  ) {
    this.data = ZoneState.build(origin, records);
  }

  static build(origin: string, records: readonly ZoneRecord[]): ZoneData {
    const z = new ZoneData(origin);
    for (const r of records) z.insert(r);
    z.seal();
    return z;
  }

  install(records: ZoneRecord[]): void {
    const data = ZoneState.build(this.origin, records);
    this.records = records;
    this.data = data;
  }
}

/** How long a query thread waits for the main thread's copy of the zone (UpdatableZone.follow). */
export const FOLLOW_WAIT_MS = 30_000;

export class UpdatableZone {
  private readonly engine: DynamicZone;
  private readonly channel;
  private offer: Offer<ZoneFeed> | null = null;
  private unsubscribe: (() => void) | null = null;

  private constructor(
    private readonly cfg: DynupdateConfig,
    readonly state: ZoneState,
    private readonly log: Logger,
    private readonly replication: IndexReplication | undefined,
    key: string,
    /** Called after a change was installed (in every thread): NOTIFY. */
    private readonly changed: () => void,
  ) {
    this.engine = new DynamicZone(cfg.zone, cfg.permissions, cfg.limits);
    this.channel = zoneFeedChannel(key);
  }

  /** The zone of the thread that owns it (the main thread, or the only one), from its records. */
  static owner(
    cfg: DynupdateConfig,
    records: ZoneRecord[],
    log: Logger,
    replication: IndexReplication | undefined,
    key: string,
    changed: () => void,
  ): UpdatableZone {
    return new UpdatableZone(cfg, new ZoneState(cfg.zone, records), log, replication, key, changed);
  }

  /** A query thread's copy: resolves with the main thread's zone as it is now, then follows it. */
  static follow(
    cfg: DynupdateConfig,
    log: Logger,
    replica: ReplicationReplica,
    key: string,
    waitMs = FOLLOW_WAIT_MS,
  ): Promise<UpdatableZone> {
    return new Promise((resolve, reject) => {
      let zone: UpdatableZone | null = null;
      // The main thread offers the zone while it sets up the same configuration. A thread started
      // from a configuration the main thread has already left (respawned while a reload switched)
      // subscribes to a key nobody will offer: its start fails instead of waiting for ever, and
      // the pool starts it again from the current configuration.
      const timer = setTimeout(() => {
        if (zone !== null) return;
        unsubscribe();
        reject(new Error(`dynupdate: the main thread did not send zone ${cfg.zone} within ${waitMs / 1000}s`));
      }, waitMs);
      timer.unref();
      const unsubscribe = replica.subscribe(zoneFeedChannel(key), (m) => {
        let records: ZoneRecord[];
        try {
          records = recordsFromMessages(m.messages);
        } catch (e) {
          // Not reached: the main thread sends what it built its own zone from.
          if (zone === null) {
            clearTimeout(timer);
            unsubscribe();
            reject(e as Error);
          }
          return;
        }
        if (zone !== null) {
          zone.state.install(records);
          return;
        }
        clearTimeout(timer);
        zone = new UpdatableZone(cfg, new ZoneState(cfg.zone, records), log, replica, key, () => undefined);
        zone.unsubscribe = unsubscribe;
        resolve(zone);
      });
    });
  }

  /** The main thread offers the zone to the query threads (a startup hook). */
  start(): void {
    const r = this.replication;
    if (r?.role !== 'source' || this.offer !== null) return;
    this.offer = r.offer(
      this.channel,
      () => [this.feed()],
      undefined,
      (ask: UpdateAsk) =>
        this.apply(ask.key, Buffer.from(ask.message.buffer, ask.message.byteOffset, ask.message.byteLength)),
    );
  }

  close(): void {
    this.offer?.withdraw();
    this.offer = null;
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  private feed(): ZoneFeed {
    return { op: 'zone', messages: recordsToMessages(this.state.records) };
  }

  /**
   * One UPDATE from the key `key` (validated by *tsig*), `raw` the request: the RCODE of its reply,
   * once the change (if any) is installed here and, with query threads, in every thread.
   */
  update(key: string, raw: Buffer): number | Promise<number> {
    const r = this.replication;
    if (r?.role !== 'replica') return this.apply(key, raw);
    return r.request(this.channel, { op: 'update', key, message: raw }).catch((e: unknown) => {
      this.log.error(`UPDATE for ${this.cfg.zone} failed: ${(e as Error).message}`);
      return Rcode.SERVFAIL;
    });
  }

  /** updateLocked and commit: in the thread that owns the zone. */
  private apply(key: string, raw: Buffer): number | Promise<number> {
    const zone = this.cfg.zone;
    let sections: [ZoneRecord[], ZoneRecord[], ZoneRecord[]];
    try {
      sections = sectionRecords(raw, 'UPDATE');
    } catch (e) {
      if (e instanceof WireError) return Rcode.FORMERR;
      throw e;
    }
    const result = this.engine.update(this.state.records, key, sections[0], sections[1]);
    let rcode = result.rcode;
    let error = result.error;
    let installed = false;
    if (result.records !== null) {
      try {
        if (this.cfg.database !== null) writeDatabase(this.cfg.database, zone, result.records);
        this.state.install(result.records);
        installed = true;
      } catch (e) {
        rcode = Rcode.SERVFAIL;
        error = `committing zone: ${(e as Error).message}`;
      }
    }
    if (error !== undefined) this.log.error(`UPDATE for ${zone} failed: ${error}`);
    if (!installed) return rcode;
    if (this.offer === null) {
      this.changed();
      return rcode;
    }
    return this.offer.publishApplied(this.feed()).then(() => {
      this.changed();
      return rcode;
    });
  }
}
