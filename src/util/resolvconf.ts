/**
 * The search list of a resolv.conf text, as glibc's resolver (and miekg/dns, which CoreDNS uses)
 * reads it: `search A B...` sets the list to its words, `domain X` sets it to `[X]` (the first word
 * only), and whichever of the two comes last wins. Names are lower-cased and made absolute.
 * Used by autopath (a resolv.conf RESOLV-CONF) and kubernetes (the node's search path for pods).
 */
import { fqdn } from '../dns/name.js';

export function resolvConfSearch(text: string): string[] {
  let out: string[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[0] === 'search') out = f.slice(1);
    else if (f[0] === 'domain') out = f.slice(1, 2);
  }
  return out.filter((d) => d !== '').map((d) => fqdn(d.toLowerCase()));
}

/**
 * The `nameserver` addresses of a resolv.conf text, as miekg/dns's ClientConfigFromReader keeps
 * them (comments stripped, the address as written, zone included). Used by the grpc plugin's
 * resolv.conf TOs.
 */
export function resolvConfNameservers(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const f = line
      .replace(/[#;].*$/, '')
      .trim()
      .split(/\s+/);
    if (f[0] === 'nameserver' && f.length >= 2) out.push(f[1]!);
  }
  return out;
}
