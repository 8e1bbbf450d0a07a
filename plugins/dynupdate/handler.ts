/**
 * The dynupdate handler (CoreDNS 1.15.0 plugin/dynupdate/dynupdate.go, update.go): UPDATE messages
 * for its zone are applied (engine.ts) from the key the tsig plugin validated; queries in the zone
 * are answered from the current records as the file plugin answers (src/zone/answer.ts), and
 * transfers see the same records. A change replaces the whole zone at once, so a query or a
 * transfer sees the old zone or the new one. Who applies an UPDATE (this thread, or the main
 * thread for a query thread) is zone.ts's business; this handler checks the request and replies.
 */
import { Flag, Opcode, Qclass, Qtype, Rcode } from '../../src/dns/constants.js';
import type { Logger } from '../../src/log.js';
import { nextOrFailure, type Handler, type SelfLookup } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { lookupZone, writeZoneAnswer } from '../../src/zone/answer.js';
import { inZone } from './engine.js';
import type { DynupdateConfig } from './setup.js';
import type { UpdatableZone } from './zone.js';

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

  constructor(
    private readonly cfg: DynupdateConfig,
    private readonly zone: UpdatableZone,
    private readonly next: Handler | null,
    private readonly log: Logger,
    private readonly selfLookup: SelfLookup,
  ) {}

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
    const r = await lookupZone(q, this.zone.state.data, this.selfLookup, this.name);
    if (typeof r === 'number') return r;
    return writeZoneAnswer(q, r, this.name);
  }

  private reply(q: Query, rcode: number): number {
    q.writeWire(updateReply(q, rcode), this.name);
    return rcode;
  }

  private update(q: Query): number | Promise<number> {
    if (q.qtype !== Qtype.SOA || q.qclass !== Qclass.IN) return this.reply(q, Rcode.FORMERR);
    const zone = q.lname;
    // Query-only backends could acknowledge an UPDATE without applying it: not this zone, NOTAUTH.
    if (zone !== this.cfg.zone) return this.reply(q, Rcode.NOTAUTH);
    const key = q.tsig?.keyName ?? null;
    if (key === null) {
      this.log.debug(`refusing UPDATE for ${zone} without a validated TSIG identity`);
      return this.reply(q, Rcode.REFUSED);
    }
    const rcode = this.zone.update(key, q.raw);
    if (typeof rcode === 'number') return this.reply(q, rcode);
    return rcode.then((rc) => this.reply(q, rc));
  }
}
