/**
 * The text forms of DNS records in test assertions, in one place: `rrStrings` for compact
 * assertions on dns-packet answers, `fmt` for presentation form with absolute names and the SOA
 * serial masked.
 */
import type * as dnsPacket from 'dns-packet';
import type { Answer } from 'dns-packet';

/** Answer records as `name ttl TYPE data` strings, for compact assertions. */
export function rrStrings(rrs: dnsPacket.Answer[]): string[] {
  return rrs
    .filter((r) => r.type !== 'OPT')
    .map((r) => {
      const a = r as dnsPacket.Answer & { ttl?: number; data?: unknown };
      const data =
        typeof a.data === 'object' && a.data !== null && !Buffer.isBuffer(a.data)
          ? Object.values(a.data as object)
              .map((v) => (Buffer.isBuffer(v) ? v.toString() : String(v)))
              .join(' ')
          : Array.isArray(a.data)
            ? a.data.map(String).join(' ')
            : String(a.data);
      return `${a.name}. ${a.ttl ?? 0} ${a.type} ${data}`;
    });
}

const abs = (n: string): string => (n === '.' || n.endsWith('.') ? n : `${n}.`);

/**
 * One record in presentation form, `owner ttl TYPE rdata`, with absolute names, quoted TXT strings
 * and the SOA serial printed as `<serial>` (it follows the clock or the cluster, not the test): for
 * comparing answers that hold names and SOAs (kubernetes, the control-plane suite).
 */
export function fmt(rr: Answer): string {
  const r = rr as Answer & { ttl?: number; data?: unknown };
  const d = r.data as Record<string, unknown> | string | Buffer[];
  let data: string;
  switch (rr.type) {
    case 'A':
    case 'AAAA':
      data = String(d);
      break;
    case 'CNAME':
    case 'PTR':
    case 'NS':
      data = abs(String(d));
      break;
    case 'SRV': {
      const s = d as { priority: number; weight: number; port: number; target: string };
      data = `${s.priority} ${s.weight} ${s.port} ${abs(s.target)}`;
      break;
    }
    case 'TXT':
      data = (d as Buffer[]).map((b) => `"${b.toString()}"`).join(' ');
      break;
    case 'SOA': {
      const s = d as { mname: string; rname: string; refresh: number; retry: number; expire: number; minimum: number };
      data = `${abs(s.mname)} ${abs(s.rname)} <serial> ${s.refresh} ${s.retry} ${s.expire} ${s.minimum}`;
      break;
    }
    default:
      data = JSON.stringify(d);
  }
  return `${abs(rr.name)} ${r.ttl ?? 0} ${rr.type} ${data}`;
}
