/**
 * dns64: synthesizes AAAA records from A records for IPv6-only clients (RFC 6147; docs/plugins.md,
 * dns64). An AAAA query of class IN (from an IPv6 client, or any client with `allow_ipv4`) goes
 * down the chain; when its reply has no AAAA records (or always, with `translate_all`) and is not
 * NXDOMAIN, the plugin asks the chain below it for the A records of the same name and answers
 * with each IPv4 address embedded in the prefix (RFC 6052), keeping the A reply's RCODE.
 */
import type { Answer } from 'dns-packet';
import { Flag, isServerWrittenRcode, Qclass, Qtype, Rcode } from '../../src/dns/constants.js';
import { rcodeOf, replyTo, setFlag, setRcode, type Message } from '../../src/dns/message.js';
import { bytesToIPv6 } from '../../src/dns/name.js';
import { nextOrFailure, type Handler, type PluginDef } from '../../src/plugin.js';
import { untraced } from '../../src/tracing/chain.js';
import type { Query } from '../../src/query.js';
import * as metrics from './metrics.js';
import { DNS64_OPTIONS, parseDns64, type Dns64Config } from './setup.js';

/** TTL cap when the AAAA reply has no SOA (RFC 6147 §5.1.7). */
const DEFAULT_SOA_TTL = 600;

/** RFC 6052 §2.2: the IPv4 address embedded after the prefix, skipping bits 64..71. */
export function embed(prefix: Uint8Array, length: number, ipv4: string): string {
  const v4 = ipv4.split('.').map(Number);
  const v6 = new Uint8Array(16);
  let i = 0;
  let j = 0;
  for (; i < length / 8; i++) v6[i] = prefix[i]!;
  for (; i < 8; i++, j++) v6[i] = v4[j]!;
  if (i === 8) i++;
  for (; j < 4; i++, j++) v6[i] = v4[j]!;
  return bytesToIPv6(v6);
}

/** CoreDNS's response.Typify says NameError: NXDOMAIN without answers. */
function isNameError(m: Message): boolean {
  return rcodeOf(m) === Rcode.NXDOMAIN && m.answers.length === 0;
}

export class Dns64Handler implements Handler {
  readonly name = 'dns64';
  constructor(
    private readonly cfg: Dns64Config,
    private readonly next: Handler | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    if (q.qtype !== Qtype.AAAA || q.qclass !== Qclass.IN || (!this.cfg.allowIPv4 && q.transport.family === 1)) {
      return nextOrFailure(this.name, this.next, q);
    }
    return this.translate(q);
  }

  private async translate(q: Query): Promise<number> {
    // CoreDNS calls Next.ServeDNS directly here, not through NextOrFailure: no trace span for it.
    const rc = await nextOrFailure(this.name, untraced(this.next), q);
    const orig = q.reply;
    if (orig === null) return rc;
    const om = orig.peek();
    if (isNameError(om)) return rc;
    if (!this.cfg.translateAll && om.answers.some((r) => r.type === 'AAAA')) return rc;
    // The A records of the same name, from the chain below.
    const aq = q.derive(q.name, Qtype.A);
    const arc = await nextOrFailure(this.name, this.next, aq);
    let resp: Message;
    if (aq.reply !== null) resp = aq.reply.peek();
    else if (isServerWrittenRcode(arc)) resp = replyTo(aq.request, arc);
    else return q.fail(aq.error ?? new Error('dns64: upstream returned no response'), Rcode.SERVFAIL);
    q.write(this.synthesize(q, om, resp), this.name);
    metrics.translated.labels(q.transport.server).inc();
    return Rcode.NOERROR;
  }

  /** The AAAA reply built from the A reply `resp` (RFC 6147 §5.1.7, §5.3). */
  synthesize(q: Query, aaaaReply: Message, resp: Message): Message {
    const m = replyTo(q.request);
    setRcode(m, rcodeOf(resp) & 0xf);
    setFlag(m, Flag.TC, ((resp.flags ?? 0) & Flag.TC) !== 0);
    m.additionals = [...resp.additionals];
    m.authorities = [...resp.authorities];
    let soaTtl = DEFAULT_SOA_TTL;
    for (const r of aaaaReply.authorities) if (r.type === 'SOA') soaTtl = r.ttl ?? 0;
    m.answers = resp.answers.map((r): Answer => {
      if (r.type !== 'A') return r;
      return {
        name: r.name,
        type: 'AAAA',
        class: r.class,
        ttl: Math.min(r.ttl ?? 0, soaTtl),
        data: embed(this.cfg.prefix, this.cfg.length, r.data),
      };
    });
    return m;
  }
}

export const dns64: PluginDef = {
  name: 'dns64',
  repeat: 'all',
  options: DNS64_OPTIONS,
  setup(d) {
    const cfg = parseDns64(d);
    return (next) => new Dns64Handler(cfg, next);
  },
};
