/**
 * The secondary handler: CoreDNS 1.15.0's file ServeDNS over the pulled zones (secondary embeds
 * file.File). The longest matching zone answers as *file* would (src/zone/answer.ts); before its
 * first transfer the zone has no SOA and every query gets SERVFAIL, and an expired zone logs
 * `Zone Z is expired` and answers SERVFAIL. A NOTIFY from one of the zone's primaries is answered
 * (NOERROR, AA) and starts a serial check; from anyone else it is logged and dropped.
 */
import { Opcode, Qtype, Rcode } from '../../src/dns/constants.js';
import { replyTo } from '../../src/dns/message.js';
import { matchZone } from '../../src/dns/name.js';
import { fallsThrough } from '../../src/fallthrough.js';
import type { Logger } from '../../src/log.js';
import { nextOrFailure, type Handler, type SelfLookup } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { splitHostPort } from '../../src/util/hostport.js';
import { lookupZone, writeZoneAnswer } from '../../src/zone/answer.js';
import { Result } from '../../src/zone/zone.js';
import type { ZoneSet } from './consumer.js';
import type { SecondaryConfig } from './setup.js';
import type { SecondaryZone } from './zone.js';

/** The NOTIFY comes from one of the zone's primaries (any port), as CoreDNS's isNotify checks. */
export function fromPrimary(z: SecondaryZone, ip: string): boolean {
  for (const f of z.from) {
    try {
      if (splitHostPort(f).host === ip) return true;
    } catch {
      // Not host:port: skipped, as Go's SplitHostPort failing.
    }
  }
  return false;
}

export class SecondaryHandler implements Handler {
  readonly name = 'secondary';

  constructor(
    private readonly cfg: SecondaryConfig,
    /** The configured zones and the catalogs' members (consumer.ts): it changes as catalogs do. */
    private readonly set: ZoneSet,
    private readonly next: Handler | null,
    /** `plugin/file`: CoreDNS writes these lines from the file package. */
    private readonly fileLog: Logger,
    private readonly selfLookup: SelfLookup,
  ) {}

  serve(q: Query): number | Promise<number> {
    const zone = matchZone(this.set.names, q.lname);
    if (zone === undefined) {
      if (!this.next) return Rcode.REFUSED;
      return this.next.serve(q);
    }
    const z = this.set.zones.get(zone);
    if (z === undefined) return Rcode.SERVFAIL;
    // Without *transfer* in the block these reach here: no transfer allowed.
    if (q.qtype === Qtype.AXFR || q.qtype === Qtype.IXFR) return Rcode.REFUSED;
    if (q.req.opcode === Opcode.NOTIFY) return this.notify(q, z, zone);
    if (z.expired) {
      this.fileLog.error(`Zone ${zone} is expired`);
      return Rcode.SERVFAIL;
    }
    return this.answer(q, z);
  }

  private notify(q: Query, z: SecondaryZone, zone: string): number {
    const ip = q.transport.remoteAddress;
    if (!fromPrimary(z, ip)) {
      // CoreDNS logs this and sends nothing (it returns success without writing): no reply.
      this.fileLog.info(`Dropping notify from ${ip} for ${zone}`);
      q.dropped = true;
      return Rcode.NOERROR;
    }
    q.write(replyTo(q.request, Rcode.NOERROR, true), this.name);
    this.fileLog.info(`Notify from ${ip} for ${zone}: checking transfer`);
    // CoreDNS checks after writing the reply, before returning; here the reply leaves when the
    // chain returns, so the check runs after it (in the main thread, docs/multicore.md).
    z.notify(ip);
    return Rcode.NOERROR;
  }

  private async answer(q: Query, z: SecondaryZone): Promise<number> {
    const r = await lookupZone(q, z.data, this.selfLookup, this.name);
    if (typeof r === 'number') return r;
    // Only NXDOMAIN (or NOERROR without records: an empty non-terminal) falls through.
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
