/**
 * Go's `sort.Strings` order: by UTF-8 bytes. CoreDNS's sorted glob results and encoding/json's map
 * keys follow it, so the imports and the configuration hash do too.
 */
export function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
