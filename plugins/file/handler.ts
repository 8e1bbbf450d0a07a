/**
 * The file handler (docs/plugins.md, file): find the zone (longest match), look the name up, and
 * write the authoritative answer, the referral or the negative answer as CoreDNS 1.15.0's file
 * plugin does. CNAME targets outside the zone's data are resolved the way CoreDNS's upstream
 * lookup would route them: a target in another zone of this plugin by that zone, a target inside
 * the server block's zones by the next plugins, anything else is left to the client (NOERROR with
 * the CNAME).
 */
import type { Answer } from 'dns-packet';
import { Flag, Opcode, Qtype, Rcode } from '../../src/dns/constants.js';
import type { Logger } from '../../src/log.js';
import { replyTo } from '../../src/dns/message.js';
import { lowerName, matchZone } from '../../src/dns/name.js';
import { fallsThrough } from '../../src/fallthrough.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import type { FileConfig } from './setup.js';
import { Result, type LookupOut } from './zone.js';

export class FileHandler implements Handler {
  readonly name = 'file';

  constructor(
    private readonly cfg: FileConfig,
    private readonly blockZones: readonly string[],
    private readonly next: Handler | null,
    private readonly log: Logger,
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

  private async resolve(q: Query, lname: string, qtype: number, loop: number): Promise<LookupOut | null> {
    const zone = matchZone(this.cfg.names, lname);
    if (zone === undefined) return null;
    const z = this.cfg.zones.get(zone)!;
    return z.data.lookup(lname, qtype, q.do, loop, (name, t, l) => this.upstream(q, name, t, l));
  }

  /** CoreDNS's upstream lookup of a CNAME target (the reply of the server to a new question). */
  private async upstream(
    q: Query,
    name: string,
    qtype: number,
    loop: number,
  ): Promise<{ answer: Answer[]; result: Result }> {
    const lname = lowerName(name);
    const r = await this.resolve(q, lname, qtype, loop);
    if (r) {
      // What the server would have replied to that question: fallthrough hands it on; an empty
      // SERVFAIL is written by the server.
      if (
        r.answer.length === 0 &&
        (r.result === Result.NameError || r.result === Result.Success) &&
        fallsThrough(this.cfg.fallthrough, lname)
      ) {
        return this.viaNext(q, name, qtype);
      }
      if (r.result === Result.ServerFailure) return { answer: r.answer, result: Result.ServerFailure };
      if (r.result === Result.NameError) return { answer: r.answer, result: Result.NameError };
      return { answer: r.answer, result: r.answer.length === 0 ? Result.NoData : Result.Success };
    }
    if (matchZone(this.blockZones, lname) !== undefined) return this.viaNext(q, name, qtype);
    // No server block for the target: REFUSED, and the CNAME stands with NOERROR.
    return { answer: [], result: Result.Success };
  }

  private async viaNext(q: Query, name: string, qtype: number): Promise<{ answer: Answer[]; result: Result }> {
    if (!this.next) return { answer: [], result: Result.ServerFailure };
    const sub = q.derive(name, qtype);
    let rcode: number;
    try {
      rcode = await this.next.serve(sub);
    } catch {
      return { answer: [], result: Result.ServerFailure };
    }
    const m = sub.reply?.peek();
    if (!m) return { answer: [], result: rcode === Rcode.SERVFAIL ? Result.ServerFailure : Result.Success };
    const answer = m.answers.filter((r) => r.type !== 'OPT');
    const rc = sub.reply!.rcode;
    if (rc === Rcode.NXDOMAIN) return { answer, result: Result.NameError };
    if (rc === Rcode.SERVFAIL) return { answer, result: Result.ServerFailure };
    if (rc === Rcode.NOERROR && answer.length === 0) return { answer, result: Result.NoData };
    return { answer, result: Result.Success };
  }

  private async answer(q: Query, zone: string): Promise<number> {
    const z = this.cfg.zones.get(zone)!;
    const r = await z.data.lookup(q.lname, q.qtype, q.do, 0, (name, t, l) => this.upstream(q, name, t, l));
    if (
      r.answer.length === 0 &&
      (r.result === Result.NameError || r.result === Result.Success) &&
      fallsThrough(this.cfg.fallthrough, q.lname)
    ) {
      return nextOrFailure(this.name, this.next, q);
    }
    let rcode: number = Rcode.NOERROR;
    let aa = true;
    switch (r.result) {
      case Result.NameError:
        rcode = Rcode.NXDOMAIN;
        break;
      case Result.Delegation:
        if (r.answer.length === 0) aa = false;
        break;
      case Result.ServerFailure:
        if (r.answer.length === 0) return Rcode.SERVFAIL;
        rcode = Rcode.SERVFAIL;
        break;
    }
    const msg = replyTo(q.request, rcode, aa);
    if (!aa) msg.flags = (msg.flags ?? 0) & ~Flag.AA;
    // Fresh record objects: plugins above may change the reply they get (q.reply.message()),
    // and the zone's records are shared by every reply.
    msg.answers = r.answer.map(fresh);
    msg.authorities = r.ns.map(fresh);
    msg.additionals = r.extra.map(fresh);
    q.write(msg, this.name);
    return rcode === Rcode.SERVFAIL ? Rcode.NOERROR : rcode;
  }
}

function fresh(rr: Answer): Answer {
  const data = (rr as { data?: unknown }).data;
  if (data !== null && typeof data === 'object' && !Buffer.isBuffer(data)) {
    return { ...rr, data: Array.isArray(data) ? [...(data as unknown[])] : { ...(data as object) } } as Answer;
  }
  return { ...rr };
}
