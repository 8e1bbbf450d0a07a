/** Go's fmt for template output: `%v` of a value, Sprint, Sprintf with its verbs and flags, and html/js escaping. */
import { fmtFloatG } from '../../../src/util/gofloat.js';
import { GoObject, typeOf, type GoValue } from './values.js';

/** fmt.Sprint of one value (`%v`). */
export function fmtV(v: GoValue): string {
  if (v === undefined) return '<no value>';
  if (v === null) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return fmtFloatG(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (Array.isArray(v)) return `[${(v as GoValue[]).map(fmtInner).join(' ')}]`;
  if (v instanceof Map)
    return `map[${[...v.keys()]
      .sort()
      .map((k) => `${k}:${fmtInner(v.get(k))}`)
      .join(' ')}]`;
  if (v instanceof GoObject) {
    if (v.str) return v.str();
    throw new Error(`printing a value of type ${v.typeName} is not supported by clusterdns`);
  }
  return String(v);
}

function fmtInner(v: GoValue): string {
  return v === undefined || v === null ? '<nil>' : fmtV(v);
}

export function sprint(vals: GoValue[], p: (v: GoValue) => string): string {
  let out = '';
  for (let i = 0; i < vals.length; i++) {
    const isStr = typeof vals[i] === 'string';
    if (i > 0 && !isStr && typeof vals[i - 1] !== 'string') out += ' ';
    out += p(vals[i]);
  }
  return out;
}

export function htmlEscape(s: string): string {
  return s.replace(
    /[<>&'"\0]/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&#39;', '"': '&#34;', '\0': '\uFFFD' })[c]!,
  );
}

/** Go's template.JSEscapeString. */
export function jsEscape(s: string): string {
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    switch (ch) {
      case '\\':
        out += '\\\\';
        break;
      case "'":
        out += "\\'";
        break;
      case '"':
        out += '\\"';
        break;
      case '<':
        out += '\\u003C';
        break;
      case '>':
        out += '\\u003E';
        break;
      case '&':
        out += '\\u0026';
        break;
      case '=':
        out += '\\u003D';
        break;
      case '\n':
        out += '\\n';
        break;
      case '\r':
        out += '\\r';
        break;
      case '\t':
        out += '\\t';
        break;
      default:
        if (cp < 0x20) out += `\\u${cp.toString(16).toUpperCase().padStart(4, '0')}`;
        else out += ch;
    }
  }
  return out;
}

function pad(s: string, width: number | undefined, minus: boolean, zero: boolean): string {
  if (width === undefined || s.length >= width) return s;
  if (minus) return s + ' '.repeat(width - s.length);
  if (zero) {
    const sign = /^[+-]/.test(s) ? s[0]! : '';
    return sign + '0'.repeat(width - s.length) + s.slice(sign.length);
  }
  return ' '.repeat(width - s.length) + s;
}

function badVerb(verb: string, v: GoValue): string {
  return `%!${verb}(${v === undefined || v === null ? '<nil>' : `${typeOf(v)}=${fmtInner(v)}`})`;
}

/** fmt.Sprintf for the verbs templates use: v s q d x X o b c t e f g and %%, with flags/width/precision. */
export function sprintf(format: string, args: GoValue[], p: (v: GoValue) => string): string {
  let out = '';
  let ai = 0;
  for (let i = 0; i < format.length; i++) {
    const c = format[i]!;
    if (c !== '%') {
      out += c;
      continue;
    }
    let j = i + 1;
    let minus = false;
    let plus = false;
    let zero = false;
    let sharp = false;
    let space = false;
    for (; j < format.length && '+-# 0'.includes(format[j]!); j++) {
      const f = format[j]!;
      if (f === '-') minus = true;
      else if (f === '+') plus = true;
      else if (f === '0') zero = true;
      else if (f === '#') sharp = true;
      else space = true;
    }
    let width: number | undefined;
    let prec: number | undefined;
    const wm = /^\d+/.exec(format.slice(j));
    if (wm) {
      width = Number(wm[0]);
      j += wm[0].length;
    }
    if (format[j] === '.') {
      j++;
      const pm = /^\d*/.exec(format.slice(j))!;
      prec = pm[0] === '' ? 0 : Number(pm[0]);
      j += pm[0].length;
    }
    const verb = format[j];
    i = j;
    if (verb === undefined) {
      out += '%!(NOVERB)';
      break;
    }
    if (verb === '%') {
      out += '%';
      continue;
    }
    if (ai >= args.length) {
      out += `%!${verb}(MISSING)`;
      continue;
    }
    const v = args[ai++];
    let s: string;
    switch (verb) {
      case 'v':
        if (typeof v === 'bigint' || typeof v === 'number') s = numSign(p(v), plus, space);
        else s = p(v);
        if (sharp && typeof v === 'string') s = JSON.stringify(v);
        break;
      case 's':
        if (typeof v === 'string') s = prec !== undefined ? [...v].slice(0, prec).join('') : v;
        else if (
          Array.isArray(v) ||
          v instanceof Map ||
          v instanceof GoObject ||
          typeof v === 'boolean' ||
          v === undefined ||
          v === null
        )
          s = typeof v === 'boolean' ? badVerb(verb, v) : p(v);
        else s = badVerb(verb, v);
        break;
      case 'q':
        if (typeof v === 'string') s = sharp && !v.includes('`') ? `\`${v}\`` : goQuote(v);
        else if (typeof v === 'bigint') s = `'${String.fromCodePoint(Number(v))}'`;
        else s = badVerb(verb, v);
        break;
      case 'd':
        s = typeof v === 'bigint' ? numSign(v.toString(), plus, space) : badVerb(verb, v);
        break;
      case 'x':
      case 'X':
      case 'o':
      case 'O':
      case 'b': {
        const radix = verb === 'o' || verb === 'O' ? 8 : verb === 'b' ? 2 : 16;
        if (typeof v === 'bigint') {
          let body = (v < 0n ? -v : v).toString(radix);
          if (verb === 'X') body = body.toUpperCase();
          if (sharp && radix === 16) body = (verb === 'X' ? '0X' : '0x') + body;
          if (sharp && radix === 8 && body[0] !== '0') body = '0' + body;
          if (verb === 'O') body = '0o' + body;
          s = numSign((v < 0n ? '-' : '') + body, plus, space);
        } else if (typeof v === 'string' && radix === 16) {
          s = Buffer.from(v, 'utf8').toString('hex');
          if (verb === 'X') s = s.toUpperCase();
        } else s = badVerb(verb, v);
        break;
      }
      case 'c':
        s = typeof v === 'bigint' ? String.fromCodePoint(Number(v)) : badVerb(verb, v);
        break;
      case 't':
        s = typeof v === 'boolean' ? String(v) : badVerb(verb, v);
        break;
      case 'f':
      case 'F':
      case 'e':
      case 'g': {
        const f = typeof v === 'number' ? v : undefined;
        if (f === undefined) {
          s = badVerb(verb, v);
          break;
        }
        if (verb === 'e') s = f.toExponential(prec ?? 6).replace(/e([+-])(\d)$/, 'e$10$2');
        else if (verb === 'g') s = prec === undefined ? fmtFloatG(f) : String(Number(f.toPrecision(prec)));
        else s = f.toFixed(prec ?? 6);
        s = numSign(s, plus, space);
        break;
      }
      default:
        s = badVerb(verb, v);
    }
    out += pad(s, width, minus, zero && !minus && (typeof v === 'bigint' || typeof v === 'number'));
  }
  if (ai < args.length)
    out += `%!(EXTRA ${args
      .slice(ai)
      .map((v) => `${typeOf(v)}=${fmtInner(v)}`)
      .join(', ')})`;
  return out;
}

function numSign(s: string, plus: boolean, space: boolean): string {
  if (s.startsWith('-')) return s;
  if (plus) return '+' + s;
  if (space) return ' ' + s;
  return s;
}

function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + '"';
}
