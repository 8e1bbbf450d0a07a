/**
 * The file handler (docs/plugins.md, file): find the zone (longest match), look the name up, and
 * write the authoritative answer, the referral or the negative answer as CoreDNS 1.15.0's file
 * plugin does. CNAME targets outside the zone's data are asked of the whole server, as CoreDNS's
 * `upstream.Lookup` does (src/server/selflookup.ts).
 */
import type { Answer } from 'dns-packet';
import { Flag, Opcode, Qtype, Rcode } from '../../src/dns/constants.js';
import type { Logger } from '../../src/log.js';
import { rcodeOf, replyTo } from '../../src/dns/message.js';
import { matchZone } from '../../src/dns/name.js';
import { fallsThrough } from '../../src/fallthrough.js';
import { LOOKUP_REFUSED, nextOrFailure, type Handler, type SelfLookup } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import type { FileConfig } from './setup.js';
import { Result, type LookupOut } from './zone.js';

/** A CNAME target's lookup was refused (SelfLookup): the client's query fails. */
class LookupRefused extends Error {
  constructor(readonly target: string) {
    super(`lookup of ${target} refused`);
  }
}

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

  /**
   * CoreDNS's `doLookup`: a CNAME target outside the zone's data asked of the whole server
   * (`upstream.Lookup`), routed on the client's listener to whichever block serves it — this one,
   * another, or none (REFUSED keeps the CNAME with NOERROR, CoreDNS #7346). `loop` is CoreDNS's
   * LoopKey, already counted for this CNAME: the nested query carries it (`Query.depth`), so a
   * cycle through file zones ends at its ninth lookup as in CoreDNS; repetitions are bounded by
   * that count, not refused.
   */
  private async upstream(
    q: Query,
    name: string,
    qtype: number,
    loop: number,
  ): Promise<{ answer: Answer[]; result: Result }> {
    const sub = q.derive(name, qtype);
    sub.depth = loop;
    let m: Awaited<ReturnType<SelfLookup['lookup']>>;
    try {
      m = await this.selfLookup.lookup(sub, { repeats: true });
    } catch {
      return { answer: [], result: Result.ServerFailure };
    }
    if (m === LOOKUP_REFUSED) throw new LookupRefused(name);
    if (m === null) return { answer: [], result: Result.Success };
    const answer = m.answers.filter((r) => r.type !== 'OPT');
    const rc = rcodeOf(m);
    if (rc === Rcode.NXDOMAIN) return { answer, result: Result.NameError };
    if (rc === Rcode.SERVFAIL) return { answer, result: Result.ServerFailure };
    if (rc === Rcode.NOERROR && answer.length === 0) return { answer, result: Result.NoData };
    return { answer, result: Result.Success };
  }

  private async answer(q: Query, zone: string): Promise<number> {
    const z = this.cfg.zones.get(zone)!;
    let r: LookupOut;
    try {
      r = await z.data.lookup(q.lname, q.qtype, q.do, q.depth, (name, t, l) => this.upstream(q, name, t, l));
    } catch (e) {
      // A lookup of the chain was refused (a cycle through other plugins, or too long a chain):
      // the query fails, as docs/corefile.md §11 says.
      if (e instanceof LookupRefused)
        return q.fail(new Error(`plugin/file: lookup of ${e.target} is a cycle`), Rcode.SERVFAIL);
      throw e;
    }
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
