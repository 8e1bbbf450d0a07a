/**
 * The autopath query path (docs/plugins.md, autopath): a query for `base.<first search element>` is
 * answered by walking the client's search path on the server — each `base.<element>` goes down
 * the rest of the chain — so the client gets the answer of the first name that exists with one
 * round trip instead of one per search element.
 */
import { Rcode } from '../../src/dns/constants.js';
import { isSubdomain, matchZone, toPacketName } from '../../src/dns/name.js';
import type { Message } from '../../src/dns/message.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query, Reply } from '../../src/query.js';
import { successTotal } from './metrics.js';

/** Gives the search path of the client of a query, or null when it has none. */
export type SearchFunc = (q: Query) => readonly string[] | null;

export interface AutopathHandlerConfig {
  readonly zones: readonly string[];
  /** Static search path (resolv.conf file), used when `searchFunc` is null. */
  readonly search: readonly string[];
  /** Per-client search path (`@kubernetes`); takes precedence over `search`. */
  readonly searchFunc: SearchFunc | null;
}

/**
 * Prepend `original CNAME <owner>` for the first answer record whose owner differs from the
 * original name (case-insensitively), with that record's TTL, and restore the question name.
 */
export function cnamer(msg: Message, original: string): void {
  const orig = toPacketName(original);
  const lorig = orig.toLowerCase();
  for (const rr of msg.answers ?? []) {
    if (rr.name.toLowerCase() === lorig) continue;
    const ttl = 'ttl' in rr && typeof rr.ttl === 'number' ? rr.ttl : 0;
    msg.answers = [{ name: orig, type: 'CNAME', class: 'IN', ttl, data: rr.name }, ...msg.answers];
    break;
  }
  const q = msg.questions?.[0];
  if (q) q.name = orig;
}

/** The name `base.s` (absolute); `s` is absolute or `''` (base itself). */
function join(base: string, s: string): string {
  if (base === '') return s === '' ? '.' : s;
  if (s === '' || s === '.') return `${base}.`;
  return `${base}.${s}`;
}

export class AutopathHandler implements Handler {
  readonly name = 'autopath';

  constructor(
    private readonly cfg: AutopathHandlerConfig,
    private readonly next: Handler | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    if (matchZone(this.cfg.zones, q.lname) === undefined) return nextOrFailure(this.name, this.next, q);
    const path = this.cfg.searchFunc ? this.cfg.searchFunc(q) : this.cfg.search;
    if (!path || path.length === 0) return nextOrFailure(this.name, this.next, q);
    const first = path[0]!.toLowerCase();
    if (first === '' || !isSubdomain(q.lname, first)) return nextOrFailure(this.name, this.next, q);
    // What the client originally asked for, in its letter case (`google.com` of
    // `google.com.default.svc.cluster.local.`); empty when the query is the first element itself.
    const base = q.lname === first ? '' : q.name.slice(0, q.name.length - first.length - 1);
    return this.walk(q, base, path);
  }

  private async walk(q: Query, base: string, path: readonly string[]): Promise<number> {
    let firstReply: Reply | null = null;
    let firstRcode: number = Rcode.SERVFAIL;
    for (let i = 0; i < path.length; i++) {
      const sub = q.derive(join(base, path[i]!));
      const rcode = await nextOrFailure(this.name, this.next, sub);
      if (sub.error) {
        // An error value (e.g. forward timed out on one of the names): stop here, return it.
        return q.fail(sub.error, rcode);
      }
      if (i === 0) {
        firstReply = sub.reply;
        firstRcode = rcode;
      }
      // Nothing written (`sub.reply` is the only signal): try the next element.
      if (!sub.reply) continue;
      if (sub.reply.rcode === Rcode.NXDOMAIN) continue;
      const msg = sub.reply.message();
      cnamer(msg, q.name);
      q.write(msg, sub.reply.plugin);
      successTotal.labels(q.transport.server).inc();
      return rcode;
    }
    // Every element gave NXDOMAIN or no reply: the first attempt's outcome, as it was.
    if (firstReply) q.reply = firstReply;
    return firstRcode;
  }
}
