/**
 * Byte-level helper for forwarded messages: the client's id and question spelling put back into
 * the reply. Replies are never decoded on the forward path.
 */

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
