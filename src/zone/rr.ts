/** A zone record as the zone serves it: its dns-packet answer, RDATA names lower-cased where CoreDNS does. */
import type * as DnsPacket from 'dns-packet';
import type { Answer } from 'dns-packet';
import { packetTypeName, qtypeFromName } from '../dns/constants.js';
import { toPacketName } from '../dns/name.js';
import { T } from '../dns/zonefile/mnemonics.js';
import { labelsText } from '../dns/zonefile/names.js';
import type { ZoneRecord } from '../dns/zonefile/record.js';
import { requireCjs } from '../util/require.js';

const dnsPacket = requireCjs('dns-packet') as typeof DnsPacket;

interface RdataCodec {
  encode: ((data: unknown, buf?: Buffer, offset?: number) => Buffer) & { bytes: number };
  decode: ((buf: Buffer, offset?: number) => unknown) & { bytes: number };
  encodingLength(data: unknown): number;
}
const codec = (dnsPacket as unknown as { record(type: string): RdataCodec }).record;

/** Types whose RDATA dns-packet decodes into objects (kept only when they encode back to the same bytes). */
const DECODED = new Set([
  'A',
  'AAAA',
  'NS',
  'CNAME',
  'PTR',
  'DNAME',
  'MX',
  'SOA',
  'SRV',
  'TXT',
  'CAA',
  'DS',
  'DNSKEY',
  'RRSIG',
  'NSEC',
  'HINFO',
  'SSHFP',
  'TLSA',
  'NAPTR',
  'RP',
]);

/** A record as the zone serves it. */
export interface RR {
  /** Lower-cased owner (canonical text) — the tree key. */
  readonly lname: string;
  readonly type: number;
  /** The record ready for a reply (dns-packet form). */
  readonly answer: Answer;
  /** Lower-cased CNAME/DNAME/NS/MX/SRV target. */
  readonly target?: string;
  /** RRSIG: the covered type. */
  readonly covered?: number;
  readonly serial?: number;
}

/** ASCII-lower-case the uncompressed name at `off` of `rdata` in place; the offset after it. */
function lowerWireName(rdata: Buffer, off: number): number {
  while (off < rdata.length) {
    const len = rdata[off]!;
    if (len === 0) return off + 1;
    for (let i = off + 1; i <= off + len && i < rdata.length; i++) {
      const c = rdata[i]!;
      if (c >= 0x41 && c <= 0x5a) rdata[i] = c + 0x20;
    }
    off += len + 1;
  }
  return off;
}

/** The RDATA with the names CoreDNS lower-cases (NS, CNAME, MX exchange, SOA mname/rname) lower-cased. */
function lowerTargetsInRdata(type: number, rdata: Buffer): Buffer {
  const out = Buffer.from(rdata);
  switch (type) {
    case T.NS:
    case T.CNAME:
      lowerWireName(out, 0);
      break;
    case T.MX:
    case T.SVCB:
    case T.HTTPS:
      lowerWireName(out, 2);
      break;
    case T.SOA:
      lowerWireName(out, lowerWireName(out, 0));
      break;
  }
  return out;
}

/** The dns-packet record for a zone record (RDATA names lower-cased where CoreDNS does). */
export function toAnswer(rec0: ZoneRecord, owner: string, lowerTargets: boolean): Answer {
  const rec =
    lowerTargets && rec0.rdata.length > 0 ? { ...rec0, rdata: lowerTargetsInRdata(rec0.type, rec0.rdata) } : rec0;
  const name = toPacketName(owner);
  const base = { name, class: rec.class === 1 ? 'IN' : `UNKNOWN_${rec.class}`, ttl: rec.ttl };
  let tname = packetTypeName(rec.type);
  let data: unknown = rec.rdata;
  if (DECODED.has(tname) && qtypeFromName(tname) === rec.type && rec.rdata.length > 0) {
    try {
      const c = codec(tname);
      const framed = Buffer.alloc(rec.rdata.length + 2);
      framed.writeUInt16BE(rec.rdata.length, 0);
      rec.rdata.copy(framed, 2);
      const d = c.decode(framed, 0);
      const back = c.encode(d);
      if (back.equals(framed)) data = d;
      else tname = `UNKNOWN_${rec.type}`;
    } catch {
      tname = `UNKNOWN_${rec.type}`;
    }
  } else if ((rec.type === T.SVCB || rec.type === T.HTTPS) && rec.target !== undefined) {
    // Wire RDATA with a well-formed target: the encoder writes it and registers the target name.
    tname = rec.type === T.SVCB ? 'SVCB' : 'HTTPS';
  } else tname = `UNKNOWN_${rec.type}`;
  return { ...base, type: tname, data } as Answer;
}

/** The target of SVCB/HTTPS wire RDATA (canonical text), or undefined when malformed. */
export function svcbTarget(rdata: Buffer): string | undefined {
  const labels: Buffer[] = [];
  for (let off = 2; off < rdata.length; ) {
    const len = rdata[off]!;
    if (len === 0) return labelsText(labels);
    if (len > 63 || off + 1 + len > rdata.length) return undefined;
    labels.push(rdata.subarray(off + 1, off + 1 + len));
    off += len + 1;
  }
  return undefined;
}
