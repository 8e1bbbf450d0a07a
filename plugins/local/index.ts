/**
 * local: answers the names that must never leave the host (docs/plugins.md, local): `localhost.`
 * and its subdomains, and the reverse zones `0.in-addr.arpa.`, `127.in-addr.arpa.` and
 * `255.in-addr.arpa.`, as CoreDNS 1.15.0 does. Every other query goes on down the chain.
 */
import type { Answer } from 'dns-packet';
import { directive, option, parseOccurrences, str } from '../../src/corefile/options.js';
import { Qtype, Rcode } from '../../src/dns/constants.js';
import { replyTo, setRcode } from '../../src/dns/message.js';
import { matchZone, toPacketName } from '../../src/dns/name.js';
import { nextOrFailure, type Handler, type PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { localhostRequests } from './metrics.js';

export const LOCAL_OPTIONS = directive('local', {
  options: [
    option('localhost_prefix', {
      args: [
        str('on|off', (v) =>
          v === 'on' || v === 'off' ? null : `localhost_prefix expects 'on' or 'off', got ${JSON.stringify(v)}`,
        ),
      ],
      summary: 'answer localhost.<anything> as localhost (default on)',
    }),
  ],
});

const ZONES = ['localhost.', '0.in-addr.arpa.', '127.in-addr.arpa.', '255.in-addr.arpa.'];
const TTL = 604800;

function soa(owner: string): Answer {
  return {
    name: toPacketName(owner),
    type: 'SOA',
    class: 'IN',
    ttl: TTL,
    data: { mname: 'localhost', rname: 'root.localhost', serial: 1, refresh: 0, retry: 0, expire: 0, minimum: TTL },
  };
}

function address(owner: string, qtype: number): Answer {
  return qtype === Qtype.A
    ? { name: toPacketName(owner), type: 'A', class: 'IN', ttl: TTL, data: '127.0.0.1' }
    : { name: toPacketName(owner), type: 'AAAA', class: 'IN', ttl: TTL, data: '::1' };
}

export class LocalHandler implements Handler {
  readonly name = 'local';
  constructor(
    private readonly localhostPrefix: boolean,
    private readonly next: Handler | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    const lname = q.lname;
    // Cheap exit for the names this plugin never answers.
    if (!lname.endsWith('.localhost.') && !lname.endsWith('.arpa.') && !lname.startsWith('localhost.')) {
      return nextOrFailure(this.name, this.next, q);
    }
    const lc = 'localhost.'.length;
    const subdomain = lname.length > lc && lname.endsWith('.localhost.');
    const prefixed = lname.length > lc && this.localhostPrefix && lname.startsWith('localhost.');
    if (subdomain || prefixed) {
      localhostRequests.inc();
      const m = replyTo(q.request);
      if (q.qtype === Qtype.A || q.qtype === Qtype.AAAA) m.answers.push(address(q.name, q.qtype));
      else m.authorities.push(soa(q.name));
      q.write(m, this.name);
      return 0;
    }
    const zone = matchZone(ZONES, lname);
    if (zone === undefined) return nextOrFailure(this.name, this.next, q);
    // The zone as the client wrote it (its letter case), as CoreDNS cuts it from the question.
    const zoneAsAsked = q.name.slice(q.name.length - zone.length);
    const m = replyTo(q.request);
    if (lname === zone) {
      switch (q.qtype) {
        case Qtype.A:
        case Qtype.AAAA:
          if (lname === 'localhost.') m.answers.push(address(q.name, q.qtype));
          else m.authorities.push(soa(q.name));
          break;
        case Qtype.SOA:
          m.answers.push(soa(q.name));
          break;
        case Qtype.NS:
          m.answers.push({ name: toPacketName(q.name), type: 'NS', class: 'IN', ttl: TTL, data: 'localhost' });
          break;
        default:
          m.authorities.push(soa(q.name));
      }
    } else if (lname === '1.0.0.127.in-addr.arpa.') {
      if (q.qtype === Qtype.PTR)
        m.answers.push({ name: toPacketName(q.name), type: 'PTR', class: 'IN', ttl: TTL, data: 'localhost' });
      else m.authorities.push(soa(zoneAsAsked));
    }
    if (m.answers.length === 0 && m.authorities.length === 0) {
      m.authorities.push(soa(zoneAsAsked));
      setRcode(m, Rcode.NXDOMAIN);
    }
    q.write(m, this.name);
    return 0;
  }
}

export const local: PluginDef = {
  name: 'local',
  repeat: 'all',
  options: LOCAL_OPTIONS,
  setup(d) {
    let prefix = true;
    for (const occ of parseOccurrences(d, LOCAL_OPTIONS)) {
      const o = occ.last('localhost_prefix');
      if (o) prefix = o.values[0] === 'on';
    }
    return (next) => new LocalHandler(prefix, next);
  },
};
