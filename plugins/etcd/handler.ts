/**
 * The etcd handler (CoreDNS 1.15.0 plugin/etcd/handler.go): the zone match, one lookup per query
 * type (lookup.ts), and the reply — the records with AA set, or NXDOMAIN / NODATA / SERVFAIL with
 * the zone's SOA (plugin.BackendError). Before the index has listed etcd once, every query in the
 * zones answers SERVFAIL with the SOA, as CoreDNS does when its read of etcd fails.
 */
import type { Answer } from 'dns-packet';
import { Flag, Qtype, Rcode } from '../../src/dns/constants.js';
import { replyTo, setRcode, type Message } from '../../src/dns/message.js';
import { matchZone } from '../../src/dns/name.js';
import { fallsThrough, type Fallthrough } from '../../src/fallthrough.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import type { KvView } from './kvtable.js';
import { Backend, KeyNotFound, question, type Found } from './lookup.js';

export const PLUGIN = 'etcd';

export interface HandlerConfig {
  readonly zones: readonly string[];
  readonly fallthrough: Fallthrough;
}

export class EtcdHandler implements Handler {
  readonly name = PLUGIN;

  constructor(
    private readonly cfg: HandlerConfig,
    private readonly view: KvView,
    private readonly backend: Backend,
    private readonly next: Handler | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    const zone = matchZone(this.cfg.zones, q.lname);
    if (zone === undefined) return nextOrFailure(PLUGIN, this.next, q);
    const status = this.view.status();
    if (!status.synced) {
      return this.write(q, zone, Rcode.SERVFAIL, [], [], false, new Error(`etcd: ${status.error ?? 'not synced'}`));
    }
    return this.answer(q, zone);
  }

  private async answer(q: Query, zone: string): Promise<number> {
    const b = this.backend;
    const qq = question(q.name, q.qtype);
    let found: Found;
    try {
      switch (q.qtype) {
        case Qtype.A:
        case Qtype.AAAA: {
          const r = await b.address(q, zone, qq, q.qtype === Qtype.A ? 'A' : 'AAAA');
          found = { records: r.records, extra: [], truncated: r.truncated };
          break;
        }
        case Qtype.TXT: {
          const r = await b.txt(q, zone, qq);
          found = { records: r.records, extra: [], truncated: r.truncated };
          break;
        }
        case Qtype.CNAME:
          found = { records: b.cname(qq), extra: [], truncated: false };
          break;
        case Qtype.PTR:
          found = { records: b.ptr(qq), extra: [], truncated: false };
          break;
        case Qtype.MX:
          found = await b.mx(q, zone, qq);
          break;
        case Qtype.SRV:
          found = await b.srv(q, zone, qq);
          break;
        case Qtype.SOA:
          found = { records: [b.soa(zone)], extra: [], truncated: false };
          break;
        default:
          if (q.qtype === Qtype.NS && q.lname === zone) {
            found = b.ns(zone, qq);
            break;
          }
          // A fake A lookup tells NODATA from NXDOMAIN (its records are not answered).
          await b.address(q, zone, qq, 'A');
          found = { records: [], extra: [], truncated: false };
      }
    } catch (e) {
      if (e instanceof KeyNotFound) {
        if (fallsThrough(this.cfg.fallthrough, q.lname)) return nextOrFailure(PLUGIN, this.next, q);
        return this.write(q, zone, Rcode.NXDOMAIN, [], [], false, null);
      }
      return this.write(q, zone, Rcode.SERVFAIL, [], [], false, e instanceof Error ? e : new Error(String(e)));
    }
    if (found.records.length === 0) return this.write(q, zone, Rcode.NOERROR, [], [], false, null);
    return this.write(q, zone, Rcode.NOERROR, found.records, found.extra, found.truncated, null);
  }

  /** The reply: records (AA), or the rcode with the zone's SOA as authority (BackendError). */
  private write(
    q: Query,
    zone: string,
    rcode: number,
    answers: Answer[],
    extra: Answer[],
    truncated: boolean,
    err: Error | null,
  ): number {
    const msg: Message = replyTo(q.request, 0, true);
    setRcode(msg, rcode);
    if (truncated) msg.flags = (msg.flags ?? 0) | Flag.TC;
    msg.answers = answers;
    msg.additionals = extra;
    if (answers.length === 0) msg.authorities = [this.backend.soa(zone)];
    q.write(msg, PLUGIN);
    return err ? q.fail(err, rcode) : rcode;
  }
}
