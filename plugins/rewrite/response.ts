/**
 * Response rules (docs/plugins.md, rewrite): what a matched rule does to the reply on its way back
 * to the client. Applied to every record of the authority, answer and additional sections (in that
 * order), the rules in the reverse order of the request rules that added them, as CoreDNS does.
 * Names are handled absolute (`a.example.`) and compared case-sensitively, as CoreDNS compares them.
 */
import * as dnsPacket from 'dns-packet';
import type { Answer } from 'dns-packet';
import { fqdn, toPacketName } from '../../src/dns/name.js';
import type { Message } from '../../src/dns/message.js';
import type { CnameTarget } from './rules/cname.js';
import { expandGroups } from './rules/regex.js';
import type { EdnsOption } from './state.js';

export interface StringRewriter {
  rewrite(src: string): string;
}

/** `answer name|value FROM TO`: FROM is a regex, TO may use `{N}` groups; no match = unchanged. */
export function regexRewriter(re: RegExp, replacement: string): StringRewriter {
  return {
    rewrite(src) {
      const m = re.exec(src);
      return m ? expandGroups(replacement, m) : src;
    },
  };
}

/** auto: the rewritten name (and names below it) mapped back to the name the client asked. */
export function remapRewriter(orig: string, replacement: string): StringRewriter {
  return {
    rewrite(src) {
      if (src === orig) return replacement;
      const i = src.length - orig.length;
      if (i > 0 && src.charCodeAt(i - 1) === 46 && src.endsWith(orig)) return src.slice(0, i) + replacement;
      return src;
    },
  };
}

/** auto for a suffix rule: the replaced suffix exchanged back. */
export function suffixRewriter(suffix: string, replacement: string): StringRewriter {
  return {
    rewrite(src) {
      return src.endsWith(suffix) ? src.slice(0, src.length - suffix.length) + replacement : src;
    },
  };
}

export interface ResponseRule {
  /** Apply to one record of the reply. */
  record(msg: Message, rr: Answer): void;
  /** A message-level rule (rcode): applied once to a reply without records. */
  message?(msg: Message): void;
  /** An EDNS0 revert rule: also undoes the request's change before OPT-less replies copy it. */
  revertOption?(opts: EdnsOption[]): void;
}

const isOpt = (rr: Answer): boolean => rr.type === 'OPT';

export class NameResponseRule implements ResponseRule {
  constructor(private readonly r: StringRewriter) {}
  record(_msg: Message, rr: Answer): void {
    if (isOpt(rr)) return; // the server rewrites the OPT owner to the root anyway
    const before = fqdn(rr.name);
    const after = this.r.rewrite(before);
    if (after !== before) rr.name = toPacketName(after);
  }
}

/** The name in a record's data that `answer value` rewrites, per type. */
function valueOf(rr: Answer): string | null {
  const d = (rr as { data?: unknown }).data;
  switch (rr.type) {
    case 'CNAME':
    case 'NS':
    case 'DNAME':
    case 'PTR':
      return typeof d === 'string' ? fqdn(d) : null;
    case 'SRV':
      return fqdn((d as { target: string }).target);
    case 'MX':
      return fqdn((d as { exchange: string }).exchange);
    case 'NAPTR':
      return fqdn((d as { replacement: string }).replacement);
    case 'SOA':
      return fqdn((d as { mname: string }).mname);
    default:
      return null;
  }
}

function setValue(rr: Answer, value: string): void {
  const v = toPacketName(value);
  const r = rr as { data: unknown };
  switch (rr.type) {
    case 'CNAME':
    case 'NS':
    case 'DNAME':
    case 'PTR':
      r.data = v;
      break;
    case 'SRV':
      r.data = { ...(r.data as object), target: v };
      break;
    case 'MX':
      r.data = { ...(r.data as object), exchange: v };
      break;
    case 'NAPTR':
      r.data = { ...(r.data as object), replacement: v };
      break;
    case 'SOA':
      r.data = { ...(r.data as object), mname: v };
      break;
  }
}

export class ValueResponseRule implements ResponseRule {
  constructor(private readonly r: StringRewriter) {}
  record(_msg: Message, rr: Answer): void {
    const value = valueOf(rr);
    if (value === null || value === '') return;
    const next = this.r.rewrite(value);
    if (next !== value) setValue(rr, next);
  }
}

export class TtlResponseRule implements ResponseRule {
  constructor(
    private readonly min: number,
    private readonly max: number,
  ) {}
  record(_msg: Message, rr: Answer): void {
    // The OPT pseudo-record's TTL field holds EDNS flags, which the server rebuilds on the way out.
    if (isOpt(rr)) return;
    const r = rr as { ttl?: number };
    const ttl = r.ttl ?? 0;
    if (ttl < this.min) r.ttl = this.min;
    else if (ttl > this.max) r.ttl = this.max;
  }
}

type OptRecord = { type: 'OPT'; extendedRcode?: number; options?: { code: number; data?: Buffer }[] };

function optOf(msg: Message): OptRecord | undefined {
  return msg.additionals?.find((r) => r.type === 'OPT') as unknown as OptRecord | undefined;
}

function fullRcode(msg: Message): number {
  return ((optOf(msg)?.extendedRcode ?? 0) << 4) | ((msg.flags ?? 0) & 0xf);
}

export class RcodeResponseRule implements ResponseRule {
  constructor(
    private readonly from: number,
    private readonly to: number,
  ) {}
  record(msg: Message): void {
    this.message(msg);
  }
  message(msg: Message): void {
    if (fullRcode(msg) !== this.from) return;
    msg.flags = ((msg.flags ?? 0) & ~0xf) | (this.to & 0xf);
    const opt = optOf(msg);
    if (opt) opt.extendedRcode = this.to >> 4;
  }
}

/** A decoded option object as dns-packet's encoder expects it for this code. */
export function packetOption(code: number, data: Buffer): { code: number; data?: Buffer } {
  const wire = Buffer.alloc(4 + data.length);
  wire.writeUInt16BE(code, 0);
  wire.writeUInt16BE(data.length, 2);
  data.copy(wire, 4);
  return (dnsPacket as unknown as { option: { decode(b: Buffer): { code: number; data?: Buffer } } }).option.decode(
    wire,
  );
}

/** `revert` of an option the rule added: removed from the reply's OPT. */
export class EdnsRemoveResponseRule implements ResponseRule {
  constructor(private readonly code: number) {}
  record(msg: Message): void {
    const opt = optOf(msg);
    if (!opt?.options) return;
    const i = opt.options.findIndex((o) => o.code === this.code);
    if (i >= 0) opt.options.splice(i, 1);
  }
  revertOption(opts: EdnsOption[]): void {
    const i = opts.findIndex((o) => o.code === this.code);
    if (i >= 0) opts.splice(i, 1);
  }
}

/** `revert` of an option the rule replaced: the request's original value put back. */
export class EdnsRestoreResponseRule implements ResponseRule {
  constructor(
    private readonly code: number,
    private readonly data: Buffer,
  ) {}
  record(msg: Message): void {
    const opt = optOf(msg);
    if (!opt?.options) return;
    const i = opt.options.findIndex((o) => o.code === this.code);
    if (i >= 0) opt.options[i] = packetOption(this.code, this.data);
  }
  revertOption(opts: EdnsOption[]): void {
    const i = opts.findIndex((o) => o.code === this.code);
    if (i >= 0) opts[i] = { code: this.code, data: this.data };
  }
}

/**
 * cname: a CNAME whose target the rule rewrites is replaced, with the records after it, by the
 * rewritten target and what the server answers for it. The lookup is done by the handler (it is
 * asynchronous); `record` only finds the first CNAME to act on.
 */
export class CnameResponseRule implements ResponseRule {
  constructor(readonly rule: CnameTarget) {}
  record(): void {
    // Applied by the handler's asynchronous pass (see RewriteHandler.applyCname).
  }
}
