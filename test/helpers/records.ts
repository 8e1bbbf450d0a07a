/**
 * The one text form of DNS records in test assertions: `rrLines`, the records of a section as an
 * operator reads them in dig's answer section.
 */
import type { Answer } from 'dns-packet';

export interface RecordTextOptions {
  /**
   * Print the SOA serial as `<serial>`: for answers whose serial follows the clock or the cluster
   * (the kubernetes plugin, the control-plane suite), not the test.
   */
  readonly maskSerial?: boolean;
}

/**
 * The records of a section, one `owner TTL CLASS TYPE rdata` line each as dig prints them (single
 * spaces instead of tabs): absolute names with their trailing dot, TXT strings quoted and escaped,
 * unknown types in RFC 3597 form (`TYPE65280 \# 3 010203`). The OPT pseudo-record is left out —
 * dig prints it apart, as the OPT PSEUDOSECTION — so an additional section can be passed whole.
 * A type with no presentation form here throws, naming it, rather than printing something vague.
 */
export function rrLines(rrs: readonly Answer[] | undefined, o: RecordTextOptions = {}): string[] {
  return (rrs ?? []).filter((rr) => rr.type !== 'OPT').map((rr) => line(rr, o));
}

function line(rr: Answer, o: RecordTextOptions): string {
  const { ttl, class: klass } = rr as { ttl?: number; class?: string };
  return `${abs(rr.name)} ${ttl ?? 0} ${mnemonic(klass ?? 'IN', 'CLASS')} ${mnemonic(rr.type, 'TYPE')} ${rdata(rr, o)}`;
}

/** dns-packet names what it does not know `UNKNOWN_n`; dig says `TYPEn` / `CLASSn`. */
function mnemonic(name: string, generic: 'TYPE' | 'CLASS'): string {
  return name.startsWith('UNKNOWN_') ? `${generic}${name.slice('UNKNOWN_'.length)}` : name;
}

function abs(name: string): string {
  return name.endsWith('.') ? name : `${name}.`;
}

function rdata(rr: Answer, o: RecordTextOptions): string {
  switch (rr.type) {
    case 'A':
    case 'AAAA':
      return rr.data;
    case 'CNAME':
    case 'DNAME':
    case 'NS':
    case 'PTR':
      return abs(rr.data);
    case 'MX':
      return `${rr.data.preference ?? 0} ${abs(rr.data.exchange)}`;
    case 'SRV':
      return `${rr.data.priority ?? 0} ${rr.data.weight ?? 0} ${rr.data.port} ${abs(rr.data.target)}`;
    case 'SOA': {
      const s = rr.data;
      const serial = o.maskSerial ? '<serial>' : String(s.serial);
      return `${abs(s.mname)} ${abs(s.rname)} ${serial} ${s.refresh} ${s.retry} ${s.expire} ${s.minimum}`;
    }
    case 'TXT': {
      const strings = Array.isArray(rr.data) ? rr.data : [rr.data];
      return strings.map((s) => quoted(typeof s === 'string' ? Buffer.from(s) : s)).join(' ');
    }
    case 'HINFO':
      return `${quoted(Buffer.from(rr.data.cpu))} ${quoted(Buffer.from(rr.data.os))}`;
    case 'CAA':
      return `${rr.data.flags ?? 0} ${rr.data.tag} ${quoted(Buffer.from(rr.data.value))}`;
    default: {
      const data = (rr as { data?: unknown }).data;
      // dns-packet leaves the rdata of a type it does not know as the raw octets.
      if (Buffer.isBuffer(data) && rr.type.startsWith('UNKNOWN_')) return `\\# ${data.length} ${data.toString('hex')}`;
      throw new Error(`rrLines: no presentation form for ${rr.type} records yet; add it to test/helpers/records.ts`);
    }
  }
}

/** A character-string as dig quotes it: `"` and `\` escaped, other non-printing octets as `\DDD`. */
function quoted(s: Buffer): string {
  let out = '"';
  for (const b of s) {
    if (b === 0x22 || b === 0x5c) out += `\\${String.fromCharCode(b)}`;
    else if (b < 0x20 || b > 0x7e) out += `\\${String(b).padStart(3, '0')}`;
    else out += String.fromCharCode(b);
  }
  return `${out}"`;
}
