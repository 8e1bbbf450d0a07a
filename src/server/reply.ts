/**
 * The last step of the reply pipeline (docs/corefile.md §7.4): EDNS in replies, and fitting the reply
 * into the client's buffer with truncation. Wire replies that already fit leave untouched except
 * for an appended OPT record; only oversize replies are decoded and re-encoded. The id and the OPT
 * are patched in place unless the reply's bytes are shared (`Reply.isShared`), then in a copy.
 */
import { Flag, Opcode, Qtype, Rcode, DEFAULT_MAX_UDP_SIZE, replyHeaderBits } from '../dns/constants.js';
import { encodeFitted } from '../dns/encode.js';
import type { Message } from '../dns/message.js';
import { forEachRecord, type Edns, type ParsedRequest } from '../dns/wire.js';
import type { EdnsOption, Reply } from '../query.js';
import type { Proto } from '../query.js';

/** Size of the OPT record replyOpt builds: root name, type, class, TTL, RDLENGTH 0. */
const OPT_RR_SIZE = 11;

/**
 * OPT RR bytes for a reply to a query with EDNS, as CoreDNS 1.15.0 builds it from the query's OPT
 * (request.SizeAndDo): version 0, the client's UDP size, the high byte of the flags word (DO and
 * the upper Z bits) kept and the low byte cleared, and no options — since 1.15.0 CoreDNS echoes
 * only options a plugin registered, and no clusterdns plugin handles one.
 */
export function replyOpt(edns: Edns): Buffer {
  const rr = Buffer.allocUnsafe(OPT_RR_SIZE);
  rr[0] = 0;
  rr.writeUInt16BE(Qtype.OPT, 1);
  rr.writeUInt16BE(edns.udpSize, 3);
  rr[5] = 0; // extended rcode
  rr[6] = 0; // version
  rr.writeUInt16BE(edns.flags & 0xff00, 7);
  rr.writeUInt16BE(0, 9);
  return rr;
}

/** Buffer limit for a reply: 512 without EDNS, the client's size (≥512, ≤ ours) with EDNS, 65535 on TCP. */
export function sizeLimit(req: ParsedRequest, proto: Proto, maxUdp = DEFAULT_MAX_UDP_SIZE): number {
  if (proto === 'tcp') return 65535;
  if (!req.edns) return 512;
  return Math.max(512, Math.min(req.edns.udpSize, Math.max(512, maxUdp)));
}

/** Where the OPT record of a wire message starts (`rr`) and its TYPE field (`type`), or null when it has none or is malformed. */
function findOpt(buf: Buffer): { rr: number; type: number } | null {
  if (buf.readUInt16BE(10) === 0) return null;
  let found: { rr: number; type: number } | null = null;
  const ok = forEachRecord(buf, (section, rr, typeOff) => {
    if (section === 2 && buf.readUInt16BE(typeOff) === Qtype.OPT) found = { rr, type: typeOff };
  });
  if (!ok) return null;
  return found;
}

/**
 * Produce the bytes to send for `reply` to `req` over `proto`. Sets the reply id to the query's,
 * handles OPT per §7.4 and truncates to the client's buffer.
 */
export function finalizeReply(reply: Reply, req: ParsedRequest, proto: Proto, maxUdp = DEFAULT_MAX_UDP_SIZE): Buffer {
  const limit = sizeLimit(req, proto, maxUdp);
  // Options a plugin attached (nsid): merged into the OPT on the decoded path.
  if (reply.ednsOptions !== null && req.edns) return fitMessage(reply.message(), req, limit, reply.ednsOptions);
  if (!reply.isWire) return fitMessage(reply.message(), req, limit);
  let buf = reply.wire();
  const opt = req.edns ? findOpt(buf) : null;
  // Too large once the OPT record is appended: decode and fit by dropping whole records.
  if (buf.length + (req.edns && !opt ? OPT_RR_SIZE : 0) > limit) return fitMessage(reply.message(), req, limit);
  if (req.edns) {
    if (!opt) {
      const rr = replyOpt(req.edns);
      const out = Buffer.allocUnsafe(buf.length + rr.length);
      buf.copy(out, 0);
      rr.copy(out, buf.length);
      out.writeUInt16BE(out.readUInt16BE(10) + 1, 10);
      buf = out;
    } else {
      // Normalise the plugin's/upstream's OPT as CoreDNS's SizeAndDo: version 0, the client's
      // size, the low flag byte cleared, DO added when the client set it (a DO the reply's own
      // OPT carries stays, as for acl's EDE replies).
      buf = reply.mutableWire();
      buf.writeUInt16BE(req.edns.udpSize, opt.type + 2);
      buf[opt.type + 5] = 0;
      buf.writeUInt16BE((buf.readUInt16BE(opt.type + 6) & 0xff00) | (req.edns.do ? 0x8000 : 0), opt.type + 6);
    }
  }
  if (buf.readUInt16BE(0) !== req.id) {
    if (buf === reply.wire()) buf = reply.mutableWire();
    buf.writeUInt16BE(req.id, 0);
  }
  return buf;
}

function fitMessage(
  msg: Message,
  req: ParsedRequest,
  limit: number,
  extra: readonly EdnsOption[] | null = null,
): Buffer {
  msg.id = req.id;
  msg.type = 'response';
  const optIndex = msg.additionals.findIndex((r) => r.type === 'OPT');
  if (req.edns) {
    const opt = {
      type: 'OPT' as const,
      name: '.',
      udpPayloadSize: req.edns.udpSize,
      extendedRcode: 0,
      ednsVersion: 0,
      flags: req.edns.do ? 0x8000 : 0,
      options: [] as { code: number; data: Buffer }[],
    };
    if (optIndex >= 0) {
      const existing = msg.additionals[optIndex] as unknown as {
        options?: { code: number; data: Buffer }[];
        extendedRcode?: number;
        flags?: number;
      };
      opt.options = existing.options ?? [];
      opt.extendedRcode = existing.extendedRcode ?? 0;
      opt.flags = ((existing.flags ?? 0) & 0xff00) | opt.flags;
      msg.additionals[optIndex] = opt as unknown as Message['additionals'][number];
    } else if (extra !== null) {
      // The OPT CoreDNS's plugins add for their options (miekg/dns SetEdns0(size, true)) has DO.
      opt.flags = 0x8000;
      msg.additionals.push(opt as unknown as Message['additionals'][number]);
    } else {
      opt.flags = req.edns.flags & 0xff00;
      msg.additionals.push(opt as unknown as Message['additionals'][number]);
    }
    if (extra !== null) {
      // Replace an option of the same code in place, else append (CoreDNS's nsid).
      opt.options = [...opt.options];
      for (const e of extra) {
        const i = opt.options.findIndex((o) => o.code === e.code);
        if (i >= 0) opt.options[i] = { code: e.code, data: e.data };
        else opt.options.push({ code: e.code, data: e.data });
      }
    }
  }
  const { buf } = encodeFitted(msg, limit);
  return buf;
}

/**
 * A bare reply written by the server itself (rcode returned without a written reply, routing
 * failures, FORMERR/NOTIMP): header copied from the query (id, opcode, RD and CD, but for NOTIFY), QR set, the
 * question if it could be read, the rcode, and an OPT only if the query had one.
 */
export function bareReply(raw: Buffer, questionEnd: number, rcode: number, edns: Edns | null): Buffer {
  const flags = raw.readUInt16BE(2);
  // A NOTIFY went through the chain, whose reply miekg/dns SetReply builds (no RD/CD); any other
  // opcode here is QUERY or one refused with NOTIMP before the chain, where miekg/dns turns the
  // request itself into the reply and keeps its header bits.
  const header =
    ((flags >> 11) & 0xf) === Opcode.NOTIFY ? replyHeaderBits(flags) : flags & (0x7800 | Flag.RD | Flag.CD);
  const keep = header | Flag.QR | (rcode & 0xf);
  const qlen = questionEnd > 12 ? questionEnd - 12 : 0;
  const opt = edns ? replyOpt(edns) : null;
  if (opt && rcode > 15) opt[5] = rcode >> 4;
  // BADVERS carries a fresh OPT (CoreDNS edns.Version): no UDP size, no flags.
  if (opt && rcode === Rcode.BADVERS) opt.fill(0, 3, 5).fill(0, 7, 9);
  const out = Buffer.allocUnsafe(12 + qlen + (opt ? opt.length : 0));
  out.writeUInt16BE(raw.readUInt16BE(0), 0);
  out.writeUInt16BE(keep, 2);
  out.writeUInt16BE(qlen ? 1 : 0, 4);
  out.writeUInt32BE(0, 6);
  out.writeUInt16BE(opt ? 1 : 0, 10);
  if (qlen) raw.copy(out, 12, 12, questionEnd);
  if (opt) opt.copy(out, 12 + qlen);
  return out;
}
