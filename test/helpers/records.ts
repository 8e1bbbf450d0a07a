/**
 * The one text form of DNS records in test assertions: `rrLines`, the records of a section as an
 * operator reads them in dig's answer section.
 */
import type * as dnsPacket from 'dns-packet';
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

// The two formatters below are what the tests used before rrLines; they go once every test has moved.

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

const absName = (n: string): string => (n === '.' || n.endsWith('.') ? n : `${n}.`);

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
      data = absName(String(d));
      break;
    case 'SRV': {
      const s = d as { priority: number; weight: number; port: number; target: string };
      data = `${s.priority} ${s.weight} ${s.port} ${absName(s.target)}`;
      break;
    }
    case 'TXT':
      data = (d as Buffer[]).map((b) => `"${b.toString()}"`).join(' ');
      break;
    case 'SOA': {
      const s = d as { mname: string; rname: string; refresh: number; retry: number; expire: number; minimum: number };
      data = `${absName(s.mname)} ${absName(s.rname)} <serial> ${s.refresh} ${s.retry} ${s.expire} ${s.minimum}`;
      break;
    }
    default:
      data = JSON.stringify(d);
  }
  return `${absName(rr.name)} ${r.ttl ?? 0} ${rr.type} ${data}`;
}
