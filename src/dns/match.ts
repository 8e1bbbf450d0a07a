/**
 * Does a reply answer the query it claims to? Used for replies clusterdns receives from other
 * servers (forward's upstreams, shadow's references).
 */
import { Flag } from './constants.js';
import { lowerName } from './name.js';
import { readName } from './wire.js';

/** The question a reply must echo: lower-cased absolute name, type and class. */
export interface QuestionKey {
  readonly lname: string;
  readonly qtype: number;
  readonly qclass: number;
}

/**
 * Why `reply` (at least a header long) is not a response (QR=1) with exactly one question equal
 * to `q` (name compared case-insensitively, same type and class), or null when it is: the
 * `state.Match` test of CoreDNS.
 */
export function questionMismatch(reply: Buffer, q: QuestionKey): string | null {
  if ((reply.readUInt16BE(2) & Flag.QR) === 0) return 'QR bit not set';
  if (reply.readUInt16BE(4) !== 1) return `${reply.readUInt16BE(4)} questions`;
  const read = readName(reply, 12);
  if (!read) return 'unreadable question';
  const [name, end] = read;
  if (end + 4 > reply.length) return 'question runs past the end';
  if (reply.readUInt16BE(end) !== q.qtype || reply.readUInt16BE(end + 2) !== q.qclass || lowerName(name) !== q.lname)
    return 'question differs from the query';
  return null;
}

/** True when `reply` is a header long and `questionMismatch` finds nothing wrong. */
export function replyMatches(reply: Buffer, q: QuestionKey): boolean {
  return reply.length >= 12 && questionMismatch(reply, q) === null;
}
