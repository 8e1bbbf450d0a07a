/** The lexer of Go `text/template`: text and actions (trim markers, comments) and the tokens in an action. */
import { TemplateParseError } from './errors.js';

type TokKind =
  | 'field'
  | 'var'
  | 'ident'
  | 'string'
  | 'number'
  | 'char'
  | 'bool'
  | 'nil'
  | 'dot'
  | 'lparen'
  | 'rparen'
  | 'pipe'
  | 'declare'
  | 'assign'
  | 'comma';

export interface Tok {
  kind: TokKind;
  text: string;
  line: number;
  /** Constants: the text as written (Go's parse tree prints it back). */
  raw?: string;
  /** Directly after the previous token (`.A.B`, `$x.A`, `(…).A` chain; `.A .B` does not). */
  adjacent?: boolean;
}

export interface ActionSrc {
  kind: 'action';
  toks: Tok[];
  line: number;
}
export interface TextSrc {
  kind: 'text';
  text: string;
}

function isSpace(c: string | undefined): boolean {
  return c === ' ' || c === '\t' || c === '\r' || c === '\n';
}

function isAlnum(c: string | undefined): boolean {
  return c !== undefined && /[A-Za-z0-9_]/.test(c);
}

export function lex(name: string, src: string): (ActionSrc | TextSrc)[] {
  const out: (ActionSrc | TextSrc)[] = [];
  let i = 0;
  let line = 1;
  let trimNext = false;
  const err = (msg: string, l = line): TemplateParseError => new TemplateParseError(`template: ${name}:${l}: ${msg}`);
  while (i <= src.length) {
    let j = src.indexOf('{{', i);
    if (j < 0) j = src.length;
    let text = src.slice(i, j);
    if (trimNext) text = text.replace(/^[ \t\r\n]+/, '');
    trimNext = false;
    let start = j + 2;
    const leftTrim = j < src.length && src[j + 2] === '-' && isSpace(src[j + 3]);
    if (leftTrim) {
      text = text.replace(/[ \t\r\n]+$/, '');
      start = j + 3;
    }
    if (text !== '') out.push({ kind: 'text', text });
    line += (src.slice(i, j).match(/\n/g) ?? []).length;
    if (j >= src.length) break;
    const actionLine = line;
    // Comment: {{/* ... */}}
    let k = start;
    while (isSpace(src[k]) && leftTrim) k++;
    if (src.startsWith('/*', k)) {
      const end = src.indexOf('*/', k + 2);
      if (end < 0) throw err('unclosed comment');
      let after = end + 2;
      if (src[after] === ' ' && src.startsWith(' -}}', after)) {
        trimNext = true;
        after += 4;
      } else if (src.startsWith('}}', after)) after += 2;
      else throw err('comment ends before closing delimiter');
      line += (src.slice(j, after).match(/\n/g) ?? []).length;
      i = after;
      continue;
    }
    const toks: Tok[] = [];
    let p = start;
    let closed = false;
    while (p < src.length) {
      const c = src[p]!;
      if (isSpace(c)) {
        if (src.startsWith('-}}', p + 1) && (c === ' ' || c === '\t' || c === '\r' || c === '\n')) {
          trimNext = true;
          if (c === '\n') line++;
          p += 4;
          closed = true;
          break;
        }
        if (c === '\n') line++;
        p++;
        continue;
      }
      if (src.startsWith('}}', p)) {
        p += 2;
        closed = true;
        break;
      }
      const tl = line;
      if (c === '"') {
        let q = p + 1;
        while (q < src.length && src[q] !== '"') {
          if (src[q] === '\\') q++;
          if (src[q] === '\n') throw err('unterminated quoted string');
          q++;
        }
        if (q >= src.length) throw err('unterminated quoted string');
        toks.push({ kind: 'string', text: unquoteGo(src.slice(p, q + 1), err), line: tl, raw: src.slice(p, q + 1) });
        p = q + 1;
        continue;
      }
      if (c === '`') {
        const q = src.indexOf('`', p + 1);
        if (q < 0) throw err('unterminated raw quoted string');
        line += (src.slice(p, q).match(/\n/g) ?? []).length;
        toks.push({ kind: 'string', text: src.slice(p + 1, q), line: tl, raw: src.slice(p, q + 1) });
        p = q + 1;
        continue;
      }
      if (c === "'") {
        let q = p + 1;
        while (q < src.length && src[q] !== "'") {
          if (src[q] === '\\') q++;
          q++;
        }
        if (q >= src.length) throw err('unterminated character constant');
        const s = unquoteGo(`"${src.slice(p + 1, q)}"`, err);
        const cps = [...s];
        if (cps.length !== 1) throw err(`malformed character constant: ${src.slice(p, q + 1)}`);
        toks.push({ kind: 'char', text: String(cps[0]!.codePointAt(0)), line: tl, raw: src.slice(p, q + 1) });
        p = q + 1;
        continue;
      }
      if (c === '(') {
        toks.push({ kind: 'lparen', text: c, line: tl });
        p++;
        continue;
      }
      if (c === ')') {
        toks.push({ kind: 'rparen', text: c, line: tl });
        p++;
        continue;
      }
      if (c === '|') {
        toks.push({ kind: 'pipe', text: c, line: tl });
        p++;
        continue;
      }
      if (c === ',') {
        toks.push({ kind: 'comma', text: c, line: tl });
        p++;
        continue;
      }
      if (c === ':' && src[p + 1] === '=') {
        toks.push({ kind: 'declare', text: ':=', line: tl });
        p += 2;
        continue;
      }
      if (c === '=') {
        toks.push({ kind: 'assign', text: '=', line: tl });
        p++;
        continue;
      }
      if (c === '$') {
        let q = p + 1;
        while (isAlnum(src[q])) q++;
        toks.push({ kind: 'var', text: src.slice(p, q), line: tl });
        p = q;
        continue;
      }
      if (c === '.') {
        if (/[0-9]/.test(src[p + 1] ?? '')) {
          const m = /^\.[0-9_]+([eE][+-]?[0-9_]+)?/.exec(src.slice(p))!;
          toks.push({ kind: 'number', text: m[0], line: tl });
          p += m[0].length;
          continue;
        }
        let q = p + 1;
        while (isAlnum(src[q])) q++;
        const adjacent = p > start && !isSpace(src[p - 1]) && src[p - 1] !== '(' && src[p - 1] !== '|';
        if (q === p + 1) toks.push({ kind: 'dot', text: '.', line: tl });
        else toks.push({ kind: 'field', text: src.slice(p + 1, q), line: tl, adjacent });
        p = q;
        continue;
      }
      if (/[0-9+-]/.test(c)) {
        const m =
          /^[+-]?(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9_]*\.?[0-9_]+([eE][+-]?[0-9_]+)?|[0-9_]+\.?)/.exec(
            src.slice(p),
          );
        if (!m || m[0] === '' || m[0] === '+' || m[0] === '-')
          throw err(`bad number syntax: ${JSON.stringify(src.slice(p, p + 8))}`);
        if (isAlnum(src[p + m[0].length]))
          throw err(`bad number syntax: ${JSON.stringify(src.slice(p, p + m[0].length + 1))}`);
        toks.push({ kind: 'number', text: m[0], line: tl });
        p += m[0].length;
        continue;
      }
      if (/[A-Za-z_]/.test(c)) {
        let q = p;
        while (isAlnum(src[q])) q++;
        const w = src.slice(p, q);
        toks.push({ kind: w === 'true' || w === 'false' ? 'bool' : w === 'nil' ? 'nil' : 'ident', text: w, line: tl });
        p = q;
        continue;
      }
      throw err(`unexpected ${JSON.stringify(c)} in command`);
    }
    if (!closed) throw err('unclosed action', actionLine);
    out.push({ kind: 'action', toks, line: actionLine });
    i = p;
  }
  return out;
}

function unquoteGo(q: string, err: (m: string) => Error): string {
  const body = q.slice(1, -1);
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const n = body[++i];
    switch (n) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'a':
        out += '\x07';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '\\':
        out += '\\';
        break;
      case '"':
        out += '"';
        break;
      case "'":
        out += "'";
        break;
      case 'x':
        out += String.fromCharCode(parseInt(body.slice(i + 1, i + 3), 16));
        i += 2;
        break;
      case 'u':
        out += String.fromCodePoint(parseInt(body.slice(i + 1, i + 5), 16));
        i += 4;
        break;
      case 'U':
        out += String.fromCodePoint(parseInt(body.slice(i + 1, i + 9), 16));
        i += 8;
        break;
      default:
        if (n !== undefined && /[0-7]/.test(n)) {
          out += String.fromCharCode(parseInt(body.slice(i, i + 3), 8));
          i += 2;
          break;
        }
        throw err(`invalid syntax in quoted string ${q}`);
    }
  }
  return out;
}
