/**
 * One TSIG-signed request on its way through the chain (docs/plugins.md, tsig): the listener's
 * keys it is verified with, and — once the block's tsig plugin accepted it or answers its failure —
 * the signer of the replies and the validated key's name (CoreDNS's tsig.ValidatedKeyName, which
 * dynupdate reads). The dispatcher attaches one only to a request whose additional section holds a
 * TSIG RR; every other query carries null.
 */
import type { TsigKeyring, TsigSigner } from './dns/tsig.js';

export class TsigExchange {
  /** Signs every reply sent for the query (the server's, and each message of a transfer). */
  signer: TsigSigner | null = null;
  /** The normalised name of the key the request was verified with; null when not verified. */
  keyName: string | null = null;

  constructor(readonly keys: TsigKeyring) {}
}

/** Seconds since the epoch, the clock TSIG times are compared with. */
export function tsigNow(): number {
  return Math.floor(Date.now() / 1000);
}
