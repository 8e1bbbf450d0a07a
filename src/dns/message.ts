/**
 * The decoded message type used by plugins: dns-packet's `Packet`. Conventions (dns-packet's):
 * names carry no trailing dot (root is `.`), `flags` holds the whole 16-bit flags word except QR
 * (including opcode and the low 4 bits of the RCODE), and EDNS is an `OPT` record in
 * `additionals`. Use the helpers below instead of poking bits by hand.
 */
import type * as DnsPacket from 'dns-packet';
import type { Answer, Packet, Question } from 'dns-packet';
import { requireCjs } from '../util/require.js';
import { Flag, replyHeaderBits } from './constants.js';

const dnsPacket = requireCjs('dns-packet') as typeof DnsPacket;

export type Message = Packet & {
  questions: Question[];
  answers: Answer[];
  authorities: Answer[];
  additionals: Answer[];
  /** Present on decoded messages (dns-packet's decode sets them; encode ignores them). */
  readonly flag_qr?: boolean;
  readonly flag_aa?: boolean;
  readonly flag_tc?: boolean;
  readonly flag_rd?: boolean;
  readonly flag_ra?: boolean;
  readonly flag_ad?: boolean;
  readonly flag_cd?: boolean;
};
export type Record = Answer;
export type { Question };

export const decode = (buf: Buffer): Message => dnsPacket.decode(buf) as Message;

export function rcodeOf(msg: Packet): number {
  const low = (msg.flags ?? 0) & 0xf;
  const opt = msg.additionals?.find((r) => r.type === 'OPT') as { extendedRcode?: number } | undefined;
  return ((opt?.extendedRcode ?? 0) << 4) | low;
}

export function setRcode(msg: Packet, rcode: number): void {
  msg.flags = ((msg.flags ?? 0) & ~0xf) | (rcode & 0xf);
}

export function hasFlag(msg: Packet, flag: number): boolean {
  return ((msg.flags ?? 0) & flag) !== 0;
}

export function setFlag(msg: Packet, flag: number, on: boolean): void {
  msg.flags = on ? (msg.flags ?? 0) | flag : (msg.flags ?? 0) & ~flag;
}

/**
 * A reply skeleton for `req` the way miekg/dns `SetReply` builds it: same id and opcode, RD and CD
 * for a QUERY, QR set, the question copied (client's letter case), no records.
 */
export function replyTo(req: Packet, rcode = 0, authoritative = false): Message {
  const keep = replyHeaderBits(req.flags ?? 0);
  return {
    id: req.id ?? 0,
    type: 'response',
    flags: keep | (authoritative ? Flag.AA : 0) | (rcode & 0xf),
    questions: (req.questions ?? []).map((q) => ({ ...q })),
    answers: [],
    authorities: [],
    additionals: [],
  };
}
