/**
 * Serving a stored reply again (the cache's entries, the kubernetes plugin's precomputed answers):
 * a fresh copy of the stored bytes patched for one query — its id, the header flags the owner
 * computed, the question as this client spelled it (DNS 0x20: the stored copy has another
 * client's letter case) and, for the cache, the TTLs counted down. Patching bytes in place keeps
 * these hits free of any decode or encode (docs/plugins.md, cache, "Serving hits").
 */
import { copyBytes, loadBytes, type StoredBytes } from './wire.js';

/**
 * A copy of `stored` with `id`, `flags` and the client's question (`raw` up to `questionEnd`)
 * written over the stored header and question. The question is copied only when it has the
 * stored question's length (`storedQuestionEnd`), that is when it is the same name: the bytes
 * after it are the stored records.
 */
export function replayStored(
  stored: StoredBytes,
  id: number,
  flags: number,
  raw: Buffer,
  questionEnd: number,
  storedQuestionEnd: number,
): Buffer {
  const buf = loadBytes(stored);
  buf.writeUInt16BE(id, 0);
  buf.writeUInt16BE(flags, 2);
  if (questionEnd === storedQuestionEnd) copyBytes(raw, 12, questionEnd, buf, 12);
  return buf;
}

/** Set every TTL field at `offsets` (offsets of 32-bit TTLs in `buf`) to `ttl`. */
export function setTtls(buf: Buffer, offsets: readonly number[], ttl: number): void {
  for (const o of offsets) buf.writeUInt32BE(ttl >>> 0, o);
}
