/**
 * Byte-level helpers for forwarded messages: question comparison and the client's question
 * spelling. Replies are never decoded on the forward path.
 */
import { Flag, isServerWrittenRcode, Rcode } from '../../src/dns/constants.js';
import { lowerName, readName } from '../../src/dns/wire.js';

/** The question a reply must echo: lower-cased absolute name, type and class. */
export interface QuestionKey {
  readonly lname: string;
  readonly qtype: number;
  readonly qclass: number;
}

/**
 * True when `reply` is a response (QR=1) with exactly one question equal to `q` (name compared
 * case-insensitively, same type and class): the `state.Match` test of CoreDNS.
 */
export function replyMatches(reply: Buffer, q: QuestionKey): boolean {
  if (reply.length < 12) return false;
  if ((reply.readUInt16BE(2) & Flag.QR) === 0) return false;
  if (reply.readUInt16BE(4) !== 1) return false;
  const read = readName(reply, 12);
  if (!read) return false;
  const [name, end] = read;
  if (end + 4 > reply.length) return false;
  if (reply.readUInt16BE(end) !== q.qtype || reply.readUInt16BE(end + 2) !== q.qclass) return false;
  return lowerName(name) === q.lname;
}

/**
 * Give `reply` the client's id and the client's question bytes (letter case as asked). The
 * question is copied only when it has the same length and is stored uncompressed at offset 12
 * (always the case for a reply that matched the query).
 */
export function restoreClientHeader(reply: Buffer, id: number, raw: Buffer, questionEnd: number): void {
  reply.writeUInt16BE(id, 0);
  if (reply.length >= questionEnd && reply.readUInt16BE(4) === 1) {
    // Same name length and no compression pointer inside the first name → same layout.
    let off = 12;
    while (off < questionEnd - 4) {
      const len = reply[off]!;
      if (len === 0 || (len & 0xc0) !== 0) break;
      off += len + 1;
    }
    if (off === questionEnd - 5 && reply[off] === 0) raw.copy(reply, 12, 12, questionEnd - 4);
  }
}

/**
 * The status a plugin returns after writing a reply with `rcode` (docs/corefile.md §7.4): never one of
 * SERVFAIL/REFUSED/FORMERR/NOTIMP, which mean "nothing written, the server replies" — a written
 * upstream SERVFAIL is returned as NOERROR, as CoreDNS's forward does.
 */
export function writtenStatus(rcode: number): number {
  return isServerWrittenRcode(rcode) ? Rcode.NOERROR : rcode;
}
