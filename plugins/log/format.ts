/**
 * The log plugin's line format: `{placeholder}` substitution compiled once into segments
 * (docs/plugins.md, log). `{common}` and `{combined}` expand to CoreDNS's formats.
 */
import { Flag, qclassName, qtypeName, rcodeName } from '../../src/dns/constants.js';
import type { ReplyClass, ReplyType } from '../../src/dns/response.js';
import type { Query } from '../../src/query.js';

export const COMMON_FORMAT =
  '{remote}:{port} - {>id} "{type} {class} {name} {proto} {size} {>do} {>bufsize}" {rcode} {>rflags} {rsize} {duration}';
export const COMBINED_FORMAT = `${COMMON_FORMAT} "{>opcode}"`;

/** Facts about one finished query used to render a line. */
export interface LogEntry {
  readonly q: Query;
  /** RCODE of the reply (the returned one when the chain wrote nothing; `{rcode}` then renders `-`). */
  readonly rcode: number;
  /** Reply flags word, or -1 when there is no reply. */
  readonly flags: number;
  /** Reply size in bytes, or -1. */
  readonly size: number;
  /** Processing time in nanoseconds. */
  readonly durationNs: bigint;
  readonly klass: ReplyClass;
  readonly rtype: ReplyType;
}

type Segment = string | ((e: LogEntry) => string);

const FLAG_NAMES: [number, string][] = [
  [Flag.QR, 'qr'],
  [Flag.AA, 'aa'],
  [Flag.TC, 'tc'],
  [Flag.RD, 'rd'],
  [Flag.RA, 'ra'],
  [Flag.Z, 'z'],
  [Flag.AD, 'ad'],
  [Flag.CD, 'cd'],
];

export function formatFlags(flags: number): string {
  if (flags < 0) return '-';
  const out: string[] = [];
  for (const [bit, name] of FLAG_NAMES) if (flags & bit) out.push(name);
  return out.join(',');
}

/** Go's strconv.FormatFloat(seconds, 'f', -1, 64) + "s" for a nanosecond duration. */
export function formatSeconds(ns: bigint): string {
  const whole = ns / 1_000_000_000n;
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${whole}${frac ? `.${frac}` : ''}s`;
}

function bracket(ip: string): string {
  return ip.includes(':') ? `[${ip}]` : ip;
}

const PLACEHOLDERS: Record<string, (e: LogEntry) => string> = {
  type: (e) => qtypeName(e.q.qtype),
  name: (e) => e.q.lname,
  class: (e) => qclassName(e.q.qclass),
  proto: (e) => e.q.transport.proto,
  remote: (e) => bracket(e.q.transport.remoteAddress),
  local: (e) => bracket(e.q.transport.localAddress || '::'),
  port: (e) => String(e.q.transport.remotePort),
  size: (e) => String(e.q.raw.length),
  '>id': (e) => String(e.q.id),
  '>opcode': (e) => String(e.q.req.opcode),
  '>do': (e) => String(e.q.do),
  '>bufsize': (e) => String(e.q.bufsize),
  // No reply written by the chain (the server writes a bare one): `-`, as for `{>rflags}`.
  rcode: (e) => (e.flags < 0 ? '-' : rcodeName(e.rcode)),
  '>rflags': (e) => formatFlags(e.flags),
  rsize: (e) => String(e.size < 0 ? 0 : e.size),
  duration: (e) => formatSeconds(e.durationNs),
  '/log/class': (e) => e.klass,
  '/log/type': (e) => e.rtype,
};

/** Compile a format string into segments; unknown `{...}` are copied literally. */
export function compileFormat(format: string): Segment[] {
  const expanded = format.replaceAll('{common}', COMMON_FORMAT).replaceAll('{combined}', COMBINED_FORMAT);
  const segments: Segment[] = [];
  let lit = '';
  const re = /\{([^{}]+)\}/g;
  let last = 0;
  for (let m = re.exec(expanded); m; m = re.exec(expanded)) {
    const key = m[1]!;
    const fn = PLACEHOLDERS[key] ?? (key.startsWith('/') ? metadata(key.slice(1)) : undefined);
    if (!fn) continue;
    lit += expanded.slice(last, m.index);
    if (lit) segments.push(lit);
    lit = '';
    segments.push(fn);
    last = m.index + m[0].length;
  }
  lit += expanded.slice(last);
  if (lit) segments.push(lit);
  return segments;
}

function metadata(label: string): (e: LogEntry) => string {
  return (e) => e.q.meta.get(label) ?? '-';
}

export function render(segments: readonly Segment[], e: LogEntry): string {
  let s = '';
  for (const seg of segments) s += typeof seg === 'string' ? seg : seg(e);
  return s;
}
