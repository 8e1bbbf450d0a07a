/**
 * Message ids for queries clusterdns sends itself (forward, shadow).
 */
import { randomFillSync } from 'node:crypto';

const idPool = Buffer.alloc(4096);
let idOff = idPool.length;

/**
 * A 16-bit message id from the CSPRNG (ids guard forwarded queries against spoofed answers),
 * drawn from a refilled pool so that a query does not pay for a crypto call.
 */
export function randomId(): number {
  if (idOff >= idPool.length) {
    randomFillSync(idPool);
    idOff = 0;
  }
  const id = idPool.readUInt16BE(idOff);
  idOff += 2;
  return id;
}
