/**
 * One resource record from its zone-file text (RFC 1035 §5.1), as miekg/dns `NewRR` reads it: the
 * origin is the root (relative names get `.` appended, `@` is the root), a missing TTL is 3600, a
 * missing class is IN, TTL and class may come in either order, `( … )` continues a record over
 * several lines, `;` starts a comment, and only the first record of the text counts.
 *
 * Small on purpose: it covers the record types a generated answer needs (the template plugin):
 * A, AAAA, CNAME, DNAME, NS, PTR, MX, SRV, TXT (and SPF), SOA and CAA. Any other type is an error
 * that names it (`RRTEXT_TYPES` lists the supported ones). It is not a zone-file reader: no
 * `$ORIGIN`/`$TTL`/`$INCLUDE`, no blank owner.
 *
 * The result is a dns-packet record (names without the trailing dot; src/dns/message.ts).
 */
import { isIP } from 'node:net';
import type { Record } from './message.js';
import { isDomainName, toPacketName } from './name.js';
import { packetClassName, qtypeName } from './constants.js';

/** Record types `parseRR` builds. */
export const RRTEXT_TYPES: readonly string[] = [
  'A',
  'AAAA',
  'CNAME',
  'DNAME',
  'NS',
  'PTR',
  'MX',
  'SRV',
  'TXT',
  'SPF',
  'SOA',
  'CAA',
];

export class RRTextError extends Error {}

interface Tok {
  text: string;
  /** Written in double quotes (TXT/CAA character strings). */
  quoted: boolean;
}

const DEFAULT_TTL = 3600;

/** Mnemonic → number, built once (the constants.ts lookups scan their tables on every call). */
const TYPE_BY_NAME: ReadonlyMap<string, number> = new Map(
  [...Array.from({ length: 300 }, (_, n) => n), 32768, 32769].flatMap((n) => {
    const name = qtypeName(n);
    return name.startsWith('TYPE') ? [] : [[name, n] as [string, number]];
  }),
);
const CLASS_BY_NAME: ReadonlyMap<string, number> = new Map([
  ['IN', 1],
  ['CS', 2],
  ['CH', 3],
  ['HS', 4],
  ['NONE', 254],
  ['ANY', 255],
]);

/** Split the first logical record into tokens (parentheses join lines; comments dropped). */
function tokenize(s: string): Tok[] {
  const out: Tok[] = [];
  let depth = 0;
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (c === '\n') {
      if (depth === 0) {
        if (out.length > 0) break;
        // miekg: text that begins with a blank line still reads the next line's record
      }
      i++;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r') {
      if (out.length === 0 && depth === 0 && (c === ' ' || c === '\t'))
        throw new RRTextError('owner name missing (line starts with blank)');
      i++;
      continue;
    }
    if (c === ';') {
      while (i < s.length && s[i] !== '\n') i++;
      continue;
    }
    if (c === '(') {
      depth++;
      i++;
      continue;
    }
    if (c === ')') {
      if (depth === 0) throw new RRTextError('extra closing brace');
      depth--;
      i++;
      continue;
    }
    if (c === '"') {
      let text = '';
      i++;
      let closed = false;
      while (i < s.length) {
        const d = s[i]!;
        if (d === '\\' && i + 1 < s.length) {
          text += d + s[i + 1]!;
          i += 2;
          continue;
        }
        if (d === '"') {
          closed = true;
          i++;
          break;
        }
        if (d === '\n' && depth === 0) break;
        text += d;
        i++;
      }
      if (!closed) throw new RRTextError('unbalanced quotes');
      out.push({ text, quoted: true });
      continue;
    }
    let text = '';
    while (i < s.length) {
      const d = s[i]!;
      if (d === '\\' && i + 1 < s.length) {
        text += d + s[i + 1]!;
        i += 2;
        continue;
      }
      if (d === ' ' || d === '\t' || d === '\n' || d === '\r' || d === ';' || d === '(' || d === ')' || d === '"')
        break;
      text += d;
      i++;
    }
    out.push({ text, quoted: false });
  }
  if (depth !== 0) throw new RRTextError('unbalanced parenthesis');
  return out;
}

/** miekg/dns stringToTTL: digits with optional s/m/h/d/w units. */
export function parseTTL(token: string): number | undefined {
  if (token === '') return undefined;
  let s = 0;
  let cur = 0;
  for (const c of token) {
    const lc = c.toLowerCase();
    if (c >= '0' && c <= '9') cur = cur * 10 + (c.charCodeAt(0) - 48);
    else if (lc === 's') {
      s += cur;
      cur = 0;
    } else if (lc === 'm') {
      s += cur * 60;
      cur = 0;
    } else if (lc === 'h') {
      s += cur * 3600;
      cur = 0;
    } else if (lc === 'd') {
      s += cur * 86400;
      cur = 0;
    } else if (lc === 'w') {
      s += cur * 604800;
      cur = 0;
    } else return undefined;
    if (s + cur > 0xffffffff) return undefined;
  }
  return s + cur;
}

/** A name token made absolute against the root origin; undefined when not a domain name. */
function absName(tok: Tok | undefined): string | undefined {
  if (!tok || tok.quoted || tok.text === '') return undefined;
  if (tok.text === '@') return '.';
  const n = tok.text.endsWith('.') && !tok.text.endsWith('\\.') ? tok.text : `${tok.text}.`;
  if (n !== '.' && (n.startsWith('.') || n.includes('..'))) return undefined;
  if (!isDomainName(n)) return undefined;
  return n;
}

function uint(tok: Tok | undefined, bits: 8 | 16 | 32, what: string, type: string): number {
  if (!tok || tok.quoted || !/^\d+$/.test(tok.text))
    throw new RRTextError(`bad ${type} ${what}: ${JSON.stringify(tok?.text ?? '')}`);
  const n = Number(tok.text);
  if (n > 2 ** bits - 1) throw new RRTextError(`bad ${type} ${what}: ${JSON.stringify(tok.text)}`);
  return n;
}

/** Decode `\X` and `\DDD` escapes of a character string into bytes. */
function charString(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length) {
      const d = text.slice(i + 1, i + 4);
      if (/^\d{3}$/.test(d)) {
        bytes.push(Number(d) & 0xff);
        i += 3;
      } else {
        for (const b of Buffer.from(text[i + 1]!, 'utf8')) bytes.push(b);
        i += 1;
      }
    } else {
      for (const b of Buffer.from(c, 'utf8')) bytes.push(b);
    }
  }
  return Buffer.from(bytes);
}

/** TXT strings: each token one string, split in 255-octet pieces (as miekg does). */
function txtStrings(toks: Tok[]): Buffer[] {
  const out: Buffer[] = [];
  for (const t of toks) {
    const b = charString(t.text);
    if (b.length === 0) out.push(b);
    for (let i = 0; i < b.length; i += 255) out.push(b.subarray(i, i + 255));
  }
  return out;
}

function needName(tok: Tok | undefined, type: string, what: string): string {
  const n = absName(tok);
  if (n === undefined) throw new RRTextError(`bad ${type} ${what}: ${JSON.stringify(tok?.text ?? '')}`);
  return toPacketName(n);
}

function ending(rest: Tok[], used: number, type: string): void {
  if (rest.length > used) throw new RRTextError(`garbage after ${type} rdata: ${JSON.stringify(rest[used]!.text)}`);
}

/**
 * Parse one record from `text`. Throws RRTextError (with a reason) when the text is no valid
 * record or uses a type outside `RRTEXT_TYPES`.
 */
export function parseRR(text: string): Record {
  const toks = tokenize(text);
  if (toks.length === 0) throw new RRTextError('no record in text');
  const owner = absName(toks[0]);
  if (owner === undefined) throw new RRTextError(`bad owner name: ${JSON.stringify(toks[0]!.text)}`);
  let ttl: number | undefined;
  let klass: number | undefined;
  let i = 1;
  let type: string | undefined;
  for (; i < toks.length && type === undefined; i++) {
    const t = toks[i]!;
    if (t.quoted) throw new RRTextError(`expecting RR type, TTL or class, not ${JSON.stringify(t.text)}`);
    const up = t.text.toUpperCase();
    // miekg/dns tries a type mnemonic first: `ANY` is the type, not the class.
    const asClass = klass === undefined && up !== 'ANY' ? CLASS_BY_NAME.get(up) : undefined;
    if (asClass !== undefined) {
      klass = asClass;
      continue;
    }
    if (ttl === undefined && /^\d/.test(t.text)) {
      const v = parseTTL(t.text);
      if (v === undefined) throw new RRTextError(`not a TTL: ${JSON.stringify(t.text)}`);
      ttl = v;
      continue;
    }
    if (/^TYPE\d+$/.test(up)) throw new RRTextError(`record type ${up} (RFC 3597 form) is not supported`);
    if (!TYPE_BY_NAME.has(up)) throw new RRTextError(`expecting RR type, TTL or class, not ${JSON.stringify(t.text)}`);
    type = up;
    if (!RRTEXT_TYPES.includes(up)) throw new RRTextError(`record type ${up} is not supported`);
  }
  if (type === undefined) throw new RRTextError('no record type');
  const rest = toks.slice(i);
  const base = { name: toPacketName(owner), ttl: ttl ?? DEFAULT_TTL, class: packetClassName(klass ?? 1) };
  switch (type) {
    case 'A': {
      const a = rest[0];
      if (!a || a.quoted || isIP(a.text) !== 4) throw new RRTextError(`bad A A: ${JSON.stringify(a?.text ?? '')}`);
      ending(rest, 1, type);
      return { ...base, type: 'A', data: canonicalV4(a.text) } as Record;
    }
    case 'AAAA': {
      const a = rest[0];
      if (!a || a.quoted || !a.text.includes(':') || isIP(a.text) !== 6)
        throw new RRTextError(`bad AAAA AAAA: ${JSON.stringify(a?.text ?? '')}`);
      ending(rest, 1, type);
      return { ...base, type: 'AAAA', data: a.text } as Record;
    }
    case 'CNAME':
    case 'DNAME':
    case 'NS':
    case 'PTR': {
      const n = needName(rest[0], type, type === 'PTR' ? 'Ptr' : type === 'NS' ? 'Ns' : 'Target');
      ending(rest, 1, type);
      return { ...base, type, data: n } as Record;
    }
    case 'MX': {
      const preference = uint(rest[0], 16, 'Pref', type);
      const exchange = needName(rest[1], type, 'Mx');
      ending(rest, 2, type);
      return { ...base, type: 'MX', data: { preference, exchange } } as Record;
    }
    case 'SRV': {
      const priority = uint(rest[0], 16, 'Priority', type);
      const weight = uint(rest[1], 16, 'Weight', type);
      const port = uint(rest[2], 16, 'Port', type);
      const target = needName(rest[3], type, 'Target');
      ending(rest, 4, type);
      return { ...base, type: 'SRV', data: { priority, weight, port, target } } as Record;
    }
    case 'TXT':
    case 'SPF': {
      if (rest.length === 0) throw new RRTextError(`bad ${type} Txt: no text`);
      return { ...base, type, data: txtStrings(rest) } as Record;
    }
    case 'SOA': {
      const mname = needName(rest[0], type, 'Ns');
      const rname = needName(rest[1], type, 'Mbox');
      const nums: number[] = [];
      for (let k = 0; k < 5; k++) {
        const t = rest[2 + k];
        if (!t || t.quoted) throw new RRTextError('bad SOA zone parameter');
        let v: number | undefined = /^\d+$/.test(t.text) && Number(t.text) <= 0xffffffff ? Number(t.text) : undefined;
        if (v === undefined && k > 0) v = parseTTL(t.text);
        if (v === undefined) throw new RRTextError(`bad SOA zone parameter: ${JSON.stringify(t.text)}`);
        nums.push(v);
      }
      ending(rest, 7, type);
      const [serial, refresh, retry, expire, minimum] = nums as [number, number, number, number, number];
      return { ...base, type: 'SOA', data: { mname, rname, serial, refresh, retry, expire, minimum } } as Record;
    }
    case 'CAA': {
      const flags = uint(rest[0], 8, 'Flag', type);
      const tag = rest[1];
      if (!tag || tag.quoted || !/^[A-Za-z0-9]+$/.test(tag.text)) throw new RRTextError('bad CAA Tag');
      const value = rest[2];
      if (!value || !value.quoted) throw new RRTextError('bad CAA Value');
      ending(rest, 3, type);
      return {
        ...base,
        type: 'CAA',
        data: {
          flags,
          tag: tag.text,
          value: charString(value.text).toString('latin1'),
          issuerCritical: (flags & 128) !== 0,
        },
      } as Record;
    }
  }
  throw new RRTextError(`record type ${type} is not supported`);
}

function canonicalV4(a: string): string {
  return a
    .split('.')
    .map((x) => String(Number(x)))
    .join('.');
}
