/**
 * The tsig handler (CoreDNS 1.15.0 plugin/tsig/tsig.go). The request's TSIG is verified with the
 * keys of every block on the listener (src/dns/tsig.ts; CoreDNS's server does it before routing);
 * for a name in the plugin's zones this handler acts on the result:
 * - a TSIG RR that is not the last record: FORMERR, whatever the zone;
 * - no TSIG where `require`/`require_opcode` asks for one: REFUSED;
 * - a failed TSIG: NOTAUTH with a TSIG RR carrying BADKEY, BADSIG or BADTIME;
 * - a valid TSIG: stripped from the request, the chain answers, and every reply is signed.
 * A query without TSIG, or outside the zones, costs a null check and a set lookup.
 */
import { Flag, qtypeName, Rcode, replyHeaderBits } from '../../src/dns/constants.js';
import { matchZone } from '../../src/dns/name.js';
import { readTsig, TsigError, TsigSigner, verifyTsig } from '../../src/dns/tsig.js';
import type { Logger } from '../../src/log.js';
import { nextOrFailure, type Handler } from '../../src/plugin.js';
import type { Query } from '../../src/query.js';
import { tsigNow } from '../../src/tsig.js';
import { normalizeKeyName, type TsigConfig } from './setup.js';

/** miekg/dns's error texts, as CoreDNS's debug line prints the verification's failure. */
const FAILURE_TEXT: Readonly<Record<number, string>> = {
  [TsigError.BADKEY]: 'dns: bad secret',
  [TsigError.BADSIG]: 'dns: bad signature',
  [TsigError.BADTIME]: 'dns: bad time',
};

/**
 * `new(dns.Msg).SetRcode(r, rcode)`: the request's id and question, the header bits SetReply
 * copies, no records. The server adds the OPT (and, once a signer is set, the TSIG).
 */
function rcodeReply(q: Query, rcode: number): Buffer {
  const raw = q.raw;
  const end = q.req.questionEnd;
  const out = Buffer.allocUnsafe(end);
  raw.copy(out, 0, 0, end);
  out.writeUInt16BE(replyHeaderBits(raw.readUInt16BE(2)) | Flag.QR | rcode, 2);
  out.writeUInt16BE(1, 4);
  out.writeUInt32BE(0, 6);
  out.writeUInt16BE(0, 10);
  return out;
}

export class TsigHandler implements Handler {
  readonly name = 'tsig';

  constructor(
    private readonly cfg: TsigConfig,
    private readonly next: Handler | null,
    private readonly log: Logger,
  ) {}

  private required(qtype: number, opcode: number): boolean {
    const c = this.cfg;
    return c.allTypes || c.types.has(qtype) || c.allOpcodes || c.opcodes.has(opcode);
  }

  serve(q: Query): number | Promise<number> {
    const req = q.req;
    if (req.tsigAt >= 0 && !req.tsigLast) {
      q.writeWire(rcodeReply(q, Rcode.FORMERR), this.name);
      return Rcode.FORMERR;
    }
    const t = q.tsig;
    if (t === null) {
      if (!this.required(req.qtype, req.opcode) || matchZone(this.cfg.zones, req.lname) === undefined)
        return nextOrFailure(this.name, this.next, q);
      this.log.debug(`rejecting '${qtypeName(req.qtype)}' request without TSIG\n`);
      q.writeWire(rcodeReply(q, Rcode.REFUSED), this.name);
      return Rcode.REFUSED;
    }
    if (matchZone(this.cfg.zones, req.lname) === undefined) return nextOrFailure(this.name, this.next, q);
    const rec = readTsig(q.raw, req.tsigAt);
    if (rec === null) {
      // Records the listener could skip but whose TSIG RDATA does not hold together: miekg/dns
      // could not unpack the message at all.
      q.writeWire(rcodeReply(q, Rcode.FORMERR), this.name);
      return Rcode.FORMERR;
    }
    const error = verifyTsig(q.raw, rec, t.keys, tsigNow());
    // Later plugins do not see the TSIG (RFC 8945 §5.5 is not followed: tsig's README, Bugs).
    q.stripTsig(rec);
    t.signer = new TsigSigner(rec, t.keys.get(rec.name), error);
    if (error !== 0) {
      this.log.debug(`TSIG validation failed: ${qtypeName(req.qtype)} ${FAILURE_TEXT[error]}`);
      q.writeWire(rcodeReply(q, Rcode.NOTAUTH), this.name);
      return Rcode.NOTAUTH;
    }
    t.keyName = normalizeKeyName(rec.name);
    // Nothing written below: the server writes the bare reply, which the signer signs too.
    return nextOrFailure(this.name, this.next, q);
  }
}
