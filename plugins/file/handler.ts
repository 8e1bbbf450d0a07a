/**
 * The file handler (docs/plugins.md, file): find the zone (longest match), look the name up, and
 * write the authoritative answer, the referral or the negative answer as CoreDNS 1.15.0's file
 * plugin does (src/zone/answer.ts, shared with auto).
 */
import { Opcode, Qtype, Rcode } from '../../src/dns/constants.js';
import type { Logger } from '../../src/log.js';
import { matchZone } from '../../src/dns/name.js';
import { fallsThrough } from '../../src/fallthrough.js';
import { nextOrFailure, type Handler, type SelfLookup } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import type { FileConfig } from './setup.js';
import { lookupZone, writeZoneAnswer } from '../../src/zone/answer.js';
import { Result } from '../../src/zone/zone.js';

export class FileHandler implements Handler {
  readonly name = 'file';

  constructor(
    private readonly cfg: FileConfig,
    private readonly next: Handler | null,
    private readonly log: Logger,
    private readonly selfLookup: SelfLookup,
  ) {}

  serve(q: Query): number | Promise<number> {
    const zone = matchZone(this.cfg.names, q.lname);
    if (zone === undefined) {
      if (!this.next) return Rcode.REFUSED;
      return this.next.serve(q);
    }
    if (q.qtype === Qtype.AXFR || q.qtype === Qtype.IXFR) return Rcode.REFUSED;
    if (q.req.opcode === Opcode.NOTIFY) {
      // CoreDNS logs this and sends nothing (it returns success without writing): no reply.
      this.log.info(`Dropping notify from ${q.transport.remoteAddress} for ${zone}`);
      q.dropped = true;
      return Rcode.NOERROR;
    }
    return this.answer(q, zone);
  }

  private async answer(q: Query, zone: string): Promise<number> {
    const z = this.cfg.zones.get(zone)!;
    const r = await lookupZone(q, z.data, this.selfLookup, this.name);
    if (typeof r === 'number') return r;
    if (
      r.answer.length === 0 &&
      (r.result === Result.NameError || r.result === Result.Success) &&
      fallsThrough(this.cfg.fallthrough, q.lname)
    ) {
      return nextOrFailure(this.name, this.next, q);
    }
    return writeZoneAnswer(q, r, this.name);
  }
}
