/**
 * The authoritative answer from one zone, as CoreDNS 1.15.0's file and auto plugins write it
 * (docs/plugins.md, file): look the name up, follow CNAME targets outside the zone's data through
 * the whole server (CoreDNS's `upstream.Lookup`, src/server/selflookup.ts), and write the answer,
 * the referral or the negative answer. Shared so that `auto` answers exactly as `file` does.
 */
import type { Answer } from 'dns-packet';
import { Flag, Rcode } from '../dns/constants.js';
import { rcodeOf, replyTo } from '../dns/message.js';
import { LOOKUP_REFUSED, type SelfLookup } from '../plugin.js';
import type { Query } from '../query.js';
import { Result, type LookupOut, type ZoneData } from './zone.js';

/** A CNAME target's lookup was refused (SelfLookup): the client's query fails. */
class LookupRefused extends Error {
  constructor(readonly target: string) {
    super(`lookup of ${target} refused`);
  }
}

/**
 * CoreDNS's `doLookup`: a CNAME target outside the zone's data asked of the whole server
 * (`upstream.Lookup`), routed on the client's listener to whichever block serves it — this one,
 * another, or none (REFUSED keeps the CNAME with NOERROR, CoreDNS #7346). `loop` is CoreDNS's
 * LoopKey, already counted for this CNAME: the nested query carries it (`Query.depth`), so a
 * cycle through file zones ends at its ninth lookup as in CoreDNS; repetitions are bounded by
 * that count, not refused.
 */
async function upstream(
  selfLookup: SelfLookup,
  q: Query,
  name: string,
  qtype: number,
  loop: number,
): Promise<{ answer: Answer[]; result: Result }> {
  const sub = q.derive(name, qtype);
  sub.depth = loop;
  let m: Awaited<ReturnType<SelfLookup['lookup']>>;
  try {
    m = await selfLookup.lookup(sub, { repeats: true });
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

/**
 * Look `q` up in `data`. A number when a lookup of the chain was refused: the query then failed
 * with SERVFAIL through `q.fail`, and that is the plugin's rcode (no wrapper object per query).
 */
export async function lookupZone(
  q: Query,
  data: ZoneData,
  selfLookup: SelfLookup,
  plugin: string,
): Promise<LookupOut | number> {
  try {
    return await data.lookup(q.lname, q.qtype, q.do, q.depth, (name, t, l) => upstream(selfLookup, q, name, t, l));
  } catch (e) {
    // A lookup of the chain was refused (a cycle through other plugins, or too long a chain):
    // the query fails, as docs/corefile.md §11 says.
    if (e instanceof LookupRefused)
      return q.fail(new Error(`plugin/${plugin}: lookup of ${e.target} is a cycle`), Rcode.SERVFAIL);
    throw e;
  }
}

/** Write the reply for a lookup's result as CoreDNS's file/auto ServeDNS does; returns the plugin's rcode. */
export function writeZoneAnswer(q: Query, r: LookupOut, plugin: string): number {
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
  q.write(msg, plugin);
  return rcode === Rcode.SERVFAIL ? Rcode.NOERROR : rcode;
}

function fresh(rr: Answer): Answer {
  const data = (rr as { data?: unknown }).data;
  if (data !== null && typeof data === 'object' && !Buffer.isBuffer(data)) {
    return { ...rr, data: Array.isArray(data) ? [...(data as unknown[])] : { ...(data as object) } } as Answer;
  }
  return { ...rr };
}
