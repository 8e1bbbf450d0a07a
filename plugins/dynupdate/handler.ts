/**
 * The dynupdate handler (CoreDNS 1.15.0 plugin/dynupdate/dynupdate.go, update.go): UPDATE messages
 * for its zone are applied (engine.ts) from the key the tsig plugin validated; queries in the zone
 * are answered from the current records as the file plugin answers (src/zone/answer.ts), and
 * transfers see the same records. A change replaces the whole zone at once, so a query or a
 * transfer sees the old zone or the new one.
 */
import { Flag, Opcode, Qclass, Qtype, Rcode } from '../../src/dns/constants.js';
import { sectionRecords, WireError } from '../../src/dns/wirerecords.js';
import type { ZoneRecord } from '../../src/dns/zonefile/record.js';
import type { Logger } from '../../src/log.js';
import { nextOrFailure, type Handler, type SelfLookup } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { lookupZone, writeZoneAnswer } from '../../src/zone/answer.js';
import { ZoneData } from '../../src/zone/zone.js';
import { DynamicZone, inZone } from './engine.js';
import type { DynupdateConfig } from './setup.js';
import { writeDatabase } from './store.js';

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

/** `m.SetReply(r); m.Opcode = UPDATE; m.Rcode = rcode; m.Authoritative = true` as wire bytes. */
function updateReply(q: Query, rcode: number): Buffer {
  const end = q.req.questionEnd;
  const out = Buffer.allocUnsafe(end);
  q.raw.copy(out, 0, 0, end);
  out.writeUInt16BE(Flag.QR | (Opcode.UPDATE << 11) | Flag.AA | (rcode & 0xf), 2);
  out.writeUInt16BE(1, 4);
  out.writeUInt32BE(0, 6);
  out.writeUInt16BE(0, 10);
  return out;
}

export class DynupdateHandler implements Handler {
  readonly name = 'dynupdate';
  private readonly engine: DynamicZone;

  constructor(
    private readonly cfg: DynupdateConfig,
    private readonly state: ZoneState,
    private readonly next: Handler | null,
    private readonly log: Logger,
    private readonly selfLookup: SelfLookup,
    /** Called after a change was installed (NOTIFY). */
    private readonly changed: () => void,
  ) {
    this.engine = new DynamicZone(cfg.zone, cfg.permissions, cfg.limits);
  }

  serve(q: Query): number | Promise<number> {
    if (q.req.opcode === Opcode.UPDATE) return this.update(q);
    if (!inZone(this.cfg.zone, q.lname)) return nextOrFailure(this.name, this.next, q);
    if (q.qtype === Qtype.AXFR || q.qtype === Qtype.IXFR) return Rcode.REFUSED;
    if (q.req.opcode === Opcode.NOTIFY) {
      // The file plugin's answer to a NOTIFY: logged, nothing sent.
      this.log.info(`Dropping notify from ${q.transport.remoteAddress} for ${this.cfg.zone}`);
      q.dropped = true;
      return Rcode.NOERROR;
    }
    return this.answer(q);
  }

  private async answer(q: Query): Promise<number> {
    const r = await lookupZone(q, this.state.data, this.selfLookup, this.name);
    if (typeof r === 'number') return r;
    return writeZoneAnswer(q, r, this.name);
  }

  private reply(q: Query, rcode: number): number {
    q.writeWire(updateReply(q, rcode), this.name);
    return rcode;
  }

  private update(q: Query): number {
    if (q.qtype !== Qtype.SOA || q.qclass !== Qclass.IN) return this.reply(q, Rcode.FORMERR);
    const zone = q.lname;
    // Query-only backends could acknowledge an UPDATE without applying it: not this zone, NOTAUTH.
    if (zone !== this.cfg.zone) return this.reply(q, Rcode.NOTAUTH);
    const key = q.tsig?.keyName ?? null;
    if (key === null) {
      this.log.debug(`refusing UPDATE for ${zone} without a validated TSIG identity`);
      return this.reply(q, Rcode.REFUSED);
    }
    let sections: [ZoneRecord[], ZoneRecord[], ZoneRecord[]];
    try {
      sections = sectionRecords(q.raw, 'UPDATE');
    } catch (e) {
      if (e instanceof WireError) return this.reply(q, Rcode.FORMERR);
      throw e;
    }
    const result = this.engine.update(this.state.records, key, sections[0], sections[1]);
    let rcode = result.rcode;
    let error = result.error;
    if (result.records !== null) {
      try {
        if (this.cfg.database !== null) writeDatabase(this.cfg.database, this.cfg.zone, result.records);
        this.state.install(result.records);
        this.changed();
      } catch (e) {
        rcode = Rcode.SERVFAIL;
        error = `committing zone: ${(e as Error).message}`;
      }
    }
    if (error !== undefined) this.log.error(`UPDATE for ${zone} failed: ${error}`);
    return this.reply(q, rcode);
  }
}
