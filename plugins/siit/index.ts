/**
 * siit: synthesizes A records from AAAA records for IPv4 clients reaching IPv6-only services
 * through a stateless translator (RFC 6052 prefixes, RFC 7757 explicit address mappings;
 * docs/plugins.md, siit). An A query of class IN goes down the chain; when its reply is not
 * truncated, not NXDOMAIN and has no A record, the plugin asks the chain below it for the AAAA
 * records of the same name and answers with each AAAA address mapped to IPv4 — by an `eam` entry
 * first, else by taking the IPv4 address out of the prefix — keeping other records as they are.
 */
import type { Answer } from 'dns-packet';
import { Flag, isServerWrittenRcode, Qclass, Qtype, Rcode } from '../../src/dns/constants.js';
import { rcodeOf, replyTo, setFlag, setRcode, type Message } from '../../src/dns/message.js';
import { bytesToIPv6, ipv6ToBytes } from '../../src/dns/name.js';
import { nextOrFailure, type Handler, type PluginDef } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import * as metrics from './metrics.js';
import { parseSiit, SIIT_OPTIONS, type SiitConfig } from './setup.js';

/** TTL cap when the A reply has no SOA (RFC 6147 §5.1.7). */
const DEFAULT_SOA_TTL = 600;

/** RFC 6052 §2.2 in reverse: the IPv4 address embedded after a prefix of `length` bits, skipping byte 8. */
export function extractIPv4(v6: Uint8Array, length: number): string {
  const out: number[] = [];
  let i = length / 8;
  for (; i < 8 && out.length < 4; i++) out.push(v6[i]!);
  if (i === 8) i++;
  for (; out.length < 4; i++) out.push(v6[i]!);
  return out.join('.');
}

/** The IPv4 address for an AAAA record's address, or null when neither an eam entry nor the prefix maps it. */
export function toIPv4(cfg: SiitConfig, text: string): string | null {
  const addr = ipv6ToBytes(text);
  if (addr === undefined) return null;
  // An IPv4-mapped address is IPv4 to Go (To4), and never translated.
  if (addr.subarray(0, 10).every((x) => x === 0) && addr[10] === 0xff && addr[11] === 0xff) return null;
  // RFC 7757 §3.3.2: the explicit mappings first.
  const mapped = cfg.eam.size > 0 ? cfg.eam.get(bytesToIPv6(addr)) : undefined;
  if (mapped !== undefined) return mapped;
  for (let bit = 0; bit < cfg.length; bit += 8) if (addr[bit / 8] !== cfg.prefix[bit / 8]) return null;
  // The reserved "u" octet must be zero in the address too (it is the address's below /96).
  if (addr[8] !== 0) return null;
  return extractIPv4(addr, cfg.length);
}

/** CoreDNS's response.Typify says NameError: NXDOMAIN without answers. */
function isNameError(m: Message): boolean {
  return rcodeOf(m) === Rcode.NXDOMAIN && m.answers.length === 0;
}

export class SiitHandler implements Handler {
  readonly name = 'siit';
  constructor(
    private readonly cfg: SiitConfig,
    private readonly next: Handler | null,
  ) {}

  serve(q: Query): number | Promise<number> {
    if (q.qtype !== Qtype.A || q.qclass !== Qclass.IN) return nextOrFailure(this.name, this.next, q);
    return this.translate(q);
  }

  private async translate(q: Query): Promise<number> {
    const rc = await nextOrFailure(this.name, this.next, q);
    const orig = q.reply;
    if (orig === null) return rc;
    const om = orig.peek();
    if ((om.flags ?? 0) & Flag.TC || isNameError(om) || om.answers.some((r) => r.type === 'A')) return rc;
    // The AAAA records of the same name, from the chain below.
    const sub = q.derive(q.name, Qtype.AAAA);
    const src = await nextOrFailure(this.name, this.next, sub);
    let resp: Message;
    if (sub.reply !== null) resp = sub.reply.peek();
    else if (isServerWrittenRcode(src)) resp = replyTo(sub.request, src);
    else return q.fail(sub.error ?? new Error('siit: upstream lookup returned no response'), Rcode.SERVFAIL);
    const rcode = rcodeOf(resp) & 0xf;
    if (rcode !== Rcode.NOERROR) {
      // The AAAA lookup failed: its RCODE, flags and sections under the client's own question.
      q.write(this.envelope(q, resp, rcode, [...resp.answers]), this.name);
      return rcode;
    }
    const answers = this.synthesize(om, resp);
    // Nothing mappable: the A reply stands, uncounted.
    if (answers === null) return rc;
    q.write(this.envelope(q, resp, Rcode.NOERROR, answers), this.name);
    metrics.translated.labels(q.transport.server).inc();
    return Rcode.NOERROR;
  }

  /** A reply to the client's A question with the AAAA reply's AA, RA, TC, authority and additional. */
  private envelope(q: Query, resp: Message, rcode: number, answers: Answer[]): Message {
    const m = replyTo(q.request);
    setRcode(m, rcode);
    const f = resp.flags ?? 0;
    setFlag(m, Flag.AA, (f & Flag.AA) !== 0);
    setFlag(m, Flag.RA, (f & Flag.RA) !== 0);
    setFlag(m, Flag.TC, (f & Flag.TC) !== 0);
    m.answers = answers;
    m.authorities = [...resp.authorities];
    m.additionals = [...resp.additionals];
    return m;
  }

  /** The answer section with each mappable AAAA as an A record (others unchanged); null when none mapped. */
  synthesize(aReply: Message, resp: Message): Answer[] | null {
    let soaTtl = DEFAULT_SOA_TTL;
    for (const r of aReply.authorities) if (r.type === 'SOA') soaTtl = r.ttl ?? 0;
    let mappedAny = false;
    const out: Answer[] = [];
    for (const r of resp.answers) {
      if (r.type !== 'AAAA') {
        out.push(r);
        continue;
      }
      const v4 = toIPv4(this.cfg, r.data);
      if (v4 === null) continue;
      mappedAny = true;
      out.push({ name: r.name, type: 'A', class: r.class, ttl: Math.min(r.ttl ?? 0, soaTtl), data: v4 });
    }
    return mappedAny ? out : null;
  }
}

export const siit: PluginDef = {
  name: 'siit',
  repeat: 'all',
  options: SIIT_OPTIONS,
  setup(d) {
    const cfg = parseSiit(d);
    return (next) => new SiitHandler(cfg, next);
  },
};
