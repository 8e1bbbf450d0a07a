/**
 * erratic (README.md): answers every A and AAAA query with a fixed address and every AXFR with a
 * small zone, SERVFAIL for anything else — and drops, delays or truncates 1 in N of them, for
 * testing clients. Ready only while its query count is 3 or 4 (CoreDNS's flip between ready and
 * not ready), and a search path for `autopath @erratic`.
 */
import type { Answer } from 'dns-packet';
import { Flag, Qtype, Rcode } from '../../src/dns/constants.js';
import { replyTo, setFlag, type Message } from '../../src/dns/message.js';
import { toPacketName } from '../../src/dns/name.js';
import type { Handler, PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { SEARCH_PATH } from '../../src/searchpath.js';
import { ERRATIC_OPTIONS, parseErratic, type ErraticConfig } from './setup.js';

/** RFC 5737 and RFC 3849 documentation addresses, as CoreDNS answers them. */
const A_ADDRESS = '192.0.2.53';
const AAAA_ADDRESS = '2001:db8::53';
/** CoreDNS's `large`: the A record 30 times. */
const LARGE_COUNT = 30;

/** The query counter, shared by the handler and the readiness probe (per configuration, as CoreDNS's). */
class Counter {
  n = 0;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** CoreDNS's small zone transfer for `name`: SOA, two NS, two AAAA, and the closing SOA unless truncated. */
export function transferRecords(name: string, truncate: boolean): Answer[] {
  const z = toPacketName(name);
  const sub = (label: string): string => (z === '' ? label : `${label}.${z}`);
  const soa: Answer = {
    name: z,
    type: 'SOA',
    class: 'IN',
    ttl: 0,
    data: {
      mname: 'sns.dns.icann.org',
      rname: 'noc.dns.icann.org',
      serial: 2018050825,
      refresh: 7200,
      retry: 3600,
      expire: 1209600,
      minimum: 3600,
    },
  };
  const rrs: Answer[] = [
    soa,
    { name: z, type: 'NS', class: 'IN', ttl: 0, data: sub('b') },
    { name: z, type: 'NS', class: 'IN', ttl: 0, data: sub('a') },
    { name: sub('a'), type: 'AAAA', class: 'IN', ttl: 0, data: '2001:bd8::53' },
    { name: sub('b'), type: 'AAAA', class: 'IN', ttl: 0, data: '2001:500::54' },
  ];
  if (!truncate) rrs.push(soa);
  return rrs;
}

export class ErraticHandler implements Handler {
  readonly name = 'erratic';
  constructor(
    private readonly cfg: ErraticConfig,
    private readonly count: Counter,
  ) {}

  serve(q: Query): number | Promise<number> {
    const n = this.count.n++;
    const { cfg } = this;
    const drop = cfg.drop > 0 && n % cfg.drop === 0;
    const delay = cfg.delay > 0 && n % cfg.delay === 0;
    // CoreDNS 1.15.0 tests `queryNr & truncate == 0` (a bitwise AND, not a modulo): with the
    // default 2 it truncates queries 0, 1, 4, 5, 8, 9 … Kept as it is, for the same answers.
    const trunc = cfg.truncate > 0 && (n & cfg.truncate) === 0;
    let m: Message | null = null;
    switch (q.qtype) {
      case Qtype.A:
      case Qtype.AAAA: {
        m = replyTo(q.request, 0, true);
        if (trunc) setFlag(m, Flag.TC, true);
        const a = q.qtype === Qtype.A;
        const rr: Answer = a
          ? { name: toPacketName(q.name), type: 'A', class: 'IN', ttl: 0, data: A_ADDRESS }
          : { name: toPacketName(q.name), type: 'AAAA', class: 'IN', ttl: 0, data: AAAA_ADDRESS };
        m.answers = a && cfg.large ? Array.from({ length: LARGE_COUNT }, () => rr) : [rr];
        break;
      }
      case Qtype.AXFR:
        // One message holding the whole transfer; "truncated" here means no closing SOA.
        m = replyTo(q.request, 0, true);
        m.answers = transferRecords(q.name, trunc);
        break;
      default:
        break;
    }
    if (drop) {
      q.dropped = true;
      return Rcode.NOERROR;
    }
    if (delay) return sleep(cfg.delayMs).then(() => this.finish(q, m));
    return this.finish(q, m);
  }

  private finish(q: Query, m: Message | null): number {
    // Any other type: SERVFAIL, written by the server.
    if (m === null) return Rcode.SERVFAIL;
    q.write(m, this.name);
    return Rcode.NOERROR;
  }
}

export const erratic: PluginDef = {
  name: 'erratic',
  repeat: 'all',
  options: ERRATIC_OPTIONS,
  setup(d, ctx) {
    const cfg = parseErratic(d);
    const count = new Counter();
    // Ready while the query count is in [3, 5), as CoreDNS's, so a test sees it flip both ways.
    ctx.registerReady('erratic', () => (count.n >= 3 && count.n < 5 ? true : `${count.n} queries seen`));
    ctx.provide(SEARCH_PATH, { plugin: 'erratic', autoPath: () => ['a.example.org.', 'b.example.org.', ''] });
    return () => new ErraticHandler(cfg, count);
  },
};
