/** One resource record read from a master file, with the names and serial a server follows. */
import { canonicalName, labelsText } from './names.js';
import type { Parsed } from './rdata-reader.js';

export interface ZoneRecord {
  /** Owner name, absolute, in canonical text form (escapes as a wire name prints), letter case as written. */
  readonly name: string;
  readonly type: number;
  readonly class: number;
  readonly ttl: number;
  /** RDATA in wire form (uncompressed names). */
  readonly rdata: Buffer;
  /** The name in the RDATA a server follows: CNAME/DNAME/NS/PTR target, MX exchange, SRV target (canonical text). */
  readonly target?: string;
  /** RRSIG/SIG: the type covered. */
  readonly covered?: number;
  /** SOA: the serial. */
  readonly serial?: number;
  /** Where it was read (the $INCLUDEd file for included records). */
  readonly file: string;
  readonly line: number;
}

/** The owner, type, class and TTL of the record being read. */
export interface Header {
  name: string;
  type: number;
  class: number;
  ttl: number;
}

/**
 * The record of a header and its parsed RDATA, names in canonical text; a target, serial or covered
 * type the RDATA text did not give (RFC 3597 form) is read from the wire RDATA.
 */
export function record(h: Header, p: Parsed, file: string, line: number): ZoneRecord {
  const name = canonicalName(h.name) ?? h.name;
  const r: { -readonly [K in keyof ZoneRecord]: ZoneRecord[K] } = {
    name,
    type: h.type,
    class: h.class,
    ttl: h.ttl,
    rdata: p.rdata,
    file,
    line,
  };
  const target = p.target !== undefined ? canonicalName(p.target) : undefined;
  if (target !== undefined) r.target = target;
  else if (p.rdata.length > 0) fillFromWire(r);
  if (p.covered !== undefined) r.covered = p.covered;
  if (p.serial !== undefined) r.serial = p.serial;
  if (r.type === 46 && r.covered === undefined && r.rdata.length >= 2) r.covered = r.rdata.readUInt16BE(0);
  if (r.type === 6 && r.serial === undefined) fillFromWire(r);
  return r;
}

/** Targets and serials of records given in the RFC 3597 form. */
function fillFromWire(r: { type: number; rdata: Buffer; target?: string; serial?: number }): void {
  const readName = (off: number): [string, number] | undefined => {
    const labels: Buffer[] = [];
    for (;;) {
      const len = r.rdata[off];
      if (len === undefined || len > 63) return undefined;
      if (len === 0) return [labelsText(labels), off + 1];
      labels.push(r.rdata.subarray(off + 1, off + 1 + len));
      off += len + 1;
    }
  };
  switch (r.type) {
    case 2:
    case 5:
    case 12:
    case 39:
      r.target = readName(0)?.[0];
      break;
    case 15:
    case 64:
    case 65:
      r.target = readName(2)?.[0];
      break;
    case 33:
      r.target = readName(6)?.[0];
      break;
    case 6: {
      const a = readName(0);
      const b = a ? readName(a[1]) : undefined;
      if (b && r.rdata.length >= b[1] + 20) r.serial = r.rdata.readUInt32BE(b[1]);
      break;
    }
  }
  if (r.target === undefined) delete r.target;
}
