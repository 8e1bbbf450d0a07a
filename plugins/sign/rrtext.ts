/**
 * Records in the text form miekg/dns's `RR.String()` prints them (`name<TAB>ttl<TAB>IN<TAB>TYPE<TAB>
 * rdata`), for the signed zone file *sign* writes. The types a signed zone holds get their usual
 * presentation; any other type is written in RFC 3597 form (`\# LEN HEX`), which every zone reader
 * (clusterdns's, CoreDNS's, BIND's, ldns) takes.
 */
import { bytesToIPv6 } from '../../src/dns/name.js';
import { labelsText } from '../../src/dns/zonefile/names.js';
import { typeName } from '../../src/dns/zonefile/mnemonics.js';

/** The name at `off` of uncompressed wire `b` as text, and the offset after it. */
function name(b: Buffer, off: number): [string, number] {
  const labels: Buffer[] = [];
  while (off < b.length && b[off] !== 0) {
    labels.push(b.subarray(off + 1, off + 1 + b[off]!));
    off += b[off]! + 1;
  }
  return [labelsText(labels), off + 1];
}

/** miekg's TimeToString: YYYYMMDDHHmmSS (UTC) of a 32-bit serial time. */
export function timeText(t: number): string {
  return new Date(t * 1000).toISOString().replace(/[-:T]/g, '').slice(0, 14);
}

function bitmapTypes(b: Buffer, off: number): string[] {
  const out: string[] = [];
  while (off + 2 <= b.length) {
    const win = b[off]!;
    const len = b[off + 1]!;
    for (let i = 0; i < len; i++) {
      const byte = b[off + 2 + i]!;
      for (let bit = 0; bit < 8; bit++) if ((byte & (0x80 >> bit)) !== 0) out.push(typeName(win * 256 + i * 8 + bit));
    }
    off += 2 + len;
  }
  return out;
}

function txtStrings(b: Buffer): string {
  const parts: string[] = [];
  let off = 0;
  while (off < b.length) {
    const len = b[off]!;
    let s = '';
    for (const c of b.subarray(off + 1, off + 1 + len)) {
      if (c === 0x22 || c === 0x5c) s += `\\${String.fromCharCode(c)}`;
      else if (c < 0x20 || c > 0x7e) s += `\\${String(c).padStart(3, '0')}`;
      else s += String.fromCharCode(c);
    }
    parts.push(`"${s}"`);
    off += len + 1;
  }
  return parts.join(' ');
}

/** RDATA text of `type`, or null for the generic form. */
function rdataText(type: number, r: Buffer): string | null {
  switch (type) {
    case 1:
      return r.length === 4 ? [...r].join('.') : null;
    case 28:
      return r.length === 16 ? bytesToIPv6(r) : null;
    case 2:
    case 5:
    case 12:
    case 39:
      return name(r, 0)[0];
    case 6: {
      const [ns, o1] = name(r, 0);
      const [mbox, o2] = name(r, o1);
      const n = [0, 4, 8, 12, 16].map((i) => r.readUInt32BE(o2 + i));
      return `${ns} ${mbox} ${n.join(' ')}`;
    }
    case 15:
      return `${r.readUInt16BE(0)} ${name(r, 2)[0]}`;
    case 33:
      return `${r.readUInt16BE(0)} ${r.readUInt16BE(2)} ${r.readUInt16BE(4)} ${name(r, 6)[0]}`;
    case 16:
    case 99:
      return txtStrings(r);
    case 43:
    case 59:
      return `${r.readUInt16BE(0)} ${r[2]} ${r[3]} ${r.subarray(4).toString('hex').toUpperCase()}`;
    case 48:
    case 60:
      return `${r.readUInt16BE(0)} ${r[2]} ${r[3]} ${r.subarray(4).toString('base64')}`;
    case 46: {
      const [signer, end] = name(r, 18);
      return [
        typeName(r.readUInt16BE(0)),
        r[2],
        r[3],
        r.readUInt32BE(4),
        timeText(r.readUInt32BE(8)),
        timeText(r.readUInt32BE(12)),
        r.readUInt16BE(16),
        signer,
        r.subarray(end).toString('base64'),
      ].join(' ');
    }
    case 47: {
      const [next, end] = name(r, 0);
      return [next, ...bitmapTypes(r, end)].join(' ');
    }
    default:
      return null;
  }
}

/** One record as a zone-file line (without the newline). */
export function recordText(owner: string, type: number, ttl: number, rdata: Buffer): string {
  const text = rdataText(type, rdata) ?? `\\# ${rdata.length}${rdata.length > 0 ? ` ${rdata.toString('hex')}` : ''}`;
  return `${owner}\t${ttl}\tIN\t${typeName(type)}\t${text}`;
}
