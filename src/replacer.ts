/**
 * CoreDNS 1.15.0's replacer (plugin/pkg/replacer): the `{placeholder}` templates of the *log*
 * plugin's format and *dnstap*'s `extra`, compiled once at setup into literal text and value
 * functions. Placeholders: `{type}`, `{name}`, `{class}`, `{proto}`, `{size}`, `{remote}`, `{port}`,
 * `{local}`, `{>id}`, `{>opcode}`, `{>do}`, `{>bufsize}`, the recorded ones `{rcode}`, `{rsize}`,
 * `{duration}`, `{>rflags}`, and metadata `{/label}`; anything else in braces is copied as it is.
 */
import { Flag, qclassName, qtypeName, rcodeName } from './dns/constants.js';
import type { Query } from './query.js';

/** What CoreDNS's response recorder (dnstest.Recorder) saw of the reply. */
export interface Recorded {
  /** RCODE of the reply (the returned one when the chain wrote nothing; `{rcode}` then renders `-`). */
  readonly rcode: number;
  /** Reply flags word, or -1 when no reply was written. */
  readonly flags: number;
  /** Reply size in bytes, or -1. */
  readonly size: number;
  /** Processing time in nanoseconds. */
  readonly durationNs: bigint;
}

/** The request a template is rendered for, and the recorder's view of its reply if there is one. */
export interface ReplacerState {
  readonly q: Query;
  /**
   * null where CoreDNS passes no recorder (dnstap's `Replace(ctx, state, nil, …)`): `{rcode}`,
   * `{rsize}`, `{duration}` and `{>rflags}` render `-`.
   */
  readonly recorded: Recorded | null;
}

/** CoreDNS's replacer.EmptyValue. */
export const EMPTY_VALUE = '-';

/** One placeholder's value for a state. */
export type Placeholder<S extends ReplacerState> = (s: S) => string;

/** Literal text or a placeholder, in template order. */
export type Segment<S extends ReplacerState> = string | Placeholder<S>;

/** A compiled template. */
export type Template<S extends ReplacerState = ReplacerState> = readonly Segment<S>[];

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

/** `{>rflags}`: the set flags joined by commas, `-` when there is no reply. */
export function formatFlags(flags: number): string {
  if (flags < 0) return EMPTY_VALUE;
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

/** RFC 3986 brackets around an IPv6 address (appendAddrToRFC3986). */
function bracket(ip: string): string {
  return ip.includes(':') ? `[${ip}]` : ip;
}

const PLACEHOLDERS: Readonly<Record<string, Placeholder<ReplacerState>>> = {
  type: (s) => qtypeName(s.q.qtype),
  name: (s) => s.q.lname,
  class: (s) => qclassName(s.q.qclass),
  proto: (s) => s.q.transport.proto,
  remote: (s) => bracket(s.q.transport.remoteAddress),
  local: (s) => bracket(s.q.transport.localAddress || '::'),
  port: (s) => String(s.q.transport.remotePort),
  size: (s) => String(s.q.raw.length),
  '>id': (s) => String(s.q.id),
  '>opcode': (s) => String(s.q.req.opcode),
  '>do': (s) => String(s.q.do),
  '>bufsize': (s) => String(s.q.bufsize),
  // No reply written by the chain (the server writes a bare one): `-`, as for `{>rflags}`.
  rcode: (s) => (s.recorded === null || s.recorded.flags < 0 ? EMPTY_VALUE : rcodeName(s.recorded.rcode)),
  '>rflags': (s) => (s.recorded === null ? EMPTY_VALUE : formatFlags(s.recorded.flags)),
  // A recorder that saw no write has length 0.
  rsize: (s) => (s.recorded === null ? EMPTY_VALUE : String(Math.max(0, s.recorded.size))),
  duration: (s) => (s.recorded === null ? EMPTY_VALUE : formatSeconds(s.recorded.durationNs)),
};

function metadata(label: string): Placeholder<ReplacerState> {
  // A label set to '' renders '' (CoreDNS calls the value function); an absent one renders `-`.
  return (s) => s.q.meta.get(label) ?? EMPTY_VALUE;
}

/**
 * Compile `text`. `own` adds placeholders of the caller (keys without braces, e.g. `/log/class`),
 * looked up before the standard ones. Unknown `{...}` are copied literally, as CoreDNS does.
 */
export function compileTemplate<S extends ReplacerState>(
  text: string,
  own: Readonly<Record<string, Placeholder<S>>> = {},
): Template<S> {
  const segments: Segment<S>[] = [];
  let lit = '';
  const re = /\{([^{}]+)\}/g;
  let last = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const key = m[1]!;
    const fn = own[key] ?? PLACEHOLDERS[key] ?? (key.startsWith('/') ? metadata(key.slice(1)) : undefined);
    if (!fn) continue;
    lit += text.slice(last, m.index);
    if (lit) segments.push(lit);
    lit = '';
    segments.push(fn);
    last = m.index + m[0].length;
  }
  lit += text.slice(last);
  if (lit) segments.push(lit);
  return segments;
}

/** The template's text when it has no placeholder (so it need not be rendered per query), else null. */
export function literalOf<S extends ReplacerState>(t: Template<S>): string | null {
  if (t.length === 0) return '';
  return t.length === 1 && typeof t[0] === 'string' ? t[0] : null;
}

export function renderTemplate<S extends ReplacerState>(t: Template<S>, s: S): string {
  let out = '';
  for (const seg of t) out += typeof seg === 'string' ? seg : seg(s);
  return out;
}
