/**
 * The request as the rules rewrite it (docs/plugins.md, rewrite): question name, type, class and the
 * EDNS0 options, plus the response rules collected on the way. Created only once a rule matched;
 * `toQuery` turns it into the query the rest of the chain sees.
 */
import { Qtype } from '../../src/dns/constants.js';
import { nameToLabels } from '../../src/dns/encode.js';
import { lowerName } from '../../src/dns/name.js';
import { forEachRecord, parseRequest } from '../../src/dns/wire.js';
import { Query } from '../../src/query.js';
import type { ResponseRule } from './response.js';

export const EDNS_NSID = 3;
export const EDNS_SUBNET = 8;

export interface EdnsOption {
  readonly code: number;
  readonly data: Buffer;
}

/** Split OPT RDATA into options (a truncated trailing option is dropped). */
export function splitOptions(rdata: Buffer): EdnsOption[] {
  const out: EdnsOption[] = [];
  let off = 0;
  while (off + 4 <= rdata.length) {
    const code = rdata.readUInt16BE(off);
    const len = rdata.readUInt16BE(off + 2);
    if (off + 4 + len > rdata.length) break;
    out.push({ code, data: rdata.subarray(off + 4, off + 4 + len) });
    off += 4 + len;
  }
  return out;
}

export function joinOptions(opts: readonly EdnsOption[]): Buffer {
  const out = Buffer.alloc(opts.reduce((n, o) => n + 4 + o.data.length, 0));
  let off = 0;
  for (const o of opts) {
    out.writeUInt16BE(o.code, off);
    out.writeUInt16BE(o.data.length, off + 2);
    o.data.copy(out, off + 4);
    off += 4 + o.data.length;
  }
  return out;
}

export class RewriteState {
  /** Current question name (the client's letter case until a name rule rewrites it). */
  name: string;
  lname: string;
  qtype: number;
  qclass: number;
  /** Response rules, in the order the rules added them (applied in reverse). */
  readonly response: ResponseRule[] = [];
  /** A `stop` rule ended the rule list (the reply is then always reverted). */
  stopped = false;
  private changed = false;
  /** Rewritten EDNS0 options; null while no EDNS0 rule ran. */
  private opts: EdnsOption[] | null = null;

  constructor(readonly query: Query) {
    this.name = query.name;
    this.lname = query.lname;
    this.qtype = query.qtype;
    this.qclass = query.qclass;
  }

  setName(name: string): void {
    this.name = name;
    this.lname = lowerName(name);
    this.changed = true;
  }

  setType(t: number): void {
    this.qtype = t;
    this.changed = true;
  }

  setClass(c: number): void {
    this.qclass = c;
    this.changed = true;
  }

  /**
   * The request's EDNS0 options, for changing (a copy). Asking for them gives the request an OPT
   * record when it had none (4096 bytes, no DO), as CoreDNS's rules do whatever they then change.
   */
  options(): EdnsOption[] {
    if (this.opts === null) {
      this.opts = this.query.req.edns ? splitOptions(this.query.req.edns.options) : [];
      this.changed = true;
    }
    return this.opts.slice();
  }

  setOptions(opts: EdnsOption[]): void {
    this.opts = opts;
    this.changed = true;
  }

  /** The rewritten options, or null when no EDNS0 rule ran. */
  get ednsOptions(): readonly EdnsOption[] | null {
    return this.opts;
  }

  /** A metadata value of the query (`{plugin/label}`), or undefined. */
  metadata(label: string): string | undefined {
    return this.query.meta.get(label);
  }

  /** The query the next plugin sees: the original one when nothing in the request changed. */
  toQuery(): Query {
    const q = this.query;
    if (!this.changed) return q;
    if (this.opts === null && this.qclass === q.qclass) return q.derive(this.name, this.qtype);
    const raw = rebuildRequest(q, this.name, this.qtype, this.qclass, this.opts);
    const parsed = parseRequest(raw);
    if (parsed.kind !== 'query') throw new Error(`invalid request after rewrite: ${this.name}`);
    const d = new Query(raw, parsed.req, q.transport, q.start);
    d.zone = q.zone;
    d.depth = q.depth;
    return d;
  }
}

/**
 * The request's bytes with a new question and, when `opts` is given, an OPT record carrying
 * exactly those options (added with 4096 bytes and no flags when the request had none). Other
 * records are copied as they are.
 */
function rebuildRequest(
  q: Query,
  name: string,
  qtype: number,
  qclass: number,
  opts: readonly EdnsOption[] | null,
): Buffer {
  const raw = q.raw;
  const labels = nameToLabels(name);
  const qlen = labels.reduce((n, l) => n + 1 + l.length, 1) + 4;
  // Records after the question, minus the OPT record when it is replaced.
  let optStart = -1;
  let optEnd = -1;
  let optType = -1;
  forEachRecord(raw, (section, rr, typeOff) => {
    if (section === 2 && raw.readUInt16BE(typeOff) === Qtype.OPT && optStart < 0) {
      optStart = rr;
      optType = typeOff;
      optEnd = typeOff + 10 + raw.readUInt16BE(typeOff + 8);
    }
  });
  const rest = raw.subarray(q.req.questionEnd);
  let newOpt: Buffer | null = null;
  let arcount = raw.readUInt16BE(10);
  if (opts !== null) {
    const rdata = joinOptions(opts);
    newOpt = Buffer.alloc(11 + rdata.length);
    newOpt[0] = 0;
    newOpt.writeUInt16BE(Qtype.OPT, 1);
    if (q.req.edns) {
      newOpt.writeUInt16BE(q.req.edns.udpSize, 3);
      raw.copy(newOpt, 5, optType + 4, optType + 8); // extended rcode, version, flags
    } else {
      newOpt.writeUInt16BE(4096, 3);
      arcount++;
    }
    newOpt.writeUInt16BE(rdata.length, 9);
    rdata.copy(newOpt, 11);
  }
  const keep =
    newOpt && optStart >= 0 ? Buffer.concat([raw.subarray(q.req.questionEnd, optStart), raw.subarray(optEnd)]) : rest;
  const out = Buffer.alloc(12 + qlen + keep.length + (newOpt?.length ?? 0));
  raw.copy(out, 0, 0, 12);
  out.writeUInt16BE(1, 4);
  out.writeUInt16BE(arcount, 10);
  let off = 12;
  for (const l of labels) {
    out[off++] = l.length;
    l.copy(out, off);
    off += l.length;
  }
  out[off++] = 0;
  out.writeUInt16BE(qtype, off);
  out.writeUInt16BE(qclass, off + 2);
  off += 4;
  keep.copy(out, off);
  off += keep.length;
  newOpt?.copy(out, off);
  return out;
}
